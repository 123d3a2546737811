"""Do the kv_cache lab's Part 2 graders (grader/checks/cache/) give every honest `KVCache` its 6 points and name each
mistake of the Part 2 mutants, in Chinese and in English?

Graded through the real pipeline (`grade_submission`: the worker builds the cache and records each update on decoys,
the judge threads the buffers step to step on the parent's own k and v, from the zeros the constructor's graph gives
there); each repository hand-in graded whole once and read for Part 2's checks (tests/support/part_views.py).
"""
import functools
import re
from pathlib import Path

import pytest

from grader.catalog import catalog, explain
from grader.checks import checks_for, secret
from grader.exercises import exercise
from grader.grade import grade_submission
from support import part_views
from support.hand_ins import header
from support.paths import SUBMISSIONS

pytestmark = pytest.mark.sandbox

KV_CACHE = SUBMISSIONS / "kv_cache"
CORRECT = sorted((KV_CACHE / "correct").glob("*.py"))
MUTANTS = [path for path in sorted((KV_CACHE / "mutants").glob("*.py")) if header(path, "part") == "cache"]
STUBS = KV_CACHE / "mutants" / "not-implemented.py"  # the notebook's three stubs, untouched
PLAIN = KV_CACHE / "correct" / "repeat_interleave_slice_plain.py"
PLAIN_UPDATE = """        B, _, T, _ = k.shape
        self.cache_k[:B, :, start_pos:start_pos + T] = k
        self.cache_v[:B, :, start_pos:start_pos + T] = v
        return self.cache_k[:B, :, :start_pos + T], self.cache_v[:B, :, :start_pos + T]"""
PLAIN_BUFFERS = """        self.cache_k = torch.zeros(shape, device=device, dtype=dtype)
        self.cache_v = torch.zeros(shape, device=device, dtype=dtype)"""


@functools.cache
def graded(path: Path) -> dict:
    return part_views.report(path, "cache")


def failures(report: dict) -> str:
    return "\n".join(f"{c['id']} {c['mistakes']}: {c['message_en'][:600]}" for c in report["checks"] if not c["passed"])


def failed_checks(report: dict) -> dict[str, list[str]]:
    return {c["id"]: c["mistakes"] for c in report["checks"] if not c["passed"]}


def message(report: dict, check_id: str) -> str:
    return next(c["message_en"] for c in report["checks"] if c["id"] == check_id)


@pytest.mark.parametrize("path", CORRECT, ids=[p.stem for p in CORRECT])
def test_every_honest_kv_cache_scores_the_full_six_points(path):
    report = graded(path)
    assert report["score"] == report["max_score"] == 6.0, failures(report)
    assert report["mistakes"] == []
    assert {c["part"] for c in report["checks"]} == {"cache", "integrity"}


@pytest.mark.parametrize("path", MUTANTS, ids=[p.stem for p in MUTANTS])
def test_a_part_two_mutant_loses_points_with_its_mistake_named_in_both_languages(path):
    expected = header(path, "expect")
    report = graded(path)
    assert report["score"] < 6.0, f"{path.name} got full marks"
    assert report["mistakes"] == [expected], f"{path.name}: expected {expected} alone\n{failures(report)}"
    naming = [c for c in report["checks"] if expected in c["mistakes"]]
    assert naming and all(not c["passed"] for c in naming)
    for check in naming:
        zh, en = check["message_zh"].splitlines(), check["message_en"].splitlines()
        assert any("\u4e00" <= ch <= "\u9fff" for ch in zh[0]) and en[0] != zh[0], check["id"]
        assert explain(expected, "zh") in zh and explain(expected, "en") in en, check["id"]


def test_a_write_at_the_wrong_position_says_where_it_landed():
    report = graded(KV_CACHE / "mutants" / "cache-position.py")  # every call writes at [0, T)
    assert failed_checks(report) == {"cache.update": ["cache-position"]}
    update = message(report, "cache.update")
    assert "update #2 (start_pos=" in update and "entry belongs at [" in update and "found at [0]" in update
    assert "实际写到了 [0]" in next(c["message_zh"] for c in report["checks"] if c["id"] == "cache.update")


