"""Part 1 checks: scaled_dot_product_attention(Q, K, V, is_causal=True) -> (out, weights)."""
from __future__ import annotations

import torch

from grader import diagnosis, reference
from grader.checks import (Context, Outcome, attention_verdict, changed, check, dtype_handling_advice, failed,
                           failed_with_error, forbidden_api_gate, is_dtype_handling, loop_verdict, passed,
                           resource_failure, rules_gate)
from grader.sandbox.requests import Probe, SdpaRequest

# Tolerances against the float64 reference, per input dtype. float32: unit roundoff 6e-8, a
# d_k-term dot product, a softmax and a T-term average of O(1) values stay far below 1e-5;
# float16 (roundoff 4.9e-4) and bfloat16 (3.9e-3) get about twenty roundoffs of headroom.
TOLERANCE = {torch.float32: (1e-5, 1e-4), torch.float64: (1e-10, 1e-8), torch.float16: (1e-2, 1e-2),
             torch.bfloat16: (8e-2, 8e-2)}
# The module chains four projections around the attention: twice the headroom.
MODULE_TOLERANCE = {**TOLERANCE, torch.float16: (2e-2, 2e-2), torch.bfloat16: (1.6e-1, 1.6e-1)}
# (batch dims, T, d_k, d_v): extra batch dims, T = 1, long T, d_k != d_v, heads != positions,
# a width that is not a power of two.
SHAPES = [((2, 3), 5, 8, 8), ((4,), 1, 4, 4), ((2, 2, 3), 4, 6, 10), ((1, 2), 128, 16, 16), ((3,), 7, 12, 5)]


def qkv(ctx: Context, batch, T, d_k, d_v, seed: int, scale: float = 1.0, dtype=torch.float32):
    g = ctx.generator(seed)
    Q = (torch.randn(*batch, T, d_k, generator=g) * scale).to(dtype)
    K = (torch.randn(*batch, T, d_k, generator=g) * scale).to(dtype)
    V = torch.randn(*batch, T, d_v, generator=g).to(dtype)
    return Q, K, V


def tensor(answer: dict, key: str) -> torch.Tensor | None:
    item = answer.get(key) or {}
    return item.get("value") if item.get("kind") == "tensor" else None


def structure_problem(answer: dict, out_shape, weights_shape) -> Outcome | None:
    """Part 1 must return the tuple (out, weights) with the documented shapes."""
    shape = answer.get("structure", {})
    if shape.get("length") != 2 or shape.get("kind") not in ("tuple", "list"):
        got = shape.get("kind") if shape.get("length") is None else f"{shape.get('kind')} of length {shape.get('length')}"
        return failed(f"应返回二元组 (out, weights)，实际返回了 {got}。",
                      f"Expected the tuple (out, weights), got {got}.", ["wrong-return"])
    for key, expected in (("out", out_shape), ("weights", weights_shape)):
        item = answer.get(key, {})
        if item.get("kind") != "tensor":
            return failed(f"{key} 应是张量，实际是 {item.get('kind')}。", f"{key} should be a tensor, got {item.get('kind')}.",
                          ["wrong-return"])
        if tuple(item["shape"]) != tuple(expected):
            return failed(f"{key} 的形状应为 {tuple(expected)}，实际为 {tuple(item['shape'])}。",
                          f"{key} should have shape {tuple(expected)}, got {tuple(item['shape'])}.", ["wrong-return"])
    return None


def call(ctx: Context, Q, K, V, is_causal=None, **options) -> tuple[dict, Outcome | None]:
    """Run the student's function and apply the structural checks every check relies on."""
    answer = ctx.student.call(Probe.SDPA, SdpaRequest(Q=Q, K=K, V=V, is_causal=is_causal, **options))
    if "error" in answer:
        return answer, failed_with_error(ctx, answer["error"], "调用 scaled_dot_product_attention",
                                         "calling scaled_dot_product_attention")
    T = Q.shape[-2]
    return answer, structure_problem(answer, (*Q.shape[:-1], V.shape[-1]), (*Q.shape[:-2], T, T))


