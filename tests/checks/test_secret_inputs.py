"""Are the parent's inputs a secret of each grading? Every probe's values, reference weights and dropout draws are
seeded from a number drawn per grading (grader/checks/secret.py), which the worker never receives and the report
never holds; so no verdict may depend on it: the same hand-in graded under two secrets gets the same score."""
import json
import subprocess
import sys

import pytest
import torch

from grader.checks import Context, secret
from grader.checks.student_code import message_fields
from grader.grade import grade_submission
from grader.sandbox.requests import MhaRequest, Probe, checked
from support.paths import REFERENCE, ROOT, SUBMISSIONS

pytestmark = pytest.mark.unit


def test_two_gradings_draw_other_inputs_and_one_grading_the_same_inputs_each_time():
    first, second = Context(None, {}, False), Context(None, {}, False)
    assert first.secret != second.secret
    draw = lambda ctx, label: torch.randn(8, generator=ctx.generator(label))  # noqa: E731
    assert torch.equal(draw(first, 20), draw(first, 20))
    assert not torch.equal(draw(first, 20), draw(second, 20))
    assert not torch.equal(draw(first, 20), torch.randn(8, generator=torch.Generator().manual_seed(20)))
    assert first.seed(3) != second.seed(3) and first.seed(3) == first.seed(3) and first.seed(3) < 2 ** 63
    assert not torch.equal(draw(first, 3), torch.randn(8, generator=torch.Generator().manual_seed(first.seed(3))))


def test_the_worker_gets_each_calls_place_and_never_the_parents_dropout_seed():
    ctx = Context(None, {}, False)
    x = {name: torch.zeros(1, 2, 8) for name in "qkv"}
    parents = [ctx.seed(3), ctx.seed(4)]
    fields = checked(Probe.MHA, MhaRequest(args=dict(dim=8, n_heads=2, dropout=0.5, max_seq_len=4), is_causal=True,
                                           calls=[dict(x, mode="train", seed=seed) for seed in parents]))
    sent = message_fields(Probe.MHA, fields)
    assert [call["seed"] for call in sent["calls"]] == [0, 1]
    assert [call["seed"] for call in fields["calls"]] == parents  # the parent runs the graph with its own


def test_a_fixed_secret_is_refused_outside_the_test_suite():
    code = "import grader.checks.secret as s; s.FIXED_FOR_TESTS = 1; s.draw()"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "test suite only" in done.stderr


def test_a_fixed_secret_is_taken_inside_the_test_suite(monkeypatch):
    monkeypatch.setattr(secret, "FIXED_FOR_TESTS", 12345)
    assert Context(None, {}, False).secret == 12345


# a correct file, a mutant each of values, dropout and loops, and the route that knew the old fixed seeds
TWICE = [REFERENCE, SUBMISSIONS / "mutants" / "missing-scale.py", SUBMISSIONS / "mutants" / "attn-dropout-placement__2.py",
         SUBMISSIONS / "mutants" / "dropout-not-applied__2.py", SUBMISSIONS / "mutants" / "python-loop.py",
         SUBMISSIONS / "graph_recipes" / "lookup_table_of_the_parents_inputs.py"]


@pytest.mark.sandbox
@pytest.mark.parametrize("path", TWICE, ids=[p.stem for p in TWICE])
def test_the_same_hand_in_graded_under_two_secrets_gets_the_same_verdicts(monkeypatch, path):
    reports = []
    for fixed in (0x5EC12E7, 0xD1FFE12E47):
        monkeypatch.setattr(secret, "FIXED_FOR_TESTS", fixed)
        reports.append(grade_submission(path))  # no cache: each grading runs
        assert str(fixed) not in json.dumps(reports[-1], ensure_ascii=False)
    first, second = reports
    assert first["score"] == second["score"], (first["score"], second["score"])
    assert [(c["id"], c["passed"], c["mistakes"]) for c in first["checks"]] == \
        [(c["id"], c["passed"], c["mistakes"]) for c in second["checks"]]