def test_a_read_past_what_was_written_costs_the_shapes_and_values_alone():
    """Returning one position more is the read's mistake: the buffers, the device and the loops are judged apart."""
    report = graded(KV_CACHE / "mutants" / "cache-position__4.py")
    assert failed_checks(report) == {"cache.shapes": ["cache-position"], "cache.update": ["cache-position"]}
    assert "reads positions never written" in message(report, "cache.shapes")
    assert report["score"] == 2.5


def test_buffers_made_without_device_cost_the_device_point_alone():
    report = graded(KV_CACHE / "mutants" / "cache-device.py")
    assert failed_checks(report) == {"cache.device": ["cache-device"]}
    assert "made cache_k on cpu" in message(report, "cache.device")


def test_every_row_of_the_cache_returned_is_named_a_read_past_what_was_written(tmp_path):
    """update returning all max_batch_size rows where it wrote B: `cache-position` (rows [:B]), not `wrong-return`
    (an independently written bug of the second lab)."""
    report = graded(with_cache(tmp_path, "every_row_returned", update=PLAIN_UPDATE.replace(
        "        return self.cache_k[:B, :, :start_pos + T], self.cache_v[:B, :, :start_pos + T]",
        "        return self.cache_k[:, :, :start_pos + T], self.cache_v[:, :, :start_pos + T]")))
    assert failed_checks(report).get("cache.shapes") == ["cache-position"], failures(report)
    assert "rows of the cache, expected rows [:B]" in message(report, "cache.shapes")


def test_a_write_that_fails_on_the_cpu_too_is_no_device_question(tmp_path):
    """Every row written (`cache_k[:, :, ...] = k`) fails for 1 < B < max_batch_size wherever it runs: cache.device is a
    cascade of cache.shapes' finding, not `device-not-judged` with advice about `.item()` and `assert` (an
    independently written bug of the second lab)."""
    report = graded(with_cache(tmp_path, "every_row_written", update=PLAIN_UPDATE.replace(
        "        self.cache_k[:B, :, start_pos:start_pos + T] = k\n        self.cache_v[:B, :, start_pos:start_pos + T] = v",
        "        self.cache_k[:, :, start_pos:start_pos + T] = k\n        self.cache_v[:, :, start_pos:start_pos + T] = v")))
    device = next(c for c in report["checks"] if c["id"] == "cache.device")
    assert not device["passed"] and device["mistakes"] == [], failures(report)
    assert "fails on the CPU too" in device["message_en"] and "device-not-judged" not in report["mistakes"]


def test_a_value_the_buffers_hold_is_never_answered_on_a_stand_in(tmp_path):
    """On a stand-in a read of k, v or of positions made from start_pos is answered with the value a GPU computes
    (Mistral's `positions[-1].item()`: honest, kv_cache/correct/positions_tensor_read_back_with_item.py), a read of
    the buffers never: the worker has no values for them after a step there, and any it made up would send the code
    down a path a GPU does not take. Here the buffers' first entry (nonzero on a GPU once the prompt is written)
    picks a CPU tensor that a GPU refuses; answered as zero, the stand-in would pay the device point."""
    report = graded(with_cache(tmp_path, "device_picked_by_the_buffers", update=(
        "        B, _, T, _ = k.shape\n"
        "        where = k.device if self.cache_k[0, 0, 0, 0].item() == 0 else \"cpu\"\n"
        "        k = k + torch.zeros(T, 1, dtype=k.dtype, device=where)\n"
        "        self.cache_k[:B, :, start_pos:start_pos + T] = k\n"
        "        self.cache_v[:B, :, start_pos:start_pos + T] = v\n"
        "        return self.cache_k[:B, :, :start_pos + T], self.cache_v[:B, :, :start_pos + T]")))
    assert "cache.device" in failed_checks(report), failures(report)
    assert report["score"] < 6.0


WHERE_THE_KEYS_GO = (
    "        k = k + torch.zeros(T, 1, dtype=k.dtype, device=where)  # a CPU tensor, which a GPU refuses beside k\n"
    + PLAIN_UPDATE.split("\n", 1)[1])