def diagnose_numbers(answer: dict, Q, K, V, is_causal: bool, static: dict) -> list[str]:
    """Which catalogued mistake reproduces the student's weights (or output)."""
    weights, out = tensor(answer, "weights"), tensor(answer, "out")
    variants_w, variants_o = {}, {}
    for variant in reference.SDPA_VARIANTS:
        if not is_causal and variant.startswith("mask"):
            continue
        variants_o[variant], variants_w[variant] = reference.attention(Q, K, V, is_causal, variant)
    found = diagnosis.matching_variant(weights, variants_w) if weights is not None else None
    found = found or (diagnosis.matching_variant(out, variants_o) if out is not None else None)
    found = reference.MISTAKE_OF.get(found, found)
    if found == "mask-missing" and "is-causal-typo" in static:
        return ["is-causal-typo"]
    return [found] if found else []


def weights_figure(answer: dict, Q, K, V, is_causal: bool) -> dict | None:
    """The first head's attention matrix, the student's beside the expected one, for feedback."""
    weights = tensor(answer, "weights")
    if weights is None or weights.dim() < 2:
        return None
    first = (0,) * (weights.dim() - 2)
    _, expected = reference.attention(Q, K, V, is_causal)
    return {"student": weights[first].double().tolist(), "expected": expected[first].tolist()}


def with_figure(outcome: Outcome, answer: dict, Q, K, V, is_causal: bool) -> Outcome:
    if any(m.startswith("mask") or m in ("softmax-dim", "is-causal-typo") for m in outcome.mistakes):
        outcome.figure = weights_figure(answer, Q, K, V, is_causal)
    return outcome


def compare_gradients(names: list[str], actual: list[dict | None], expected, tolerance) -> Outcome | None:
    """Student gradients against the reference's: a missing or all-zero one means a cut graph."""
    for name, got, wanted in zip(names, actual, expected):
        if got is None or (float(got["value"].abs().max()) == 0 and float(wanted.abs().max()) > 0):
            return failed(f"梯度没有传到 {name}：计算图被切断了。", f"No gradient reaches {name}: the graph is cut.",
                          ["broken-grad"])
        if not diagnosis.close(got["value"], wanted, *tolerance):
            error, index = where_largest(got["value"], wanted)
            return failed(f"对 {name} 的梯度与参考不符，最大误差 {error:.3g}（位置 {index}）。",
                          f"The gradient for {name} differs from the reference, max error {error:.3g} at {index}.")
    return None


def where_largest(actual: torch.Tensor, expected: torch.Tensor) -> tuple[float, tuple]:
    difference = torch.nan_to_num((actual.double() - expected.double()).abs(), nan=float("inf"))
    index = tuple(int(i) for i in torch.unravel_index(difference.argmax(), difference.shape))
    return float(difference.max()), index


def compare(ctx: Context, answer: dict, Q, K, V, is_causal: bool, label_zh: str, label_en: str) -> Outcome | None:
    """out and weights against the float64 reference at the input dtype's tolerance."""
    atol, rtol = TOLERANCE[Q.dtype]
    expected_out, expected_w = reference.attention(Q, K, V, is_causal)
    for key, expected in (("weights", expected_w), ("out", expected_out)):
        actual = tensor(answer, key)
        if not diagnosis.close(actual, expected, atol, rtol):
            error, index = where_largest(actual, expected)
            return with_figure(failed(
                f"{label_zh}：{key} 与参考实现不符，最大误差 {error:.3g}（位置 {index}，容差 atol={atol:g}, rtol={rtol:g}）。",
                f"{label_en}: {key} differs from the reference, max error {error:.3g} at {index} "
                f"(tolerance atol={atol:g}, rtol={rtol:g}).",
                diagnose_numbers(answer, Q, K, V, is_causal, ctx.static)), answer, Q, K, V, is_causal)
    return None


def perturbed(x: torch.Tensor, g: torch.Generator, row: int | None = None) -> torch.Tensor:
    """x with every position (or one) replaced by fresh values."""
    y = x.clone()
    index = (..., slice(None) if row is None else slice(row, row + 1), slice(None))
    y[index] = torch.randn(y[index].shape, generator=g).to(x.dtype)
    return y


# (batch dims, T, d_k, d_v, is_causal): the default, and non-causal, which the shape check also calls
EVIDENCE = [((2, 3), 5, 8, 8, None), ((2, 3), 5, 8, 8, False), ((1, 2), 9, 16, 16, None)]


