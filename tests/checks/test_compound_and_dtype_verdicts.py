"""Are compound value bugs named one by one from the graph, and is a mask that changes float16's dtype charged, with
the score each costs; and do the honest float16-safe twins keep full marks?

The reconstructions of issue 43 (each file's first line names where its pattern was seen): keys projected from the
projected queries with the scale multiplied; heads viewed straight to (B, H, T, d) with the key projection reused
for the values; an additive mask made as float32 in each part; NumPy's finfo of the scores' dtype read through a copy
to the CPU (ESPnet's idiom), and its hostile twin that keeps the mask itself on the CPU. Their scores and ids are
written here as literals.
"""
import pytest

from support.paths import SUBMISSIONS

pytestmark = pytest.mark.sandbox

MUTANTS, CORRECT = SUBMISSIONS / "mutants", SUBMISSIONS / "correct"
VERDICTS = {
    # mha.values (2) and the three checks that need its values (0.5 + 1 + 1) are lost; mha.dropout (1) holds: both
    # layers are called, though attn_dropout's pattern, read through the reference's weights, cannot be read here
    MUTANTS / "wrong-input__7.py": (15.5, {"wrong-input", "wrong-scale"}),
    # the same four, and mha.causal_no_leak (1): split heads mix positions, so the future leaks; both dropouts are
    # called (mha.dropout holds)
    MUTANTS / "head-split__6.py": (14.5, {"wrong-input", "head-split"}),
    MUTANTS / "mask-dtype.py": (19.0, {"mask-dtype"}),  # sdpa.low_precision (1): raises in float16
    MUTANTS / "mask-dtype__3.py": (19.0, {"mask-dtype"}),  # sdpa.low_precision (1): weights come back in float32
    MUTANTS / "mask-dtype__4.py": (19.5, {"mask-dtype"}),  # mha.low_precision (0.5): raises in float16
    # a module-level float32 mask moved to the scores' device only (it was a correct style until float16 was charged)
    MUTANTS / "mask-dtype__5.py": (19.5, {"mask-dtype"}),
    CORRECT / "module_level_mask_sliced_per_call.py": (20.0, set()),  # the same mask moved to the scores' dtype too
    CORRECT / "projected_key_twin_prescaled_query.py": (20.0, set()),
    CORRECT / "head_split_twin_reshape_transpose.py": (20.0, set()),
    CORRECT / "additive_mask_in_the_scores_dtype.py": (20.0, set()),
    CORRECT / "additive_float_mask_cast_to_scores.py": (20.0, set()),
    # `.cpu()` of a stand-in's tensor is answered with the values a GPU copies: the dtype NumPy reads costs nothing
    CORRECT / "numpy_finfo_through_a_cpu_copy.py": (20.0, set()),
    MUTANTS / "hardcoded-device__4.py": (19.5, {"hardcoded-device"}),  # sdpa.device (0.5): masked_fill meets a CPU mask
}


@pytest.mark.parametrize("path", VERDICTS, ids=[f"{p.parent.name}/{p.stem}" for p in VERDICTS])
def test_each_reconstruction_gets_its_score_and_exactly_its_ids(graded, path):
    score, ids = VERDICTS[path]
    report = graded(path)
    assert (report["score"], set(report["mistakes"]), report["advice"]) == (score, ids, []), report["mistakes"]


def test_ids_read_from_the_graph_are_said_to_be_read_from_the_graph_in_both_languages(graded):
    zh = next(c for c in graded(MUTANTS / "wrong-input__7.py", "zh")["checks"] if c["id"] == "mha.values")
    en = next(c for c in graded(MUTANTS / "wrong-input__7.py")["checks"] if c["id"] == "mha.values")
    assert "代码的计算图与参考实现的不同之处指出了这些错误" in zh["message"]
    assert "where the code's graph differs from the reference's names them" in en["message"]


def test_a_changed_float16_dtype_costs_the_check_and_says_float16_is_graded(graded):
    check = next(c for c in graded(MUTANTS / "mask-dtype.py")["checks"] if c["id"] == "sdpa.low_precision")
    assert (check["passed"], check["points"], check["mistakes"]) == (False, 0.0, ["mask-dtype"])
    assert "float16 is graded" in check["message"]
