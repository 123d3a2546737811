"""What several checks of one part met, said once: a crash every probe meets, a rule breach every check of
the part is not run for. Torch-free: the nbgrader step's page and `grader grade`'s text both read it."""
from __future__ import annotations


def repeated_messages(checks: list[dict]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Failed checks that met what an earlier one already said (the same exception on the same line, or the same
    whole message: a crash every probe meets, a rule breach every check of the part is not run for):
    (check id -> the first check saying it, first check id -> the later ones)."""
    first: dict[tuple, str] = {}
    same_as: dict[str, str] = {}
    repeats: dict[str, list[str]] = {}
    for check in checks:
        if check["passed"] or check.get("not_counted"):  # held (a failed gate's zero is said on its own line)
            continue
        if check.get("error"):
            key = ("error", check["error"], (check.get("where") or {}).get("text"), tuple(check["mistakes"]))
        else:
            key = ("message", check.get("message_zh") or "", check.get("message_en") or "")
        if key == ("message", "", ""):
            continue
        if key in first:
            same_as[check["id"]] = first[key]
            repeats.setdefault(first[key], []).append(check["id"])
        else:
            first[key] = check["id"]
    return same_as, repeats