@check("sdpa.computes_attention", part="sdpa", points=0, visibility="hidden", gate=True,
       title_zh="确实在计算注意力（权重随 Q、K 变化，输出混合各位置）",
       title_en="it computes attention (weights follow Q and K, outputs mix positions)")
def computes_attention(ctx: Context) -> Outcome:
    evidence = []
    for seed, (batch, T, d_k, d_v, is_causal) in enumerate(EVIDENCE, start=90):
        Q, K, V = qkv(ctx, batch, T, d_k, d_v, seed)
        g = ctx.generator(seed + 100)
        variants = [(Q, K, V), (perturbed(Q, g), K, V), (Q, perturbed(K, g), V),
                    (Q, K, perturbed(V, g, 0)), (Q, K, perturbed(V, g, T - 1))]
        label = f"Q{tuple(Q.shape)}, is_causal={is_causal}"
        results = []
        for q, k, v in variants:
            answer, problem = call(ctx, q, k, v, is_causal)
            if problem:  # one failed run is enough: a crashing or memory-hungry part must not eat the budget
                break
            results.append((tensor(answer, "out"), tensor(answer, "weights")))
        if problem:
            evidence.append({"label": label, "ran": False, "problem": problem})
            if resource_failure(problem):  # no other shape will do better, and each try costs seconds
                break
            continue
        (out, weights), (out_q, weights_q), (out_k, weights_k), (out_v0, _), (out_vl, _) = results
        mixes = changed(out[..., 1:, :], out_v0[..., 1:, :]) or changed(out[..., :-1, :], out_vl[..., :-1, :])
        evidence.append({"label": label, "ran": True, "q": changed(weights, weights_q) and changed(out, out_q),
                         "k": changed(weights, weights_k) and changed(out, out_k), "mixes": mixes})
    return attention_verdict(evidence)


@check("sdpa.shapes", part="sdpa", points=2, visibility="public",
       title_zh="返回 (out, weights) 且形状正确", title_en="returns (out, weights) with the right shapes")
def shapes(ctx: Context) -> Outcome:
    for seed, (batch, T, d_k, d_v) in enumerate(SHAPES):
        Q, K, V = qkv(ctx, batch, T, d_k, d_v, seed)
        for is_causal in (None, False):
            _, problem = call(ctx, Q, K, V, is_causal)
            if problem:
                problem.zh = f"输入 Q{tuple(Q.shape)}、V{tuple(V.shape)}：" + problem.zh
                problem.en = f"Inputs Q{tuple(Q.shape)}, V{tuple(V.shape)}: " + problem.en
                return problem
    return passed("所有形状（含额外 batch 维、T=1、长序列、d_k≠d_v）都正确。",
                  "All shapes right (extra batch dims, T = 1, long T, d_k != d_v).")


@check("sdpa.causal_zeros", part="sdpa", points=2, visibility="public",
       title_zh="因果遮罩：未来位置权重恰为 0，每行和为 1", title_en="causal mask: future weights exactly 0, rows sum to 1")
