"""The gates both parts share: failing one zeroes the part (no attention computed, the built-in
attention used, the grading rules broken)."""
from __future__ import annotations

from grader.checks import Context, Outcome, check, failed, passed
from grader.rules import INSTEAD, for_part


def nan_mistakes(ctx: Context) -> list[str]:
    """What names a NaN result: a product with an infinity the text shows (`mask * float('-inf')`), else nothing."""
    return ["mask-nan"] if "mask-nan" in ctx.static else []


def attention_verdict(evidence: list[dict], nan: list[str] = ()) -> Outcome:
    """Each entry, for one input shape: {"label", "ran", "q", "k", "mixes"} (the output or weights
    changed with Q / with K / at other positions when V changed at one). Property points need runs
    whose output follows the queries or the keys and mixes V across positions: identity, uniform or zero
    weights and a projection of V alone all fail; a wrong but real attention (unscaled, wrong softmax dim,
    scores from one input read twice: `Q @ Q.mT`, `self.wq(k)`) passes, and its values check names the slip."""
    ran = [e for e in evidence if e["ran"]]
    if not ran:  # the first failure says why, and names its mistake
        first = evidence[0]["problem"]
        raised = first.cause.startswith("error:")
        first.zh = (f"代码在每个测试输入上都{'报错' if raised else '没有正常返回结果'}，评分无法检查注意力本身，"
                    "所以本部分暂记 0 分；修好下面这一处即可。") + first.zh
        first.en = (f"The code {'raised' if raised else 'returned no usable result'} on every test input, so the grader "
                    "could not check the attention itself: this part scores 0 for now; fixing what follows is enough. "
                    ) + first.en
        return first
    for e in ran:
        missing_zh = [t for t, ok in (("结果既不随 Q 也不随 K 变化", e["q"] or e["k"]),
                                      ("各位置的输出没有混合其他位置的 V", e["mixes"])) if not ok]
        missing_en = [t for t, ok in (("the result changes with neither Q nor K", e["q"] or e["k"]),
                                      ("no position's output mixes in V from other positions", e["mixes"])) if not ok]
        if missing_en and not e.get("finite", True):  # NaN follows nothing and mixes nothing: it hides the rest
            return failed(f"{e['label']}：输出含 NaN 或 inf（参考结果处处有限），看不出是否在计算注意力，本部分记 0 分。",
                          f"{e['label']}: the output holds NaN or inf where the reference is finite, so whether it "
                          "computes attention cannot be seen: this part scores 0.", list(nan))
        if missing_en:
            return failed(f"{e['label']}：{'；'.join(missing_zh)}。这不是注意力，本部分记 0 分。",
                          f"{e['label']}: {'; '.join(missing_en)}. That is not attention: this part scores 0.",
                          ["no-attention"])
    one_sided = next((e for e in ran if not (e["q"] and e["k"])), None)
    if one_sided:  # attention over one input read twice: real attention with a slip the values check names
        unused = "Q" if not one_sided["q"] else "K"
        return passed(f"输出对各位置的 V 加权混合，确实在计算注意力；但在 {one_sided['label']} 时结果不随 {unused} 变化："
                      f"分数或某个投影读错了输入（见 values 检查）。",
                      f"The output mixes V across positions, so it computes attention; but with {one_sided['label']} the "
                      f"result does not change with {unused}: the scores or a projection read the wrong input "
                      f"(see the values check).")
    return passed("输出随 Q、K 变化，并对各位置的 V 加权混合：确实在计算注意力。",
                  "The output changes with Q and K and mixes V across positions: it computes attention.")


def forbidden_api_gate(ctx: Context, part: str) -> Outcome:
    """The built-in attention seen at run time during this part's probes (a wrapped function was
    called, or its aten operator was dispatched): the part scores 0."""
    used = sorted(ctx.student.forbidden_by_probe.get(part, set()))
    if used:
        return failed(f"运行时检测到调用了 {', '.join(used)}：本部分记 0 分。",
                      f"Detected at run time: {', '.join(used)}. This part scores 0.", ["forbidden-api"])
    return passed()


def rules_gate(ctx: Context, part: str) -> Outcome:
    """The grading rules (grader/rules/), read in the text before anything ran, and tampering the worker
    saw while this part's probes ran: either zeroes the part, quoting what was seen."""
    broken = for_part(ctx.violations, part)
    seen = sorted(ctx.student.tampering_by_part.get(part, set()))
    refused = sorted(ctx.student.refused_by_part.get(part, set()))
    if not broken and not seen and not refused:
        return passed()
    places = [ctx.student.submission.locate({"line": v.line, "text": v.text, "function": "<module>"}) for v in broken]
    zh = [v.describe("zh", p) for v, p in zip(broken[:6], places)]
    en = [v.describe("en", p) for v, p in zip(broken[:6], places)]
    zh += [f"运行时检测到：{', '.join(seen)}。"] if seen else []
    en += [f"Seen at run time: {', '.join(seen)}."] if seen else []
    zh += [f"运行时被拒绝：{item}。应改为：{INSTEAD[item.split(':')[0]][0]}" for item in refused[:6]]
    en += [f"Refused at run time: {item}. Instead, {INSTEAD[item.split(':')[0]][1]}" for item in refused[:6]]
    mistakes = [v.mistake for v in broken] + (["tampering"] if seen else []) + [item.split(":")[0] for item in refused]
    where = places[0] if places else None
    return failed("本部分的代码违反了评分规则，记 0 分：\n" + "\n".join(zh),
                  "This part's code breaks the grading rules and scores 0:\n" + "\n".join(en), mistakes, where)


def register(part: str, title_zh: str, title_en: str) -> None:
    """`<part>.own_implementation` (titled `title_zh`, `title_en`: the built-in attention the part could reach for) and
    `<part>.rules`, the two 0-point gates of every part, registered as its checks."""
    check(f"{part}.own_implementation", part=part, points=0, visibility="hidden", gate=True, title_zh=title_zh,
          title_en=title_en)(lambda ctx: forbidden_api_gate(ctx, part))
    check(f"{part}.rules", part=part, points=0, visibility="hidden", gate=True, title_zh="遵守评分规则（不篡改环境、不用私有接口）",
          title_en="keeps to the grading rules (no tampering, no private interfaces)")(lambda ctx: rules_gate(ctx, part))
