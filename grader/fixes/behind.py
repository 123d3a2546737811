"""What a crash hides: when every call of a part raised, regrade a copy whose crash is mended and name what that copy
still gets wrong, "behind this error".

The copy is, in order: the verified fixes' regrade (grader.fixes.search) when it runs the part; else the catalog
fix of the crash's own mistake (a float head width: `/` -> `//`), kept even when it earns nothing (a tuple returned
behind it still fails every check); else the smallest edit that lets the call run (grader.fixes.crash_repairs). An
edit counts only when the regrade's part no longer raises. The crash's own check still fails as before; it gains
`behind_error` and a sentence saying what was found, or that no edit let the call run.
"""
from __future__ import annotations

from grader.fixes.candidates import Candidate, candidates
from grader.fixes.crash_repairs import repair
from grader.fixes.rewrites import REWRITES
from grader.handin.places import place as where

MAX_REGRADES = 2
"""Regrades per crashed part: the catalog fix of its mistake, then a repair; each costs a grading."""


NOT_LOOKED_BEHIND = {"timeout", "memory-limit", "tampering", "not-implemented", "syntax-error"}
"""Crashes with nothing behind them to see (a TODO left, code that does not parse) or whose regrade would cost the
whole limit again."""


def crashes(report: dict, gates: set[str]) -> dict[str, dict]:
    """Part -> its gate check, for the parts where every call raised (the gate failed with the error it met)."""
    if report.get("refused"):
        return {}
    return {c["part"]: c for c in report["checks"] if c["id"] in gates and not c["passed"] and c.get("error")
            and not NOT_LOOKED_BEHIND & set(c["mistakes"])}


def runs(regraded: dict, gate: str) -> bool:
    """The part's calls run in the regrade: its gate no longer fails on an error."""
    check = next((c for c in regraded["checks"] if c["id"] == gate), None)
    return check is not None and not check.get("error")


def part_mistakes(report: dict, part: str) -> list[str]:
    return list(dict.fromkeys(m for c in report["checks"] if c["part"] == part for m in c["mistakes"]))


def look_behind(grading, report: dict, edit_of, gates: set[str], fixed: dict | None, found: list[dict]) -> dict:
    """Gate check id -> its `behind_error` ({"mistakes", "by", "lines"}) for each crashed part.
    `edit_of(candidate)`: the regrade of the hand-in with that candidate applied."""
    out = {}
    for part, gate in crashes(report, gates).items():
        mended = None
        if fixed is not None and runs(fixed, gate["id"]):
            own_checks = {c["id"] for c in report["checks"] if c["part"] == part}
            located = [{k: edit[k] for k in ("line", "cell", "defines") if k in edit} for fix in found
                       if own_checks & set(fix["checks"]) for edit in fix["edits"]]
            mended = (fixed, "fix", located)
        else:
            for candidate in mending(grading.submission.source, gate, part, grading.submission.exercise.graded_name)[
                    :MAX_REGRADES]:
                regraded = edit_of(candidate)
                if runs(regraded, gate["id"]):
                    by = "fix" if candidate.mistake in REWRITES else "edit"
                    located = [grading.submission.locate({"line": edit.line}) or {"line": edit.line}
                               for edit in candidate.edits]
                    mended = (regraded, by, located)
                    break
        if mended is None:
            out[gate["id"]] = {"mistakes": [], "by": None, "lines": []}
            continue
        regraded, by, located = mended
        own = set(part_mistakes(report, part))
        out[gate["id"]] = {"mistakes": [m for m in part_mistakes(regraded, part) if m not in own], "by": by,
                           "lines": located}
    return out


def mending(source: str, gate: dict, part: str, graded_name: dict[str, str]) -> list[Candidate]:
    """The edits worth a regrade for one crash: the catalog fix of each mistake the crash was named, then a repair.
    `graded_name`: the exercise's part id -> the name it grades."""
    named = [m for m in gate["mistakes"] if m in REWRITES]
    found = candidates(source, named, {m: [part] for m in named}, graded_name) if named else []
    repaired = repair(source, gate["error"], graded_name[part]) if part in graded_name else None
    return found + ([repaired] if repaired is not None else [])


def said(behind: dict, lang: str) -> str:
    """The sentence the crash's check gains: what the mended copy still gets wrong, or that nothing was found."""
    places = "、".join(where(p, "zh") for p in behind["lines"]) if lang == "zh" else \
        ", ".join(where(p, "en") for p in behind["lines"])
    ids = ", ".join(f"[{m}]" for m in behind["mistakes"])
    if behind["by"] is None:
        return ("这个错误背后：没有找到能让代码运行的小改动，所以还看不到它后面的代码有没有其他错误。" if lang == "zh" else
                "Behind this error: no small edit let the call run, so what the code does after it could not be "
                "checked.")
    how_zh = "按目录中的修改" if behind["by"] == "fix" else "做最小的改动让代码能运行"
    how_en = "the catalogued fix" if behind["by"] == "fix" else "the smallest edit that lets it run"
    if lang == "zh":
        return (f"这个错误背后：{how_zh}（{places}）后重新评分，" +
                (f"代码还有这些错误：{ids}。" if ids else "没有发现其他错误。"))
    return (f"Behind this error: regraded with {how_en} ({places}), the code still shows {ids}." if ids else
            f"Behind this error: regraded with {how_en} ({places}), nothing else is found wrong.")