def causal_zeros(ctx: Context) -> Outcome:
    cases = [((2, 3), 6, 8, 8, 1.0), ((1,), 1, 4, 4, 1.0), ((2,), 9, 16, 16, 10.0), ((1, 2), 33, 8, 8, 1.0)]
    for seed, (batch, T, d_k, d_v, scale) in enumerate(cases, start=10):
        Q, K, V = qkv(ctx, batch, T, d_k, d_v, seed, scale)
        answer, problem = call(ctx, Q, K, V)  # the default must be causal
        if problem:
            return problem
        weights, out = tensor(answer, "weights"), tensor(answer, "out")
        mistakes = lambda: diagnose_numbers(answer, Q, K, V, True, ctx.static)  # noqa: E731
        figure = lambda outcome: with_figure(outcome, answer, Q, K, V, True)  # noqa: E731
        if torch.isnan(weights).any() or torch.isnan(out).any():
            row = int(torch.isnan(weights).any(-1).nonzero()[0, -1]) if torch.isnan(weights).any() else -1
            return figure(failed(f"T={T}：结果含 NaN（第一处在第 {row} 行）。",
                                 f"T={T}: the result contains NaN (first in row {row}).", mistakes()))
        future = reference.causal_future(T).expand_as(weights)
        leaked = weights[future]
        if (leaked != 0).any():
            count = int((leaked != 0).sum())
            return figure(failed(
                f"T={T}：对角线以上有 {count} 个权重不为 0（最大 {float(leaked.abs().max()):.3g}），未来信息泄露。",
                f"T={T}: {count} weights above the diagonal are not exactly 0 (max {float(leaked.abs().max()):.3g}): "
                "the future leaks.", mistakes() or ["mask-missing"]))
        row_sums = weights.double().sum(-1)
        if not torch.allclose(row_sums, torch.ones_like(row_sums), atol=1e-5):
            worst = float((row_sums - 1).abs().max())
            return figure(failed(f"T={T}：权重每行之和应为 1，最大偏差 {worst:.3g}。",
                                 f"T={T}: each row of weights must sum to 1; worst deviation {worst:.3g}.", mistakes()))
    return passed("未来位置的权重恰为 0，每行和为 1，没有 NaN。", "Future weights are exactly 0, rows sum to 1, no NaN.")


@check("sdpa.values", part="sdpa", points=2, visibility="hidden",
       title_zh="数值与 float64 参考一致", title_en="values match a float64 reference")
def values(ctx: Context) -> Outcome:
    cases = [((2, 3), 6, 8, 8, True, False), ((2, 3), 6, 8, 8, False, False), ((3,), 7, 12, 5, True, True),
             ((2, 4), 5, 24, 24, True, False), ((1,), 16, 64, 64, False, True)]
    for seed, (batch, T, d_k, d_v, is_causal, transposed) in enumerate(cases, start=20):
        Q, K, V = qkv(ctx, batch, T, d_k, d_v, seed)
        answer, problem = call(ctx, Q, K, V, is_causal, transpose_inputs=transposed)
        label = (f"T={T}, d_k={d_k}, is_causal={is_causal}" + (", 非连续输入" if transposed else ""),
                 f"T={T}, d_k={d_k}, is_causal={is_causal}" + (", non-contiguous inputs" if transposed else ""))
        problem = problem or compare(ctx, answer, Q, K, V, is_causal, *label)
        if problem:
            return problem
    return passed("因果与非因果、非连续输入、d_k 不是 2 的幂：全部与参考一致。",
                  "Causal and not, non-contiguous inputs, d_k not a power of two: all match the reference.")


@check("sdpa.low_precision", part="sdpa", points=1, visibility="hidden",
       title_zh="float16 / bfloat16 输入", title_en="float16 / bfloat16 inputs")
def low_precision(ctx: Context) -> Outcome:
    notes = []
    for seed, dtype in enumerate((torch.float16, torch.bfloat16), start=30):
        name = str(dtype).replace("torch.", "")
        Q, K, V = qkv(ctx, (2, 2), 6, 16, 16, seed, dtype=dtype)
        answer, problem = call(ctx, Q, K, V, True)
        advice = dtype_handling_advice(ctx, answer["error"], name) if "error" in answer else None
        if advice:
            notes.append(advice)
            continue
        # the reference starts from the same rounded inputs, so only the student's arithmetic differs
        problem = problem or compare(ctx, answer, Q, K, V, True, name, name)
        if problem:
            return problem
    return low_precision_passed(notes)


def low_precision_passed(notes: list[tuple[str, str, list[str]]]) -> Outcome:
    if not notes:
        return passed("float16 与 bfloat16 输入的结果都在容差之内。", "float16 and bfloat16 results are within tolerance.")
    outcome = passed(" ".join(n[0] for n in notes), " ".join(n[1] for n in notes))
    outcome.advice = sorted({m for n in notes for m in n[2]})
    return outcome


@check("sdpa.no_future_leak", part="sdpa", points=1, visibility="hidden",
       title_zh="改变未来位置不影响过去的输出，梯度也不回传到未来",
       title_en="changing the future leaves earlier outputs unchanged; no gradient flows to the future")
