"""Is every mutant of the `kv_cache` lab (tests/submissions/kv_cache/mutants/) labelled right?

A mutant is an honest file (its `# twin:`) with one mistake, headed `# expect: <mistake id>`. The lab's graders
will be held to name that id, so the label itself is proved here, without the grader: each id fails the property
its mistake breaks and still holds the ones its mistake leaves alone (tests/support/kv_cache_properties.py), and
where the reference can compute the mistake (`# computes:` flags of grader/exercises/kv_cache/reference.py), the
mutant computes exactly that."""
import difflib
import json
import re
from functools import cache

import pytest
import torch

from grader.catalog import FIX_FIRST, catalog
from grader.exercises.kv_cache import reference
from support.hand_ins import header
from support.kv_cache_properties import (HEADS, KV_HEADS, PROPERTIES, assert_close, cache_of, decoded, failure, load,
                                        model_of, tokens)
from support.paths import SUBMISSIONS

pytestmark = pytest.mark.unit

MUTANTS = sorted((SUBMISSIONS / "kv_cache" / "mutants").glob("*.py"))
STEPS = [5, 1, 3]  # a prompt, a token, a chunk

# id -> (the properties its mistake must break, the properties its mistake leaves alone); every mistake but the
# three that break the output's shape also leaves `implemented` and `output_shape` alone. Two ids alike here (the
# scales) are told apart by `# computes:`.
LABELS = {
    "not-implemented": ({"implemented"}, set()),
    "repeat-kv-order": ({"repeat", "prompt"}, {"cache", "causal", "plain_multi_head"}),
    "cache-mask-offset": ({"chunk"}, {"prompt", "kv_heads", "repeat", "cache"}),
    "cache-position": ({"cache"}, {"prompt", "kv_heads", "repeat", "cache_dtype"}),
    "cache-device": ({"cache_device"}, {"prompt", "decode", "chunk", "cache", "cache_dtype"}),
    "cache-dtype": ({"cache_dtype"}, {"prompt", "decode", "chunk", "repeat", "kv_heads"}),
    "cache-reallocated": ({"in_place"}, {"prompt", "decode", "chunk", "token_by_token", "cache", "cache_device"}),
    "mask-device": ({"model_device"}, {"prompt", "decode", "chunk", "cache", "cache_device"}),
    "mask-not-buffer": ({"moved_after_use"}, {"prompt", "decode", "chunk", "cache", "cache_device", "model_device"}),
    "kv-heads-ignored": ({"kv_heads"}, {"implemented", "plain_multi_head", "repeat", "cache"}),
    "wrong-scale": ({"prompt"}, {"single_position", "rows_sum_to_one", "finite", "causal", "repeat", "cache"}),
    "missing-scale": ({"prompt"}, {"single_position", "rows_sum_to_one", "finite", "causal", "repeat", "cache"}),
    "mask-diagonal": ({"single_position", "finite"}, {"causal", "repeat", "cache"}),
    "softmax-dim": ({"rows_sum_to_one"}, {"single_position", "finite", "repeat", "cache"}),
    "head-split": ({"causal", "prompt"}, {"token_by_token", "single_position", "rows_sum_to_one", "finite", "repeat",
                                          "cache"}),
    "mask-direction": ({"causal", "token_by_token"}, {"single_position", "rows_sum_to_one", "finite", "repeat",
                                                      "cache"}),
    "wrong-return": ({"output_shape", "plain_multi_head"}, {"implemented", "repeat", "cache", "cache_device"}),
    "missing-out-proj": ({"out_proj"}, {"causal", "finite", "repeat", "cache"}),
    "broken-grad": ({"grad"}, {"prompt", "decode", "chunk"}),
    "python-loop": ({"loop_free"}, {"prompt", "decode", "chunk", "grad"}),
    "forbidden-api": ({"no_builtin_attention"}, {"prompt", "decode", "chunk"}),
}
OUTPUT_SHAPE_BROKEN = {"not-implemented", "wrong-return", "kv-heads-ignored"}
LABELS = {mistake: (breaks, keeps | ({"implemented", "output_shape"} if mistake not in OUTPUT_SHAPE_BROKEN else set()))
          for mistake, (breaks, keeps) in LABELS.items()}
NEW_IDS = {"repeat-kv-order", "cache-mask-offset", "cache-position", "cache-device", "cache-dtype",
           "cache-reallocated", "kv-heads-ignored"}
COMPUTES = {  # `# computes:` -> the id whose mistake the reference computes with these flags, and the flags
    "tile=True": ("repeat-kv-order", {"tile": True}),
    "offset_mask=False": ("cache-mask-offset", {"offset_mask": False}),
    "scale_by=dim": ("wrong-scale", {"scale_by": "dim"}), "scale_by=one": ("missing-scale", {"scale_by": "one"})}
TOLD_APART_BY_COMPUTES = {"wrong-scale", "missing-scale"}
HEADER_LINE = re.compile(r"# [a-z]+: ")
MOST_CHANGED_LINES = 14  # a rewritten block of the attention, as python-loop's, is the largest single mistake


@cache
def names_of(path):
    return load(path)


@cache
def why_broken(path, prop):
    return failure(names_of(path), prop)


@pytest.mark.parametrize("path", MUTANTS, ids=[p.stem for p in MUTANTS])
def test_each_mutant_breaks_what_its_label_says_and_holds_the_rest(path):
    breaks, keeps = LABELS[header(path, "expect")]
    broken = {prop: why_broken(path, prop) for prop in breaks | keeps}
    assert [prop for prop in breaks if broken[prop] is None] == [], f"{path.name} holds what its mistake breaks"
    assert {prop: broken[prop] for prop in keeps if broken[prop]} == {}, \
        f"{path.name} breaks more than its mistake: is it labelled right?"


