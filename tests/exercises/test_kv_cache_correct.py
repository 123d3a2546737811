"""Does every honest hand-in of the `kv_cache` lab (tests/submissions/kv_cache/correct/) hold every property the
lab promises, measured against the float64 reference (tests/support/kv_cache_properties.py)?

These files are what the lab's graders will be held to: a grader that takes a point from one of them is wrong,
so each must first be shown right here, without the grader."""
import re

import pytest

from support.hand_ins import header
from support.kv_cache_properties import PROPERTIES, failure, load
from support.paths import SUBMISSIONS

pytestmark = pytest.mark.unit

CORRECT = sorted((SUBMISSIONS / "kv_cache" / "correct").glob("*.py"))
ON_META = {"model_device", "moved_after_use"}
"""The properties run on the meta device, which has no values: a file that reads one (`# reads-values:`, Mistral's
`positions[-1].item()`) is held to them by the grader alone, whose stand-ins answer the read
(tests/checks/test_kv_cache_cache.py::test_every_honest_kv_cache_scores_the_full_six_points)."""
IDIOMS = {  # a sample of what the files must spell, so that the styles stay different
    "repeat_interleave": "repeat_interleave(", "expand + reshape": ".expand(", "a head map": "[:, head_map]",
    "index_copy_": ".index_copy_(", "narrow(...).copy_": ".narrow(2, start_pos, T).copy_(",
    "a dataclass cache": "@dataclass\nclass KVCache", "an nn.Module cache": "class KVCache(nn.Module)",
    "register_buffer": "register_buffer(\"cache_k\"", "einsum": "torch.einsum(", "the @ operator": " @ ",
    "-inf": 'float("-inf")', "finfo.min": "finfo(scores.dtype).min", "masked_fill": ".masked_fill(",
    "triu(diagonal=start_pos + 1)": "triu(diagonal=start_pos + 1)", "arange comparisons": "torch.arange(S",
    "the provided attention when start_pos == 0": "scaled_dot_product_attention(q, k, v",
    "Tensor.softmax": ".softmax(dim=-1)", "F.softmax": "F.softmax(", "in-place masked_fill_": ".masked_fill_(",
}


@pytest.mark.parametrize("path", CORRECT, ids=[p.stem for p in CORRECT])
@pytest.mark.parametrize("prop", list(PROPERTIES))
def test_every_honest_hand_in_holds_every_property(path, prop):
    if prop in ON_META and header(path, "reads-values"):
        pytest.skip(f"{path.name} reads a value, which the meta device has not: {header(path, 'reads-values')}")
    why = failure(load(path), prop)
    assert why is None, f"{path.name} fails {prop}: {why}"


def test_there_are_ten_honest_styles_each_saying_what_it_shows():
    assert len(CORRECT) >= 10
    for path in CORRECT:
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith("# style: ") and len(first) > 40, path.name


def test_the_styles_between_them_spell_every_idiom_the_lab_must_accept():
    texts = [path.read_text(encoding="utf-8") for path in CORRECT]
    assert [idiom for idiom, spelling in IDIOMS.items() if not any(spelling in text for text in texts)] == []


def test_no_honest_style_loops_in_python():
    """A loop or comprehension over heads or positions is the python-loop mistake, not a style (whole copies,
    `[x] * n_rep`, are not a loop)."""
    assert [p.name for p in CORRECT if re.search(r"\bfor \w+ in\b", p.read_text(encoding="utf-8"))] == []