def no_future_leak(ctx: Context) -> Outcome:
    T, cut = 8, 3
    Q, K, V = qkv(ctx, (2, 2), T, 8, 8, 40)
    g = ctx.generator(41)
    Q2, K2, V2 = (x.clone() for x in (Q, K, V))
    for x in (Q2, K2, V2):
        x[..., cut:, :] = torch.randn(x[..., cut:, :].shape, generator=g) * 5
    first, problem = call(ctx, Q, K, V, True)
    second, problem2 = call(ctx, Q2, K2, V2, True)
    if problem or problem2:
        return problem or problem2
    a, b = tensor(first, "out")[..., :cut, :], tensor(second, "out")[..., :cut, :]
    if not torch.equal(a, b):
        change = float(torch.nan_to_num((a - b).abs(), nan=float("inf")).max())
        return failed(f"只改变了位置 ≥{cut} 的输入，位置 <{cut} 的输出却变了（最大变化 {change:.3g}）。",
                      f"Only positions >= {cut} changed, yet outputs before {cut} changed (max change {change:.3g}).",
                      diagnose_numbers(first, Q, K, V, True, ctx.static) or ["mask-missing"])
    cotangent = torch.zeros(*Q.shape[:-1], V.shape[-1])
    cotangent[..., :cut, :] = torch.randn(cotangent[..., :cut, :].shape, generator=g)
    answer, problem = call(ctx, Q, K, V, True, grad=True, cotangent=cotangent)
    if problem:
        return problem
    grads = answer.get("grads")
    if not grads or any(gr is None for gr in grads[1:]):
        return failed("输出没有连到 K、V 的梯度。", "The output has no gradient path to K and V.", ["broken-grad"])
    for name, gr in zip("KV", grads[1:]):
        future_grad = gr["value"][..., cut:, :]
        if (future_grad != 0).any():
            return failed(f"过去位置的输出对未来的 {name} 有非零梯度（最大 {float(future_grad.abs().max()):.3g}）。",
                          f"Earlier outputs have a non-zero gradient with respect to future {name} "
                          f"(max {float(future_grad.abs().max()):.3g}).", ["mask-missing"])
    return passed("改变未来位置时过去的输出逐位不变，对未来的梯度恰为 0。",
                  "Earlier outputs are bit-for-bit unchanged and their gradient to the future is exactly 0.")


@check("sdpa.gradients", part="sdpa", points=1, visibility="hidden",
       title_zh="梯度正确（float64 gradcheck 与参考梯度）", title_en="gradients are right (float64 gradcheck and reference)")
def gradients(ctx: Context) -> Outcome:
    for seed, is_causal in ((50, True), (51, False)):
        Q, K, V = (x.double() for x in qkv(ctx, (2,), 5, 4, 3, seed))
        cotangent = torch.randn(2, 5, 3, generator=ctx.generator(seed + 100), dtype=torch.float64)
        answer, problem = call(ctx, Q, K, V, is_causal, grad=True, cotangent=cotangent, gradcheck=True)
        tolerance = (1e-5, 1e-4)
        if problem and is_dtype_handling(answer.get("error")):
            # float64 is the grader's choice, not the exercise's: code written for float32 (a float32
            # mask, a .float() softmax) is checked in float32, without gradcheck, which needs float64
            Q, K, V, cotangent = (x.float() for x in (Q, K, V, cotangent))
            answer, problem = call(ctx, Q, K, V, is_causal, grad=True, cotangent=cotangent)
            tolerance = (1e-4, 1e-3)
        if problem:
            return problem
        grads = answer.get("grads")
        if not grads or any(g is None for g in grads):
            missing = "全部" if not grads else ", ".join(n for n, g in zip("QKV", grads) if g is None)
            return failed(f"梯度没有传到 {missing}：计算图被切断了。", f"No gradient reaches {missing}: the graph is cut.",
                          ["broken-grad"])
        leaves = [x.clone().requires_grad_(True) for x in (Q, K, V)]
        out, _ = reference.attention(*leaves, is_causal)
        expected = torch.autograd.grad(out, leaves, cotangent.to(out.dtype))
        problem = compare_gradients(list("QKV"), grads, expected, tolerance)
        if problem:
            return problem
        gradcheck = answer.get("gradcheck", {"passed": True})  # absent: the float32 fallback above
        if not gradcheck.get("passed"):
            detail = (gradcheck.get("error") or {}).get("message", "")[:300]
            return failed(f"gradcheck 未通过：{detail}", f"gradcheck failed: {detail}",
                          diagnosis.from_error(gradcheck.get("error") or {}, ctx.static))
    return passed("Q、K、V 的梯度与参考一致，gradcheck 通过。", "Gradients for Q, K, V match the reference; gradcheck passes.")