@pytest.mark.parametrize("path", MUTANTS, ids=[p.stem for p in MUTANTS])
def test_no_other_label_fits_a_mutant(path):
    """The rows are specific enough that a mutant given another id goes red (the scales: by `# computes:`)."""
    broken = {prop for prop in PROPERTIES if why_broken(path, prop)}
    fitting = {mistake for mistake, (breaks, keeps) in LABELS.items() if breaks <= broken and not keeps & broken}
    assert fitting - TOLD_APART_BY_COMPUTES == {header(path, "expect")} - TOLD_APART_BY_COMPUTES
    assert header(path, "expect") in fitting


@pytest.mark.parametrize("path", [p for p in MUTANTS if header(p, "computes")],
                         ids=[p.stem for p in MUTANTS if header(p, "computes")])
def test_a_mutant_the_reference_can_compute_computes_exactly_that(path):
    """Prompt, token and chunk, against the reference with the header's flags (and not without them)."""
    mistake, flags = COMPUTES[header(path, "computes")]
    assert header(path, "expect") == mistake, f"{path.name} computes {mistake}'s mistake"
    names = names_of(path)
    if "tile" in flags:
        x = torch.arange(2 * 3 * 4 * 5, dtype=torch.float64).view(2, 3, 4, 5)
        assert torch.equal(names["repeat_kv"](x, 2), reference.repeat_kv(x, 2, **flags))
    model, weights = model_of(names)
    x = tokens(2, sum(STEPS))
    got = decoded(model, cache_of(names), x, STEPS)
    assert_close(got, reference_decoded(x, weights, **flags), f"{path.name} against the reference's {flags}")
    assert not torch.allclose(got, reference_decoded(x, weights), atol=1e-3), "the flags made no difference"


def reference_decoded(x, weights, **flags):
    cache_k = torch.zeros(4, KV_HEADS, 16, x.size(-1) // HEADS, dtype=torch.float64)
    cache_v, outputs, start = cache_k.clone(), [], 0
    for length in STEPS:
        step = reference.gqa_forward(x[:, start:start + length], weights, HEADS, KV_HEADS, cache_k, cache_v, start,
                                     **flags)
        outputs, cache_k, cache_v, start = outputs + [step.y.float()], step.cache_k, step.cache_v, start + length
    return torch.cat(outputs, dim=1)


@pytest.mark.parametrize("path", [p for p in MUTANTS if header(p, "twin")],
                         ids=[p.stem for p in MUTANTS if header(p, "twin")])
def test_each_mutant_is_its_honest_twin_with_one_mistake(path):
    twin = (path.parent / header(path, "twin")).resolve()
    assert twin.parent.name == "correct" and twin.is_file(), f"{path.name}: no honest twin {twin}"
    lines = path.read_text(encoding="utf-8").splitlines()
    body = lines[next(i for i, line in enumerate(lines) if not HEADER_LINE.match(line)):]
    honest = twin.read_text(encoding="utf-8").splitlines()[1:]  # without its `# style:` line
    changed = [line for line in difflib.ndiff(honest, body) if line[:1] in "+-"]
    assert 0 < len(changed) <= MOST_CHANGED_LINES, f"{path.name} differs from {twin.name} by {len(changed)} lines"


def test_every_mutant_is_headed_and_named_by_its_id():
    for path in MUTANTS:
        assert header(path, "computes") or header(path, "expect") not in TOLD_APART_BY_COMPUTES, path.name
        assert header(path, "expect") == path.stem.split("__")[0], path.name
        assert header(path, "part") in ("repeat", "cache", "gqa"), path.name
        assert len(header(path, "why") or "") > 20, f"{path.name} does not say why"
        assert header(path, "twin") or header(path, "expect") == "not-implemented", f"{path.name} has no twin"


def test_every_mistake_of_the_lab_has_a_mutant_and_a_row():
    labelled = {header(path, "expect") for path in MUTANTS}
    assert labelled == set(LABELS)
    assert NEW_IDS <= labelled
    python_loops = [header(p, "why") for p in MUTANTS if header(p, "expect") == "python-loop"]
    assert any("heads" in why for why in python_loops) and any("positions" in why for why in python_loops)
    positions = [header(p, "why") for p in MUTANTS if header(p, "expect") == "cache-position"]
    assert any("written at" in why for why in positions) and any("reads" in why for why in positions)


def test_the_labs_new_ids_are_in_the_catalog_shaped_as_the_others():
    """Every part of the lab has graders, so each of its new ids is in grader/mistakes.json (it waited in a draft
    until a grader named it): the catalog's keys and groups, both languages, and every id of the lab's mutants."""
    keys = set(catalog()["mask-diagonal"])
    for mistake in sorted(NEW_IDS):
        entry = catalog()[mistake]
        assert set(entry) == keys and entry["fix_first"] in FIX_FIRST, mistake
        assert all(any("\u4e00" <= ch <= "\u9fff" for ch in entry[f"{key}_zh"]) for key in ("title", "explain", "fix"))
        assert all(entry[f"{key}_en"].strip() and entry[f"{key}_en"] != entry[f"{key}_zh"]
                   for key in ("title", "explain", "fix")), mistake
    assert {header(path, "expect") for path in MUTANTS} <= set(catalog())
