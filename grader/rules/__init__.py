"""The grading rules, checked on the graded code's text in the parent before anything runs.

Some points come from measurements taken inside the student's own process (op counts, meta-device
runs, forbidden-call records). They can be trusted only if the code cannot reach the machinery
that takes them: the interpreter's internals, torch's private dispatch layer, the grader's
modules, or the globals it shares with them. Honest attention code needs none of that, so the
rules (rules/reader.py) forbid it outright; a violation costs the part whose code it is in
(rules/attribution.py), and code that runs when the submission loads (module level, class
bodies, decorators, default values) costs both.
"""
from __future__ import annotations

from dataclasses import dataclass

from grader.handin import parent_budget, places, syntax_tree
from grader.exercises import Exercise
from grader.catalog import rule_mistakes
from grader.rules.attribution import attribution
from grader.rules.reader import Rules
from grader.rules.table import allowed_imports

# the mistakes that say "broke the rules" rather than "got attention wrong" (the catalog's rules group but the
# built-in attention, a way of not writing attention): an instructor follows them up
RULE_MISTAKES = tuple(m for m in rule_mistakes() if m != "forbidden-api")

INSTEAD = {
    "forbidden-api": ("自己写出 softmax(Q Kᵀ / √d_k) V：用 @ 或 torch.matmul、masked_fill 和 softmax。",
                      "compute softmax(Q Kᵀ / √d_k) V yourself with @ or torch.matmul, masked_fill and softmax."),
    "forbidden-import": (allowed_imports("zh"), allowed_imports("en")),
    "introspection": ("直接写出属性和运算（self.wq、Q.size(-1)、torch.softmax），不要动态查找对象或解释器内部。",
                      "name attributes and ops directly (self.wq, Q.size(-1), torch.softmax); no dynamic lookups or "
                      "interpreter internals."),
    "private-torch": ("只用公开的张量运算：@ / torch.matmul、torch.softmax、masked_fill、torch.tril。",
                      "use the public tensor ops: @ / torch.matmul, torch.softmax, masked_fill, torch.tril."),
    "device-probing": ("在输入所在的设备上创建张量：torch.ones(T, T, device=Q.device)，或把掩码注册成 buffer。",
                       "create tensors on the input's device: torch.ones(T, T, device=Q.device), or register the mask "
                       "as a buffer."),
    "tampering": ("不要修改 torch 或其他模块、类；自己的状态放在 self 上。",
                  "leave torch and other modules and classes as they are; keep your own state on self."),
}
ENDS_PROCESS_INSTEAD = ("删除 `os._exit` / `sys.exit` / `exit()` 这类调用。", "delete the `os._exit` / `sys.exit` / `exit()` call.")
"""What to write instead of a call that ends or copies the process (rules.reader says "ends or copies")."""



@dataclass(frozen=True)
class Violation:
    mistake: str
    line: int  # in the extracted module the worker would run
    text: str  # the student's line
    zh: str  # what was seen
    en: str
    parts: frozenset[str]

    def describe(self, lang: str, where: dict) -> str:
        """What was seen on the student's own line (`where`, located as `places` names it), and what to write."""
        seen = self.zh if lang == "zh" else self.en
        ends_process = self.mistake == "tampering" and "ends or copies" in self.en
        instead = (ENDS_PROCESS_INSTEAD if ends_process else INSTEAD[self.mistake])[0 if lang == "zh" else 1]
        place = places.place(where, lang)
        if lang == "zh":
            return f"{place} `{self.text}`：{seen}。应改为：{instead}"
        return f"{place} `{self.text}`: {seen}. Instead, {instead}"


def violations(source: str, exercise: Exercise) -> list[Violation]:
    """Every rule the code breaks, each attributed to the parts of `exercise` whose points it costs."""
    try:
        tree = syntax_tree.parsed(source)
    except SyntaxError:
        return []  # nothing of it runs; the syntax error is reported elsewhere
    lines = source.splitlines()
    walked = syntax_tree.walk_statements(tree)  # each statement once: both passes read these lists
    parts_of = attribution(tree, walked, exercise.graded_name)
    rules = Rules(tree, walked)
    found: list[Violation] = []
    seen: set[tuple[str, int]] = set()
    for statement in tree.body:
        parent_budget.check()
        for node, mistake, zh, en in rules.breaches(statement):
            line = getattr(node, "lineno", statement.lineno)
            parts = parts_of(statement, node)
            if parts and (mistake, line) not in seen:  # one finding per rule and line: a.b.c is one access
                seen.add((mistake, line))
                text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
                found.append(Violation(mistake, line, text[:200], zh, en, frozenset(parts)))
    return found


def for_part(found: list[Violation], part: str) -> list[Violation]:
    return [v for v in found if part in v.parts]