@check("sdpa.device", part="sdpa", points=0.5, visibility="hidden",
       title_zh="在 GPU 上也能运行（遮罩跟随输入的设备）", title_en="runs on the GPU (the mask follows the input's device)")
def device(ctx: Context) -> Outcome:
    Q, K, V = qkv(ctx, (2, 2), 6, 8, 8, 60)
    answer, problem = call(ctx, Q, K, V, True)  # devices only matter once it is right on the CPU
    problem = problem or compare(ctx, answer, Q, K, V, True, "CPU", "CPU")
    if problem:
        return problem
    notes_zh, notes_en = [], []
    for where in (["cuda"] if ctx.cuda else []) + ["meta"]:
        answer = ctx.student.call(Probe.SDPA, SdpaRequest(Q=Q, K=K, V=V, is_causal=True, device=where))
        error = answer.get("error")
        if error and (diagnosis.is_device_mismatch(error, ctx.static) or diagnosis.NO_CUDA.search(error.get("message", ""))
                      and where == "cuda"):
            return failed_with_error(ctx, error, f"在 {where} 设备上运行", f"running on device {where}",
                                     extra=(diagnosis.device_mistake(ctx.static),))
        if error:  # anything but a device mismatch says nothing about devices: inconclusive, never a failure
            notes_zh.append(f"{where} 上的检查无定论（{error['type']}）")
            notes_en.append(f"inconclusive on {where} ({error['type']})")
            continue
        out = answer.get("out", {})
        wanted = where
        if out.get("device") != wanted:
            return failed(f"输入在 {wanted} 上，输出却在 {out.get('device')} 上。",
                          f"Inputs on {wanted}, but the output is on {out.get('device')}.", ["hardcoded-device"])
        if where == "cuda":
            problem = compare(ctx, answer, Q, K, V, True, "CUDA", "CUDA")
            if problem:
                return problem
    return passed("；".join(notes_zh) or "输入在哪个设备，计算就在哪个设备。",
                  "; ".join(notes_en) or "Everything runs on the input's device.")


@check("sdpa.vectorized", part="sdpa", points=0.5, visibility="hidden",
       title_zh="没有逐头/逐位置的 Python 循环", title_en="no Python loop over heads or positions")
def vectorized(ctx: Context) -> Outcome:
    counts = {}
    for seed, (B, H, T) in enumerate(((1, 2, 4), (1, 8, 4), (1, 2, 16), (4, 2, 4)), start=70):
        Q, K, V = qkv(ctx, (B, H), T, 8, 8, seed)
        for _ in range(2):  # the second call: a mask cached on the first call is not a loop
            answer, problem = call(ctx, Q, K, V, True, count_ops=True)
            # only a right answer earns the vectorisation point
            problem = problem or compare(ctx, answer, Q, K, V, True, f"B={B}, H={H}, T={T}", f"B={B}, H={H}, T={T}")
            if problem:
                return problem
        counts[f"B={B},H={H},T={T}"] = answer["ops"]
    return loop_verdict(counts, "B=1,H=2,T=4")


@check("sdpa.own_implementation", part="sdpa", points=0, visibility="hidden", gate=True,
       title_zh="自己实现注意力（不调用 F.scaled_dot_product_attention）",
       title_en="attention implemented by hand (no F.scaled_dot_product_attention)")
def own_implementation(ctx: Context) -> Outcome:
    return forbidden_api_gate(ctx, "sdpa")


@check("sdpa.rules", part="sdpa", points=0, visibility="hidden", gate=True,
       title_zh="遵守评分规则（不篡改环境、不用私有接口）",
       title_en="keeps to the grading rules (no tampering, no private interfaces)")
def rules(ctx: Context) -> Outcome:
    return rules_gate(ctx, "sdpa")
