# The self-check's runner and report, the same for every exercise: each exercise's selfcheck.py declares its
# checks (SELFCHECK_CHECKS, SELFCHECK_GRADED, SELFCHECK_TITLE, SELFCHECK_LABEL, SELFCHECK_MISTAKES), how a failure
# is raised (SelfCheckFailure, _fail, _own_error, _error_text, check_rules) and two hooks: before_part(part,
# namespace), run before a part's checks, and one_mistake_explains(results), which names once the mistake that
# broke several checks. `make build` copies this text between the markers of each exercise's selfcheck.py
# (grader/build/inline_selfcheck.py), so each published self-check stands alone.

def run_part(part, namespace):
    """{check name: None if it passed, else the SelfCheckFailure}, every check of the part run once."""
    missing = [name for name in SELFCHECK_GRADED[part] if name not in namespace]
    before_part(part, namespace)
    results = {}
    for name, check in SELFCHECK_CHECKS[part]:
        try:
            if missing:
                _fail("not-implemented", f"找不到 {', '.join(missing)}：定义它的单元格运行了吗？",
                      f"{', '.join(missing)} is not defined: did its cell run?")
            if check is check_rules:
                check_rules(part, namespace)
            else:
                check(*(namespace[n] for n in SELFCHECK_GRADED[part]))
            results[name] = None
        except SelfCheckFailure as failure:
            results[name] = failure
        except Exception as error:  # the student's object lacks what the check reads (no wq, not a module, …)
            said = f"{type(error).__name__}: {_error_text(error)}"
            if _own_error(error):
                results[name] = SelfCheckFailure("selfcheck-error", f"自检程序出错：{said}。",
                                                 f"the self-check's own code failed: {said}.")
            else:
                results[name] = SelfCheckFailure("wrong-return", said, said)
    return one_mistake_explains(results)


_TODO_REFERENCE = re.compile(r"[（(]TODO ([0-9a-z /]+)[）)]")


def _todos_of_part(text, part):
    """A fix's "（TODO 1b / 2e）" cut to the TODOs of the part that failed (dropped when none is this part's)."""
    def keep(found):
        own = [todo for todo in found.group(1).split(" / ") if part is None or todo.startswith(part[-1])]
        opening, closing = ("（", "）") if found.group(0).startswith("（") else (" (", ")")
        return f"{opening}TODO {' / '.join(own)}{closing}" if own else ""

    return re.sub(r" ?" + _TODO_REFERENCE.pattern, keep, text)


def _sentence(text, zh):
    """`text` ended as a sentence, so the fix after it reads as the next one."""
    text = text.rstrip()
    return text if not text or text[-1] in "。.！!？?）)" else text + ("。" if zh else ".")


def explain_failure(failure, explained, part=None):
    """A few lines, Chinese first: what was seen and, for each of its mistakes not yet in `explained` (which
    this adds them to), its title and fix (the TODOs of `part` only). An error `explained` already holds is
    not quoted again: a later check it broke says "the same error" and nothing more."""
    ids = " ".join(f"[{mistake}]" for mistake in failure.mistakes)
    error = ("error", part, failure.error, failure.line)  # one error: one message, one line, one part
    if failure.error and error in explained:
        return f"{ids} 同一个错误（见上）/ the same error (see above)"
    quoted = []
    if failure.error:
        explained.add(error)
        quoted.append(f"  报错 / error: {failure.error}")
        quoted += [f"  出错的代码 / your line: `{failure.line}`"] if failure.line else []
    seen_zh, seen_en = _sentence(failure.seen_zh, True), _sentence(failure.seen_en, False)
    new = [mistake for mistake in failure.mistakes if mistake not in explained]
    explained.update(failure.mistakes)
    if not new:
        seen = f" {seen_zh} / {seen_en}" if seen_zh else ""
        return "\n".join([f"{ids}{seen}（改法同上 / fix: see above）", *quoted])
    several = len(failure.mistakes) > 1
    lines = [f"{ids} {seen_zh} / {seen_en}", *quoted] if several else []
    for mistake in new:
        title_zh, title_en, fix_zh, fix_en = SELFCHECK_MISTAKES[mistake]
        lines.append(f"[{mistake}] {title_zh} · {title_en}")
        if not several:
            lines += quoted
        said_zh, said_en = ("", "") if several else (seen_zh, seen_en + " " if seen_en else "")
        lines.append(f"  {said_zh}改法：{_todos_of_part(fix_zh, part)}\n  {said_en}Fix: {_todos_of_part(fix_en, part)}")
    return "\n".join(lines)


def part_summary(part, results):
    """The whole part's verdict as text: every check, passed or failed, each error and mistake explained once."""
    failed = {name: f for name, f in results.items() if f is not None}
    label = SELFCHECK_TITLE[part]
    if not failed:
        listed = " · ".join(f"{SELFCHECK_LABEL[name]} {name}" for name in results)
        return f"✅ {label}：自检通过 / self-check passed ({len(results)}/{len(results)})：{listed}"
    lines = [f"❌ {label}：{len(results)} 项自检中 {len(failed)} 项未通过 / {len(failed)} of {len(results)} "
             "self-checks failed"]
    explained = set()
    for name, failure in results.items():
        head = f"{SELFCHECK_LABEL[name]} {name}"
        lines.append(f"✓ {head}" if failure is None else f"✗ {head}: " + explain_failure(failure, explained, part))
    return "\n".join(lines)


def selfcheck_notebook(part, namespace):
    """The notebook's self-check cell: print the verdict and never raise, so Run all reaches the later parts.

    A failure goes to stderr: Colab shows it in red, and `nbgrader validate` counts the cell as failed."""
    text = part_summary(part, run_part(part, namespace))
    print(text, file=sys.stderr if text.startswith("❌") else sys.stdout)
