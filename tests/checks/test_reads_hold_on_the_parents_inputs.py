"""Does a graph whose code read a value (a branch, a print) stand only for inputs on which the code does the same?

The worker traces on decoys; the parent runs the graph on inputs of its own, some of them ten times larger
(sdpa.causal_zeros) or with the future redrawn larger (sdpa.no_future_leak). A branch on the scores' magnitude was
traced on the decoys' path, drawn at the scale of unit normals, and run on the parent's inputs, where the code takes
the other (red team on issue 42): a wrong large-score path kept its points, and an honest one was failed with a NaN
its code never makes. Two rules hold it: decoys are drawn at the magnitude of the inputs they stand for
(`request_tensors.magnitude`), and where values left for Python the worker replays the graph beside the code on other
draws (grader/sandbox/replay.py: half and twice the magnitude, negated, the later positions five times larger), where
the two must agree, else the call is `untraceable` (review by hand). A read that changes no output (a print) passes.
"""

import pytest
import torch

from grader.grade import grade_submission
from support.hand_ins import reference_edited

SOFTMAX = "    weights = F.softmax(scores, dim=-1)  # (..., T, T)\n"
BY_HAND = "        e = torch.exp(scores)\n        weights = e / e.sum(dim=-1, keepdim=True)\n"
LIBRARY = "        weights = F.softmax(scores, dim=-1)\n"


def by_magnitude(tmp_path, small: str, large: str | None, name: str, threshold: int = 30):
    """The reference with its softmax chosen by the scores' magnitude (unmasked): an unshifted softmax by hand
    overflows to NaN for large scores and is exact for small ones. With no `large`, `small` always, no branch."""
    branch = small.replace("        ", "    ") if large is None else (
        f"    if bool(scores.masked_fill(scores.isinf(), 0).abs().amax() < {threshold}):\n{small}    else:\n{large}")
    return reference_edited(tmp_path, name, SOFTMAX, branch)


@pytest.mark.sandbox
def test_a_path_chosen_by_the_inputs_magnitude_is_traced_at_their_magnitude(tmp_path):
    """Decoys at the magnitude of the inputs they stand for (`request_tensors.magnitude`): the wrong large-score path
    is met where the parent's inputs are large (scores up to about 500 there, past 1000 on the replay's draw at twice
    their magnitude, never on unit decoys nor on any draw around them), and the honest file is never failed for the
    other path's NaN."""
    wrong = grade_submission(by_magnitude(tmp_path, LIBRARY, BY_HAND, "wrong_when_large", threshold=1000))
    twin = grade_submission(by_magnitude(tmp_path, BY_HAND, None, "wrong_always"))
    assert wrong["score"] <= twin["score"] < twin["max_score"], (wrong["score"], twin["score"])
    honest = grade_submission(by_magnitude(tmp_path, BY_HAND, LIBRARY, "right_either_way"))
    failed = [c for c in honest["checks"] if not c["passed"] and c["max_points"] > 0]
    # traced on its small-score path at the inputs' magnitude: no NaN its code never makes; where a replay at other
    # magnitudes meets its other path, the graph cannot stand for it there, and a person reviews it
    assert all(c["mistakes"] == ["untraceable"] and c["id"] in honest["review"] for c in failed), \
        [(c["id"], c["mistakes"]) for c in failed]


@pytest.mark.sandbox
def test_a_path_chosen_by_a_read_no_magnitude_holds_is_reviewed(tmp_path):
    """A branch on a sign, which decoys and the parent's inputs draw apart: the negated replay takes the other path,
    whose outputs differ there, so the call is untraceable, never the decoys' path's numbers."""
    report = grade_submission(reference_edited(tmp_path, "wrong_for_a_sign", SOFTMAX,
                                               f"    if bool(Q.flatten()[0] > 0):\n{LIBRARY}    else:\n{BY_HAND}"))
    assert "untraceable" in report["mistakes"] and report.get("review"), report["mistakes"]


MASK = "        scores = scores.masked_fill(future, float(\"-inf\"))  # (..., T, T)\n"
OUT = "    out = torch.matmul(weights, V)  # (..., T, d_v)\n"


@pytest.mark.sandbox
@pytest.mark.parametrize("read", [".item()", ".tolist()"])
def test_a_float_read_compared_in_python_is_replayed_where_the_parents_inputs_differ(tmp_path, read):
    """The mask left out where the later positions are much larger than the first (sdpa.no_future_leak redraws the
    future five times larger), the floats read and compared in Python: the replay draws the later half of the
    positions five times larger too, and the code is untraceable, not a leak the decoys hid."""
    ratio = f"(Q[..., -1, :].pow(2).mean(){read} <= 8 * Q[..., 0, :].pow(2).mean(){read})"
    report = grade_submission(reference_edited(tmp_path, "leak_when_the_future_is_large", MASK,
                                               f"        if T < 2 or {ratio}:\n    " + MASK))
    assert "untraceable" in report["mistakes"], report["mistakes"]
    assert not next(c for c in report["checks"] if c["id"] == "sdpa.no_future_leak")["passed"]


@pytest.mark.sandbox
@pytest.mark.parametrize("printed", [
    "    print(\"strongest key:\", int(weights.flatten(0, -2)[-1].argmax()))\n",
    "    if bool((scores > 3).any()):\n        print(\"some scores above 3\")\n"], ids=["an int", "a bool"])
def test_a_value_read_only_for_a_print_keeps_every_point(tmp_path, printed):
    """Honest: a debugging print of which key gets the most weight, or a print gated by the scores' values: the read
    changes no output, so every replay agrees with the graph, under every grading secret (a guard on the bool, tried
    this stop, sent such a print to review where the parent's inputs read the other value and no replay did)."""
    report = grade_submission(reference_edited(tmp_path, "debug_print", OUT, OUT + printed))
    assert report["score"] == report["max_score"], [c["id"] for c in report["checks"] if not c["passed"]]


@pytest.mark.unit
def test_a_replay_keeps_the_zeros_a_call_found_in_what_it_writes_into():
    """A cache's update asserts the slots it writes are empty, then writes them: the replay starts from the buffer as
    the call found it (not as it left it) and keeps its zeros, so the honest assertion holds there too."""
    from grader.sandbox import graph_probes

    lines = ["def update(buffer, k):", "    assert bool((buffer[:, 2:4] == 0).all()), 'overwriting'",
             "    buffer[:, 2:4] = k", "    return [buffer[:, :4] * 1]"]
    namespace: dict = {}
    exec(compile("\n".join(lines), graph_probes.SUBMISSION_FILE, "exec"), namespace)  # the student's file
    buffer = torch.zeros(3, 6)
    buffer[:, :2] = torch.randn(3, 2)
    recorded = graph_probes._recorded(namespace["update"], [buffer, torch.randn(3, 2)], 2, "cpu", lines, [])
    assert "graph" in recorded and "untraceable" not in recorded, sorted(recorded)