@pytest.mark.parametrize("name, tell", [
    # the flag's second entry written through a view: a replay without that write read the flag as it was made
    pytest.param("told_by_a_write_through_a_view",
                 "        flag = torch.zeros(2, device=k.device)\n"
                 "        flag[1:].fill_(1)\n"
                 "        where = k.device if flag.sum().item() == 0 else \"cpu\"\n", id="told_by_a_write_through_a_view"),
    # the replay draws from a generator of its own, the same first number every time: a GPU draws from its own state
    pytest.param("told_by_a_random_draw",
                 "        where = k.device if abs(torch.rand(1, device=k.device).item() - 0.49625658988952637) < 1e-9 "
                 "else \"cpu\"\n", id="told_by_a_random_draw"),
])
def test_a_read_on_a_stand_in_is_answered_as_a_gpu_computes_it_or_not_at_all(tmp_path, name, tell):
    """Red team on the second lab: a value read on the stand-ins sent the code down a path a GPU never takes, and the
    stand-ins paid the device point for a cache that a GPU refuses (20 against 19). A read is answered with every write
    into the memory it reads (the recorder binds an in-place result to the view it was made through), and never where it
    rests on a random draw."""
    report = graded(with_cache(tmp_path, name, "        B, _, T, _ = k.shape\n" + tell + WHERE_THE_KEYS_GO))
    assert "cache.device" in failed_checks(report), failures(report)
    assert "IndexError" not in message(report, "cache.device")  # an untraceable step ends the chain, named as such


def test_a_cpu_count_added_to_from_the_device_is_no_operand_a_gpu_lets_stay_behind(tmp_path):
    """A 0-dim CPU tensor written in place from a GPU tensor (`total += loss`): a GPU raises, because a CPU scalar may
    stay behind only as an operand; the stand-ins let it through (red team on the second lab: 20 against 19)."""
    report = graded(with_cache(tmp_path, "cpu_count", "        self.count.add_(k.new_ones(()))\n" + PLAIN_UPDATE,
                               PLAIN_BUFFERS + "\n        self.count = torch.zeros(())"))
    assert "cache.device" in failed_checks(report), failures(report)


def test_a_read_one_past_only_late_in_the_cache_is_read_there(tmp_path):
    """One position too many returned only from position 28 on (red team on the second lab: 20 against 16.5, the chains
    ended by 27): a chain now ends one short of max_seq_len."""
    late = PLAIN_UPDATE.replace("return self.cache_k[:B, :, :start_pos + T], self.cache_v[:B, :, :start_pos + T]",
                                "end = start_pos + T + (1 if start_pos + T >= 28 else 0)\n"
                                "        return self.cache_k[:B, :, :end], self.cache_v[:B, :, :end]")
    report = graded(with_cache(tmp_path, "late_read_past", late))
    assert failed_checks(report).get("cache.update") == ["cache-position"], failures(report)


def test_the_untouched_stubs_score_zero_with_not_implemented():
    report = graded(STUBS)
    assert report["score"] == 0.0
    assert "not-implemented" in report["mistakes"]
    assert all(not c["passed"] for c in report["checks"] if c["max_points"] > 0)


@pytest.mark.unit
def test_part_two_is_declared_with_six_points_in_public_and_hidden_checks():
    checks = checks_for("cache")
    assert sum(c.points for c in checks) == exercise("kv_cache").part["cache"].points == 6.0
    assert {c.visibility for c in checks} == {"public", "hidden"}
    assert {c.id for c in checks if c.gate} == {"cache.own_implementation", "cache.rules"}
    assert len({c.id for c in checks}) == len(checks) == 7


@pytest.mark.unit
def test_the_ids_part_two_names_are_in_the_catalog():
    assert {header(path, "expect") for path in MUTANTS} <= set(catalog())


