"""Does any recipe gain a point when nothing in the worker stands in its way?

Points come from the graph the parent re-runs on inputs the worker never saw (grader/graph/). Each
recipe in tests/submissions/graph_recipes/ (and the forgery files that attack what the worker used to
measure) is graded twice: with the worker's rules in place, and with every one of them switched off
(the static pass, the guards, the audit hook and the denial of the built-in attention: the switch the
suite alone has). Either way it scores no more than its honest twin and its part scores 0; with
everything off, the graph alone names it (`# expect-off:`), except where a recipe's `# open:` or `# open-off:`
says which route is not held yet (an expected failure, strict).
"""
import pytest

from support.hand_ins import header

from support.paths import SUBMISSIONS

pytestmark = pytest.mark.sandbox

RECIPES = sorted(p for p in (SUBMISSIONS / "graph_recipes").glob("*.py") if header(p, "twin")) + [
    SUBMISSIONS / "forgery" / name for name in ("a_loop_with_dispatch_modes_off.py", "b_aten_math_alias.py")]
STAND_IN_RECIPES = [SUBMISSIONS / "forgery" / name for name in (
    "f_mask_moved_only_on_meta.py", "o_meta_in_the_tensor_text.py", "p_field_name_code_in_a_class_from_type.py")]
"""What tells the meta stand-in from a GPU when the guard is off (`is_meta`, a tensor's own text): the guard names
these (device-probing); with it off, the second stand-in (a FakeTensor on "cuda") meets their CPU mask
(mask-device)."""


def _part_points(report: dict, part: str) -> float:
    return sum(c["points"] for c in report["checks"] if c["part"] == part)


def _affected(path) -> list[str]:
    return {"both": ["sdpa", "mha"]}.get(header(path, "affected"), [header(path, "affected")])


def _open(path, key: str):
    """A recipe that still wins says which route and why in `# open:` (rules in place) or `# open-off:` (every
    worker rule off): an expected failure, strict, so its fix shows."""
    reason = header(path, key)
    return pytest.param(path, id=path.stem, marks=[pytest.mark.xfail(strict=True, reason=reason)] if reason else [])


@pytest.mark.parametrize("path", [_open(p, "open") for p in RECIPES + STAND_IN_RECIPES])
def test_a_recipe_gains_nothing_with_the_worker_rules_in_place(graded, path):
    report, twin = graded(path), graded((path.parent / header(path, "twin")).resolve())
    assert report["score"] <= twin["score"], (report["score"], twin["score"], report["mistakes"])


@pytest.mark.parametrize("path", [_open(p, "open-off") for p in RECIPES + STAND_IN_RECIPES])
def test_a_recipe_gains_nothing_with_every_worker_rule_off(graded, rules_bypassed, path):
    report, twin = graded(path), graded((path.parent / header(path, "twin")).resolve())  # a shared twin: once
    assert report["score"] <= twin["score"], (report["score"], twin["score"], report["mistakes"])
    expected = header(path, "expect-off") or header(path, "expect")
    assert expected in report["mistakes"], report["mistakes"]
    for part in _affected(path) if header(path, "affected-off") is None else [header(path, "affected-off")]:
        if part != "none":
            assert _part_points(report, part) <= _part_points(twin, part), part
