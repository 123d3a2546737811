"""Are the parent's inputs a secret of each grading? Every probe's values, reference weights and dropout draws are
seeded from a number drawn per grading (grader/checks/secret.py), which the worker never receives and the report
never holds, and so are the shapes of the probes code could steer by its input's shape (device, op count, dropout);
so no verdict may depend on it: the same hand-in graded under several secrets gets the same score."""
import json
import subprocess
import sys

import pytest
import torch

from grader.checks import Context, secret
from grader.checks.student_code import StudentCode, message_fields
from grader.grade import grade_submission
from grader.sandbox.requests import MhaRequest, Probe, SdpaRequest, checked
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


SECRETS = (0x5EC12E7, 0xD1FFE12E47, 0x5A3E5)
RECIPES = SUBMISSIONS / "graph_recipes"
# a correct file, a mutant each of values, device, dropout and loops, the route that knew the old fixed seeds, and
# the routes that knew the old fixed shapes of the device, op-count and dropout probes with their honest twins
SEVERAL = [REFERENCE, SUBMISSIONS / "mutants" / "missing-scale.py", SUBMISSIONS / "mutants" / "mask-device.py",
           SUBMISSIONS / "mutants" / "attn-dropout-placement__2.py",
           SUBMISSIONS / "mutants" / "dropout-not-applied__2.py", SUBMISSIONS / "mutants" / "python-loop.py",
           RECIPES / "lookup_table_of_the_parents_inputs.py", RECIPES / "mask_moved_only_at_the_device_probes_shape.py",
           RECIPES / "mha_head_loop_vectorised_only_at_the_probed_shapes.py", RECIPES / "twin_mha_head_loop.py",
           RECIPES / "resid_dropout_applied_only_at_the_probed_shapes.py", RECIPES / "twin_mha_resid_dropout_unused.py"]


@pytest.mark.sandbox
@pytest.mark.parametrize("path", SEVERAL, ids=[p.stem for p in SEVERAL])
def test_the_same_hand_in_graded_under_several_secrets_gets_the_same_verdicts(monkeypatch, path):
    reports = []
    for fixed in SECRETS:
        monkeypatch.setattr(secret, "FIXED_FOR_TESTS", fixed)
        reports.append(grade_submission(path))  # no cache: each grading runs
        assert str(fixed) not in json.dumps(reports[-1], ensure_ascii=False)
    verdicts = [[(c["id"], c["passed"], c["mistakes"]) for c in report["checks"]] for report in reports]
    assert len({report["score"] for report in reports}) == 1, [report["score"] for report in reports]
    assert all(verdict == verdicts[0] for verdict in verdicts), verdicts


def _steerable_shapes(probe: Probe, request) -> tuple[str, tuple] | None:
    """(which probe, the shape the code is called at) for a probe whose verdict code could steer by that shape."""
    if isinstance(request, SdpaRequest) and (request.device != "cpu" or request.count_ops):
        return ("sdpa.device" if request.device != "cpu" else "sdpa.vectorized"), tuple(request.Q.shape)
    if isinstance(request, MhaRequest) and (request.device != "cpu" or request.count_ops or request.dropout_p):
        kind = "mha.device" if request.device != "cpu" else "mha.vectorized" if request.count_ops else "mha.dropout"
        return kind, (*request.calls[0]["q"].shape, request.args["n_heads"], request.args["max_seq_len"])
    return None


# the shapes these probes ran at while they were written in the grader (B, H, T, d in Part 1; B, T, dim, n_heads,
# max_seq_len in Part 2), each of which a hand-in could name to behave well there alone
FIXED_BEFORE = {"sdpa.device": {(2, 3, 5, 8)}, "sdpa.vectorized": {(2, 2, 4, 8), (8, 2, 4, 8), (2, 8, 4, 8)},
                "mha.device": {(2, 5, 32, 4, 16)}, "mha.vectorized": {(2, 4, 256, 2, 128), (8, 4, 256, 2, 128)},
                "mha.dropout": {(2, 6, 32, 4, 16), (2, 4, 32, 4, 16)}}


@pytest.mark.sandbox
def test_the_probes_code_could_steer_by_shape_run_at_other_shapes_in_each_grading(monkeypatch):
    called = StudentCode.call_many  # `call` sends one request through it
    seen: dict[str, set] = {}

    def recording(self, probe, requests):
        for request in requests:
            kind_and_shape = _steerable_shapes(probe, request)
            if kind_and_shape:
                seen.setdefault(kind_and_shape[0], set()).add(kind_and_shape[1])
        return called(self, probe, requests)

    monkeypatch.setattr(StudentCode, "call_many", recording)
    per_grading = []
    for fixed in SECRETS:
        monkeypatch.setattr(secret, "FIXED_FOR_TESTS", fixed)
        seen = {}
        assert grade_submission(REFERENCE)["score"] == 20.0
        per_grading.append(seen)
    # every train() probe of the dropout check, the one that reads each layer's own pattern included, at one shape:
    # no shape tells the probe that reads the pattern from the probes that see the output change (issue 41, route 7)
    assert all(len(grading.get("mha.dropout", set())) == 1 for grading in per_grading), per_grading
    for kind, before in FIXED_BEFORE.items():
        shapes = [grading.get(kind, set()) for grading in per_grading]
        assert all(shapes), (kind, shapes)  # the probe ran in each grading
        assert not any(before & grading for grading in shapes), (kind, shapes)
        assert all(a != b for i, a in enumerate(shapes) for b in shapes[i + 1:]), (kind, shapes)  # drawn per grading


def test_a_hand_in_meets_one_secret_on_a_machine_and_another_on_another_machine(monkeypatch, tmp_path):
    """The secret is the source hashed under the machine's key: the same words on every run, no inputs to foresee."""
    keys = []
    for machine in ("one", "two"):
        (tmp_path / machine).mkdir()
        monkeypatch.setattr(secret, "KEY_FILE", tmp_path / machine / ".grading-key")
        secret._machine_key.cache_clear()
        drawn = secret.draw("y = attention(x)")
        assert drawn == secret.draw("y = attention(x)") != secret.draw("y = attention(x) ")
        assert (tmp_path / machine / ".grading-key").stat().st_mode & 0o777 == 0o600  # its owner's alone
        keys.append(drawn)
    secret._machine_key.cache_clear()
    assert keys[0] != keys[1]