def with_cache(tmp_path: Path, name: str, update: str = PLAIN_UPDATE, buffers: str = PLAIN_BUFFERS) -> Path:
    """The plain honest hand-in with KVCache's buffers or update body replaced (its other parts unchanged)."""
    source = PLAIN.read_text(encoding="utf-8")
    assert source.count(PLAIN_UPDATE) == 1 and source.count(PLAIN_BUFFERS) == 1
    path = tmp_path / f"{name}.py"
    path.write_text(source.replace(PLAIN_UPDATE, update).replace(PLAIN_BUFFERS, buffers), encoding="utf-8")
    return path


@pytest.mark.parametrize("name, update, buffers", [
    ("index_put_at_a_tensor_of_positions",
     "        B, _, T, _ = k.shape\n"
     "        positions = torch.arange(start_pos, start_pos + T, device=k.device)\n"
     "        self.cache_k[:B, :, positions] = k\n"
     "        self.cache_v[:B, :, positions] = v\n"
     "        return self.cache_k[:B, :, :start_pos + T], self.cache_v[:B, :, :start_pos + T]", PLAIN_BUFFERS),
    ("keys_and_values_the_two_halves_of_one_buffer", PLAIN_UPDATE,
     "        self.cache_k, self.cache_v = torch.zeros((2, *shape), device=device, dtype=dtype).unbind(0)"),
    ("returns_copies_of_what_the_buffers_hold",
     PLAIN_UPDATE.replace("return self.cache_k[:B, :, :start_pos + T], self.cache_v[:B, :, :start_pos + T]",
                          "return self.cache_k[:B, :, :start_pos + T].clone(), self.cache_v[:B, :, :start_pos + T].clone()"),
     PLAIN_BUFFERS),
])
def test_other_honest_writes_keep_full_marks(tmp_path, name, update, buffers):
    report = graded(with_cache(tmp_path, name, update, buffers))
    assert report["score"] == 6.0, failures(report)


def test_a_cache_that_reallocates_at_every_update_loses_the_in_place_point_alone(tmp_path):
    """Right values, but the buffers replaced by torch.cat results each step: not the preallocated cache written in
    place that the interface promises."""
    report = graded(with_cache(tmp_path, "reallocated", "        B, _, T, _ = k.shape\n"
                               "        end = start_pos + T\n"
                               "        k = torch.cat([k, self.cache_k[B:, :, start_pos:end]])\n"
                               "        v = torch.cat([v, self.cache_v[B:, :, start_pos:end]])\n"
                               "        old_k, old_v = self.cache_k, self.cache_v\n"
                               "        self.cache_k = torch.cat([old_k[:, :, :start_pos], k, old_k[:, :, end:]], dim=2)\n"
                               "        self.cache_v = torch.cat([old_v[:, :, :start_pos], v, old_v[:, :, end:]], dim=2)\n"
                               "        return self.cache_k[:B, :, :end], self.cache_v[:B, :, :end]"))
    assert failed_checks(report) == {"cache.in_place": ["cache-reallocated"]}, failures(report)
    assert "are new tensors, not the preallocated buffers written in place" in message(report, "cache.in_place")
    assert report["mistakes"] == ["cache-reallocated"]
    assert report["score"] == 5.0


def test_buffers_given_new_storage_with_set__are_reallocated_too(tmp_path):
    """`cache_k.set_(torch.cat(...))` keeps the tensor object and hands it a new storage every step: an operator in place
    that writes nothing into the buffer (red team on the second lab)."""
    report = graded(with_cache(tmp_path, "set_storage", "        B, _, T, _ = k.shape\n"
                               "        end = start_pos + T\n"
                               "        k = torch.cat([self.cache_k[:B, :, :start_pos], k, self.cache_k[:B, :, end:]], dim=2)\n"
                               "        v = torch.cat([self.cache_v[:B, :, :start_pos], v, self.cache_v[:B, :, end:]], dim=2)\n"
                               "        self.cache_k.set_(torch.cat([k, self.cache_k[B:]]))\n"
                               "        self.cache_v.set_(torch.cat([v, self.cache_v[B:]]))\n"
                               "        return self.cache_k[:B, :, :end], self.cache_v[:B, :, :end]"))
    assert failed_checks(report) == {"cache.in_place": ["cache-reallocated"]}, failures(report)


