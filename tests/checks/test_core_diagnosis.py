"""Does diagnosis name the mistake behind an exception a probe reported, and only then?

grader.checks.diagnosis on error dicts as the worker sends them ({"type", "message", "where"}): no sandbox.
"""
import pytest

from grader.exercises import attention
from grader.catalog import catalog
from grader.checks.diagnosis import ERROR_RULES, from_error

pytestmark = pytest.mark.unit

MAX_SEQ_LEN = attention.MODEL_ARGS["max_seq_len"]

# (exception type, message, what the static pass found, the mistake it points to)
CASES = [
    ("NotImplementedError", "", {}, "not-implemented"),
    ("TypeError", "empty(): argument 'size' (position 1) must be tuple of ints, but found element of type float at "
                  "pos 0", {}, "float-head-dim"),
    ("TypeError", "view(): argument 'size' failed to unpack the object at pos 4 with error \"type must be tuple of "
                  "ints,but got float\"", {}, "float-head-dim"),
    ("TypeError", "split_with_sizes(): argument 'split_sizes' (position 2) must be tuple of ints, not float", {},
     "float-head-dim"),
    ("NameError", "name 'matmul' is not defined", {}, "bare-matmul"),
    ("NameError", f"name '{attention.PART['mha'].graded_name}' is not defined", {}, "not-implemented"),
    ("AttributeError", "module 'torch' has no attribute 'Tenser'", {}, "misspelled-tensor"),
    ("AttributeError", "module 'torch.nn' has no attribute 'dropout'", {}, "dropout-lowercase"),
    ("TypeError", "f() got an unexpected keyword argument 'is_causal'", {}, "is-causal-typo"),
    ("RuntimeError", "view size is not compatible with input tensor's size and stride (at least one dimension spans "
                     "across two contiguous subspaces). Use .reshape(...) instead.", {}, "missing-contiguous"),
    ("timeout", "no answer within 10 s", {}, "timeout"),
    ("memory-limit", "", {}, "memory-limit"),
    ("SystemExit", "0", {}, "tampering"),
    ("RuntimeError", "Expected all tensors to be on the same device, but found at least two devices, meta and cpu!",
     {}, "mask-device"),
    ("RuntimeError", "Expected all tensors to be on the same device, but found at least two devices, meta and cpu!",
     {"hardcoded-device": [{"line": 3, "text": "x.cuda()"}]}, "hardcoded-device"),
    ("RuntimeError", "Expected all tensors to be on the same device, but found at least two devices, meta and cpu!",
     {"mask-not-buffer": [{"line": 3, "text": "self.mask = m"}]}, "mask-not-buffer"),
    # the meta guard names the CPU operands' shapes: one value is a constant (a scale), a square is a mask
    ("RuntimeError", "Expected all tensors to be on the same device, but found at least two devices, meta and cpu! "
                     "(in div; shapes of the cpu operands: [1])", {}, "constant-device"),
    ("RuntimeError", "Expected all tensors to be on the same device, but found at least two devices, meta and cpu! "
                     "(in masked_fill; shapes of the cpu operands: [5, 5])", {}, "mask-device"),
    ("RuntimeError", "Expected all tensors to be on the same device, but found at least two devices, meta and cpu! "
                     "(in add; shapes of the cpu operands: [1, 1], [5, 5])", {}, "mask-device"),
]


@pytest.mark.parametrize("kind, message, static, mistake", CASES, ids=[f"{c[3]}-{i}" for i, c in enumerate(CASES)])
def test_an_error_points_to_its_mistake(kind, message, static, mistake):
    assert from_error({"type": kind, "message": message, "where": None}, static) == [mistake]


def test_torchs_own_meta_tensor_not_implemented_is_not_the_students_todo():
    assert from_error({"type": "NotImplementedError", "message": "Cannot copy out of meta tensor; no data!"}, {}) == []


def test_a_size_mismatch_is_an_unsliced_mask_only_at_max_seq_len():
    error = {"type": "RuntimeError",
             "message": f"The size of tensor a (5) must match the size of tensor b ({MAX_SEQ_LEN}) at dimension 3"}
    assert from_error(error, {}, max_seq_len=MAX_SEQ_LEN) == ["mask-not-sliced"]
    assert from_error(error, {}) == []
    assert from_error(error, {}, max_seq_len=MAX_SEQ_LEN + 1) == []


