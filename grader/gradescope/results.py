"""A report (grader.report.json_report) as Gradescope's results.json.

Gradescope's documented fields: top level `score` (the total shown; here the class-facing score, with any
fix credit), `output`, `visibility`, `stdout_visibility`, `tests`; each test `name`, `number`, `score`,
`max_score`, `status` ("passed"/"failed"), `output`, `visibility` ("visible", "hidden", "after_due_date",
"after_published"). One test per check: the public checks (the ones the students' self-check runs too)
are `visible`, the hidden ones `after_published` (students see them once the instructor publishes grades).
`output` holds the Chinese then the English diagnosis, and every verified fix that makes that check pass
(a fix that also makes a hidden check pass names it, so it is shown only under hidden checks). The top-level
`output`, visible at once, speaks of the public checks only: nothing of a hidden check shows before publishing.
What only the instructor should read (isolation layers the container refused) is a `hidden` test of 0 points.
"""
from __future__ import annotations

from grader.report.text import BOTH, fixes_said

VISIBILITY = {"public": "visible", "hidden": "after_published"}
TEST_VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
INSTRUCTOR_ONLY = "hidden"


def check_output(check: dict, fixes: list[dict], hidden_ids: set[str]) -> str:
    """A test's output: the check's diagnosis in both languages, then the verified fixes that make it pass, worded
    as every report words them (grader.report.text)."""
    lines = [check["message_zh"], "", check["message_en"]] if check["message_zh"] or check["message_en"] else []
    shown = [fix for fix in fixes if check["id"] in set(fix.get("checks", []))
             and (check["id"] in hidden_ids or not set(fix.get("checks", [])) & hidden_ids)]
    if shown:
        lines += [""] + fixes_said(shown, BOTH)
    return "\n".join(lines).strip()


def summary(report: dict, graded: str, not_graded: list[str] = (), assignment: str = "") -> str:
    """What the student sees at once: the visible tests counted one by one (and their points), never a hidden one."""
    public = [c for c in report["checks"] if VISIBILITY.get(c["visibility"]) == "visible"]
    mistakes = ", ".join(dict.fromkeys(m for c in public for m in c["mistakes"])) or "—"
    got, top = sum(c["points"] for c in public), sum(c["max_points"] for c in public)
    passed = sum(c["passed"] for c in public)
    lines = [f"评分文件 / Graded file: {graded}"]
    if not_graded:
        lines.append(f"未评分的其他文件 / Also uploaded, not graded: {', '.join(not_graded)}"
                     f"（只评一个文件：名为 {assignment} 的最新一份 / one file is graded: the newest named {assignment}）")
    lines += [f"公开检查 / Public checks: {passed} / {len(public)} 通过 passed, {got:g} / {top:g} 分 points"
              f"（其余检查在成绩发布后显示 / the other checks show once grades are published）",
              f"公开检查诊断出的错误 / Mistakes the public checks found: {mistakes}"]
    return "\n".join(lines)


def instructor_log(report: dict, graded: str, not_graded: list[str]) -> str:
    """What run_autograder prints, which Gradescope shows instructors as the Autograder Output."""
    missing = report.get("isolation_missing") or []
    return "\n".join([
        f"attention-kit: graded {graded}" + (f"; also uploaded, not graded: {', '.join(not_graded)}" if not_graded else ""),
        f"score {report['score']:g} / {report['max_score']:g}; mistakes: {', '.join(report['mistakes']) or 'none'}",
        "sandbox layers: all applied (session, namespaces, unprivileged uid, resource limits, memory cgroup, seccomp)"
        if not missing else f"sandbox layers: this container refused {'; '.join(missing)}; every other layer applied",
    ])


def results_json(report: dict, graded: str, not_graded: list[str] = (), assignment: str = "") -> dict:
    """`assignment`: the exercise's name, the name of the file graded first where several came (run.pick_submission)."""
    fixes = report.get("fixes") or []
    hidden_ids = {c["id"] for c in report["checks"] if c["visibility"] != "public"}
    tests = [{
        "name": f"{check['id']}: {check['title_zh']} / {check['title_en']}",
        "number": str(number),
        "score": check["points"],
        "max_score": check["max_points"],
        "status": "passed" if check["passed"] else "failed",
        "output": check_output(check, fixes, hidden_ids),
        "visibility": VISIBILITY.get(check["visibility"], "after_published"),
    } for number, check in enumerate(report["checks"], start=1)]
    if report.get("isolation_missing"):
        tests.append({"name": "instructor only: isolation_missing", "number": str(len(tests) + 1), "score": 0.0,
                      "max_score": 0.0, "status": "passed", "visibility": INSTRUCTOR_ONLY,
                      "output": "Isolation layers this container refused (the verdicts were still computed outside "
                                "student code): " + "; ".join(report["isolation_missing"])})
    return {"score": report["score"], "output": summary(report, graded, not_graded, assignment), "visibility": "visible",
            "stdout_visibility": "hidden", "tests": tests}


def no_submission(found: list[str], assignment: str) -> dict:
    seen = ", ".join(found) or "nothing"
    return {"score": 0.0, "visibility": "visible", "stdout_visibility": "hidden", "tests": [],
            "output": f"没有找到要评分的 .ipynb 或 .py 文件（收到：{seen}）。请上传 {assignment}.ipynb。\n"
                      f"No .ipynb or .py file to grade (received: {seen}). Upload {assignment}.ipynb."}