def test_keys_returned_by_concatenation_with_the_buffers_untouched_earn_neither_values_nor_in_place(tmp_path):
    report = graded(with_cache(tmp_path, "untouched", "        B, _, T, _ = k.shape\n"
                               "        keys = torch.cat([self.cache_k[:B, :, :start_pos], k], dim=2)\n"
                               "        values = torch.cat([self.cache_v[:B, :, :start_pos], v], dim=2)\n"
                               "        return keys, values"))
    failed = failed_checks(report)
    assert set(failed) == {"cache.update", "cache.in_place"} and failed["cache.update"] == ["cache-position"]
    assert "does not hold" in message(report, "cache.in_place")


def test_keys_kept_outside_the_buffers_are_the_workers_constants_and_wrong(tmp_path):
    """Keys concatenated in an attribute of the cache reach the next step's graph as constants: the decoys' keys,
    which the parent's k and v never met."""
    report = graded(with_cache(tmp_path, "kept", PLAIN_UPDATE.replace(
        "        return self.cache_k[:B, :, :start_pos + T], self.cache_v[:B, :, :start_pos + T]",
        "        if start_pos == 0:\n"
        "            self.kept = (k, v)\n"
        "        else:\n"
        "            self.kept = tuple(torch.cat([old, new], dim=2) for old, new in zip(self.kept, (k, v)))\n"
        "        return self.kept")))
    assert {"cache.update", "cache.in_place"} <= set(failed_checks(report)), failures(report)
    assert report["score"] <= 2.5


def test_a_position_counted_by_the_cache_in_place_of_start_pos_fails_when_a_new_prompt_starts_at_zero(tmp_path):
    report = graded(with_cache(tmp_path, "counted", "        B, _, T, _ = k.shape\n"
                               "        start_pos = getattr(self, 'written', 0)\n"
                               "        self.written = start_pos + T\n" + PLAIN_UPDATE.split("\n", 1)[1]))
    assert failed_checks(report).get("cache.update") == ["cache-position"], failures(report)
    assert "update #7 (start_pos=" in message(report, "cache.update")  # the token generated again


def test_a_write_wrong_only_from_position_16_on_is_read_there(tmp_path):
    """Right at the first positions, one place off from start_pos 16 on (red team on the second lab: 20 against 17.5):
    the long chunk and the token after it reach past position 16."""
    report = graded(with_cache(tmp_path, "late_positions", "        B, _, T, _ = k.shape\n"
                               "        start_pos = start_pos + 1 if start_pos >= 16 else start_pos\n"
                               + PLAIN_UPDATE.split("\n", 1)[1]))
    assert failed_checks(report).get("cache.update") == ["cache-position"], failures(report)


def test_a_position_counted_by_the_cache_and_reset_at_zero_fails_where_a_token_is_generated_again(tmp_path):
    """start_pos read only to start again at 0 (red team on the second lab: 20 with every chain contiguous)."""
    report = graded(with_cache(tmp_path, "counted_reset", "        B, _, T, _ = k.shape\n"
                               "        start_pos = 0 if start_pos == 0 else getattr(self, 'written', 0)\n"
                               "        self.written = start_pos + T\n" + PLAIN_UPDATE.split("\n", 1)[1]))
    assert failed_checks(report).get("cache.update") == ["cache-position"], failures(report)
    assert "update #7 (start_pos=" in message(report, "cache.update")


def test_an_index_made_on_the_cpu_in_update_is_named_as_a_constant_off_the_device(tmp_path):
    """index_copy_ takes its index on the buffer's device: one made without device= costs the device point, named as
    the tensor update made on the CPU, never as a mask (red team on the second lab: it read `mask-not-buffer`, as the
    text's finding on a plain class's buffers)."""
    report = graded(with_cache(tmp_path, "cpu_index", "        B, _, T, _ = k.shape\n"
                               "        positions = torch.arange(start_pos, start_pos + T)\n"
                               "        self.cache_k[:B].index_copy_(2, positions, k)\n"
                               "        self.cache_v[:B].index_copy_(2, positions, v)\n"
                               "        return self.cache_k[:B, :, :start_pos + T], self.cache_v[:B, :, :start_pos + T]"))
    assert failed_checks(report) == {"cache.device": ["constant-device"]}, failures(report)


