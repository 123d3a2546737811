"""A report (grader.report) as Gradescope's results.json.

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

VISIBILITY = {"public": "visible", "hidden": "after_published"}
TEST_VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
INSTRUCTOR_ONLY = "hidden"


def check_output(check: dict, fixes: list[dict], hidden_ids: set[str]) -> str:
    lines = [check["message_zh"], "", check["message_en"]] if check["message_zh"] or check["message_en"] else []
    for fix in fixes:
        fixed = set(fix.get("checks", []))
        if check["id"] in fixed and (check["id"] in hidden_ids or not fixed & hidden_ids):
            lines += ["", f"验证过的修改 / Verified fix: {fix['message_zh']}", fix["message_en"]]
    return "\n".join(lines).strip()


def summary(report: dict, graded: str) -> str:
    public = [c for c in report["checks"] if c["visibility"] == "public"]
    mistakes = ", ".join(dict.fromkeys(m for c in public for m in c["mistakes"])) or "—"
    got, top = sum(c["points"] for c in public), sum(c["max_points"] for c in public)
    return (f"评分文件 / Graded file: {graded}\n"
            f"公开检查 / Public checks: {got:g} / {top:g}（其余检查在成绩发布后显示 / the other checks show once "
            f"grades are published）\n"
            f"公开检查诊断出的错误 / Mistakes the public checks found: {mistakes}")


def results_json(report: dict, graded: str) -> dict:
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
    return {"score": report["score"], "output": summary(report, graded), "visibility": "visible",
            "stdout_visibility": "hidden", "tests": tests}


def no_submission(found: list[str]) -> dict:
    seen = ", ".join(found) or "nothing"
    return {"score": 0.0, "visibility": "visible", "stdout_visibility": "hidden", "tests": [],
            "output": f"没有找到要评分的 .ipynb 或 .py 文件（收到：{seen}）。请上传 attention.ipynb。\n"
                      f"No .ipynb or .py file to grade (received: {seen}). Upload attention.ipynb."}