def test_an_unrecognised_error_names_no_mistake():
    assert from_error({"type": "ValueError", "message": "too many values to unpack (expected 2)"}, {}) == []


def test_every_mistake_diagnosis_can_name_is_in_the_catalog():
    assert {mistake for _, _, mistake in ERROR_RULES} <= set(catalog())


OUT_OF_RANGE = "Dimension out of range (expected to be in range of [-4, 3], but got {})"


def test_a_size_passed_as_softmax_dim_is_softmax_dim():
    """`softmax(scores, d_k)`: the key width where the dim belongs, in the call or inside the student's own softmax."""
    in_call = {"line": 9, "text": "attn = F.softmax(scores, d_k)", "function": "scaled_dot_product_attention"}
    in_own = {"line": 3, "text": "x = x - torch.max(x, dim=dim, keepdim=True).values", "function": "softmax"}
    for where in (in_call, in_own):
        assert from_error({"type": "IndexError", "message": OUT_OF_RANGE.format(8), "where": where}, {}) == ["softmax-dim"]


def test_an_axis_of_another_rank_is_not_softmax_dim():
    """`softmax(dim=3)` on 3-D input is an axis of another rank (hardcoded-dims when the text says so), and an
    out-of-range dim away from any softmax names nothing."""
    where = {"line": 9, "text": "attn = F.softmax(scores, dim=3)", "function": "scaled_dot_product_attention"}
    static = {"hardcoded-dims": [{"line": 9, "text": "attn = F.softmax(scores, dim=3)"}]}
    assert from_error({"type": "IndexError", "message": OUT_OF_RANGE.format(3), "where": where}, static) == ["hardcoded-dims"]
    elsewhere = {"line": 5, "text": "s = q.transpose(8, 9)", "function": "scaled_dot_product_attention"}
    assert "softmax-dim" not in from_error({"type": "IndexError", "message": OUT_OF_RANGE.format(8), "where": elsewhere}, {})


def test_a_row_the_variant_leaves_undefined_is_no_evidence():
    """mask-diagonal's row 0 is NaN (it sees nothing): a student who patched that row by hand still matches on the
    others, while the reference, which differs on every other row, does not."""
    import torch

    from grader.checks.diagnosis import close_where_defined

    nan = float("nan")
    variant = torch.tensor([[nan, nan, nan], [0.3, 0.7, 0.0], [0.2, 0.3, 0.5]])
    patched = torch.tensor([[1.0, 0.0, 0.0], [0.3, 0.7, 0.0], [0.2, 0.3, 0.5]])
    assert close_where_defined(patched, variant, 1e-6, 1e-6)
    assert not close_where_defined(torch.tensor([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.2, 0.3, 0.5]]), variant, 1e-6, 1e-6)
    assert close_where_defined(variant.clone(), variant, 1e-6, 1e-6), "NaN where the variant has NaN still matches"
    mostly_nan = torch.tensor([[nan, nan, nan], [nan, nan, nan], [0.2, 0.3, 0.5]])
    assert not close_where_defined(patched, mostly_nan, 1e-6, 1e-6), "one row left names nothing"


MISMATCH = {"type": "RuntimeError", "message": "Expected all tensors to be on the same device, but found at least two "
                                              "devices, meta and cpu! (in add; shapes of the cpu operands: [1, 1, 8, 8])"}


@pytest.mark.parametrize("line, made, named", [
    ("scores = scores + self.mask[:, :, :T, :T]", ["mask"], "mask-not-buffer"),  # a mask made at the first call
    ("scores = scores.masked_fill(mask == 0, -1e9)", ["attn"], "mask-device"),  # self.attn, kept for display: no mask
], ids=["read-there", "kept-for-display"])
def test_a_plain_attribute_a_call_made_is_the_mistake_only_where_the_failing_line_reads_it(line, made, named):
    from grader.checks.diagnosis import device_mistake

    error = {**MISMATCH, "where": {"line": 9, "text": line, "function": "forward"}}
    assert device_mistake({}, [], error, made_by_a_call=made) == named
    assert device_mistake({}, ["attn"], error) == "mask-not-buffer"  # one made at construction: as before