def test_a_write_one_position_at_a_time_is_a_python_loop(tmp_path):
    report = graded(with_cache(tmp_path, "loop", "        B, _, T, _ = k.shape\n"
                               "        for t in range(T):\n"
                               "            self.cache_k[:B, :, start_pos + t] = k[:, :, t]\n"
                               "            self.cache_v[:B, :, start_pos + t] = v[:, :, t]\n"
                               "        return self.cache_k[:B, :, :start_pos + T], self.cache_v[:B, :, :start_pos + T]"))
    assert failed_checks(report) == {"cache.vectorized": ["python-loop"]}, failures(report)
    assert report["score"] == 5.5


LOOPS_SOMETIMES = {
    "at start_pos 0 only": "start_pos == 0",
    "below max_batch_size only": "B < self.cache_k.size(0)",
}
"""A write one position at a time only where a probe might not look (red team on the second lab: 20 against 19.5)."""


@pytest.mark.parametrize("when", LOOPS_SOMETIMES.values(), ids=LOOPS_SOMETIMES.keys())
def test_a_loop_taken_only_at_some_positions_or_batches_is_a_python_loop(tmp_path, when):
    report = graded(with_cache(tmp_path, "loop_sometimes", "        B, _, T, _ = k.shape\n"
                               f"        if {when}:\n"
                               "            for t in range(T):\n"
                               "                self.cache_k[:B, :, start_pos + t] = k[:, :, t]\n"
                               "                self.cache_v[:B, :, start_pos + t] = v[:, :, t]\n"
                               "            return self.cache_k[:B, :, :start_pos + T], self.cache_v[:B, :, :start_pos + T]\n"
                               + PLAIN_UPDATE.split("\n", 1)[1]))
    assert failed_checks(report) == {"cache.vectorized": ["python-loop"]}, failures(report)


@pytest.mark.parametrize("alias", ["self.cache_k", "self.cache_k[:]"], ids=["the same tensor", "an overlapping view"])
def test_buffers_that_share_memory_are_refused_with_what_to_do(tmp_path, alias):
    """Keys and values written into one memory: the parent runs each buffer on a copy of its own, and would find the
    code right there. Refused, saying why."""
    report = graded(with_cache(tmp_path, "shared", buffers=PLAIN_BUFFERS.replace(
        "        self.cache_v = torch.zeros(shape, device=device, dtype=dtype)", f"        self.cache_v = {alias}")))
    assert report["score"] == 0.0, failures(report)
    assert "KVCache.cache_k and KVCache.cache_v share memory" in message(report, "cache.shapes")


def test_values_taken_out_to_python_earn_nothing(tmp_path):
    """k.tolist() answers from the decoys the worker traced on: the graph does not follow the parent's inputs."""
    report = graded(with_cache(tmp_path, "python_values", "        k = torch.tensor(k.tolist(), dtype=k.dtype)\n"
                               + PLAIN_UPDATE))
    assert report["score"] == 0.0 and "untraceable" in report["mistakes"], failures(report)


def test_a_write_placed_by_what_the_cache_holds_is_named_where_a_position_is_written_again(tmp_path):
    """The position counted from the buffer's values (the count goes to Python): the step is replayed on other
    buffers and k that keep the buffers' unwritten zeros (grader/sandbox/replay.py), where the count is the same, so
    the graph stands for the code; the chain writes an earlier position again, where the count is not the start, and
    the code is named for it (before the replay kept the zeros, it was untraceable: reviewed by hand)."""
    report = graded(with_cache(tmp_path, "counted_from_values", "        B, _, T, _ = k.shape\n"
                               "        start_pos = int((self.cache_k[0, 0].abs().sum(-1) != 0).sum())\n"
                               + PLAIN_UPDATE.split("\n", 1)[1]))
    assert "cache-position" in failed_checks(report)["cache.update"], failures(report)
    assert report["score"] < report["max_score"]


def test_an_import_in_update_breaks_the_rules_and_zeroes_the_part(tmp_path):
    report = graded(with_cache(tmp_path, "import_os", "        import os\n" + PLAIN_UPDATE))
    assert report["score"] == 0.0
    assert failed_checks(report)["cache.rules"] == ["forbidden-import"]


@pytest.mark.parametrize("layer", ["every rule on", "only the judge"])
def test_the_built_in_attention_in_update_zeroes_the_part(tmp_path, request, layer):
    """The static rule, the worker's refusal or, with both off, the judge reading the graph: the part scores 0."""
    path = with_cache(tmp_path, "built_in", "        F.scaled_dot_product_attention(k, k, v)\n" + PLAIN_UPDATE)
    if layer == "only the judge":
        request.getfixturevalue("rules_bypassed")
        report = grade_submission(path, checks=checks_for("cache"))  # afresh: the cache's key holds no switch
        assert failed_checks(report)["cache.own_implementation"] == ["forbidden-api"]
    else:
        report = graded(path)
        assert failed_checks(report)["cache.rules"] == ["forbidden-api"]
    assert report["score"] == 0.0


def test_buffers_that_start_other_than_zero_cost_the_shapes_point(tmp_path):
    """Every position update returns has been written, so only the constructor's own graph shows the ones."""
    report = graded(with_cache(tmp_path, "ones", buffers=PLAIN_BUFFERS.replace("torch.zeros", "torch.ones")))
    assert failed_checks(report) == {"cache.shapes": []}, failures(report)
    assert "nonzero elements; it should be all zeros" in message(report, "cache.shapes")


@pytest.mark.parametrize("name", ["correct/head_map_module_buffers_narrow_einsum", "mutants/cache-position__2",
                                  "mutants/cache-device__2"])
def test_the_verdict_is_the_same_under_two_grading_secrets(monkeypatch, name):
    """Sizes and values are drawn per grading (grader/checks/secret.py): none may change a verdict."""
    verdicts = []
    for drawn in (11, 987654321):
        monkeypatch.setattr(secret, "FIXED_FOR_TESTS", drawn)
        report = grade_submission(KV_CACHE / f"{name}.py", checks=checks_for("cache"))  # afresh: no cache holds a secret
        verdicts.append((report["score"], report["mistakes"]))
    assert verdicts[0] == verdicts[1]


def test_a_cache_that_returns_another_dtype_than_it_holds_fails_its_shapes(tmp_path):
    """update returning `.float()` of its slices: the buffers are right, but a half-precision (or float64) model gets
    float32 keys back (an independently written bug of the second lab: 20 while the returned dtype went unread)."""
    report = graded(with_cache(tmp_path, "returned_as_float32", update=PLAIN_UPDATE.replace(
        "        return self.cache_k[:B, :, :start_pos + T], self.cache_v[:B, :, :start_pos + T]",
        "        return self.cache_k[:B, :, :start_pos + T].float(), self.cache_v[:B, :, :start_pos + T].float()")))
    assert failed_checks(report).get("cache.shapes") == ["cache-dtype"], failures(report)
    assert re.search(r"returned keys in float32, expected the cache's (float64|float16|bfloat16)",
                     message(report, "cache.shapes")), message(report, "cache.shapes")


def test_a_cache_that_stores_a_half_precision_in_float32_fails_its_shapes(tmp_path):
    """A cache kept in float32 whatever half precision it is given holds twice the memory the model asked for (red
    team on the second lab: 20 while only float32 and float64 were probed); the half-precision chain's dtype is drawn
    per grading between float16 and bfloat16, and either is caught."""
    report = graded(with_cache(tmp_path, "widened_halves", buffers=(
        "        dtype = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype\n" + PLAIN_BUFFERS)))
    assert failed_checks(report).get("cache.shapes") == ["cache-dtype"], failures(report)
    assert re.search(r"(float16|bfloat16) tensor, got \(.*\) float32", message(report, "cache.shapes"))
