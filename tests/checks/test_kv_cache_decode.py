"""Do the kv_cache lab's decode checks (grader/checks/gqa/decoding.py: gqa.decode, 3 points, and gqa.causal, 1) give
every honest GroupedQueryAttention its points, name `cache-mask-offset` where the mask ignores start_pos, and refuse
what a stateful decode could hide from a grader that trusted the worker?

Graded through the real pipeline (`grade_submission`: the worker decoding on decoys with the grader's own KVCache, the
judge chaining each step's graph on the parent's own inputs and weights); each repository hand-in graded whole once
and read for Part 3's checks (tests/support/part_views.py).
"""
import functools
from pathlib import Path

import pytest

from grader.catalog import explain
from grader.checks import checks_for, secret
from grader.grade import grade_submission
from support import part_views
from support.hand_ins import edited, header
from support.paths import SUBMISSIONS

pytestmark = pytest.mark.sandbox

KV_CACHE = SUBMISSIONS / "kv_cache"
CORRECT = sorted((KV_CACHE / "correct").glob("*.py"))
GQA_MUTANTS = [path for path in sorted((KV_CACHE / "mutants").glob("*.py")) if header(path, "part") == "gqa"]
MASK_OFFSET = [path for path in GQA_MUTANTS if header(path, "expect") == "cache-mask-offset"]
PLAIN = KV_CACHE / "correct" / "repeat_interleave_slice_plain.py"
DECODE = ("gqa.decode", "gqa.causal")


@functools.cache
def graded(path: Path) -> dict:
    return part_views.report(path, "gqa")


def decode_checks(report: dict) -> dict[str, dict]:
    return {c["id"]: c for c in report["checks"] if c["id"] in DECODE}


def failures(report: dict) -> str:
    return "\n".join(f"{c['id']} {c['mistakes']}: {c['message_en'][:600]}" for c in report["checks"] if not c["passed"])


def with_forward(tmp_path: Path, name: str, old: str, new: str) -> Path:
    """The plain honest hand-in with one piece of its GroupedQueryAttention replaced."""
    return edited(PLAIN, tmp_path, name, old, new)


@pytest.mark.parametrize("path", CORRECT, ids=[p.stem for p in CORRECT])
def test_every_honest_module_decodes_as_the_full_causal_pass(path):
    checks = decode_checks(graded(path))
    assert set(checks) == set(DECODE)
    assert all(c["passed"] and c["points"] == c["max_points"] for c in checks.values()), failures(graded(path))
    assert [checks[i]["max_points"] for i in DECODE] == [3.0, 1.0]


OFFSET = "triu(diagonal=start_pos + 1)  # (T, S)"
TOLD_APART = {"isinstance": "not isinstance(cache, KVCache)", "type is": "type(cache) is not KVCache",
              "class name": "type(cache).__name__ != 'KVCache'"}


@pytest.mark.parametrize("told", TOLD_APART.values(), ids=TOLD_APART.keys())
def test_the_cache_the_decode_probe_hands_in_is_of_the_students_own_class(told, tmp_path):
    """The grader's KVCache stands in for the student's in Part 3's decode probe: code that offsets its mask only where
    the cache is not of its own class (so, in use, never) scores no more than its twin that never offsets (red team on
    the second lab: 20 against 16)."""
    source = PLAIN.read_text(encoding="utf-8")
    assert source.count(OFFSET) == 1
    twin, hostile = tmp_path / "twin.py", tmp_path / "hostile.py"
    twin.write_text(source.replace(OFFSET, "triu(diagonal=1)"), encoding="utf-8")
    hostile.write_text(source.replace(OFFSET, f"triu(diagonal=start_pos + 1 if cache is None or {told} else 1)"),
                       encoding="utf-8")
    twin_report, hostile_report = graded(twin), graded(hostile)
    assert twin_report["score"] < 20 and "cache-mask-offset" in twin_report["mistakes"], failures(twin_report)
    assert hostile_report["score"] <= twin_report["score"], failures(hostile_report)


@pytest.mark.parametrize("path", MASK_OFFSET, ids=[p.stem for p in MASK_OFFSET])
def test_a_mask_not_offset_by_start_pos_loses_the_decode_points_named_in_both_languages(path):
    decode = decode_checks(graded(path))["gqa.decode"]
    assert not decode["passed"] and decode["mistakes"] == ["cache-mask-offset"], failures(graded(path))
    zh, en = decode["message_zh"].splitlines(), decode["message_en"].splitlines()
    assert any("\u4e00" <= ch <= "\u9fff" for ch in zh[0]) and "start_pos=" in en[0] and "row" in en[0]
    assert explain("cache-mask-offset", "zh") in zh and explain("cache-mask-offset", "en") in en


OTHER_GQA = [path for path in GQA_MUTANTS if path not in MASK_OFFSET]


@pytest.mark.parametrize("path", OTHER_GQA, ids=[p.stem for p in OTHER_GQA])
def test_another_part_three_mistake_is_never_called_a_mask_offset(path):
    report = graded(path)
    assert all("cache-mask-offset" not in c["mistakes"] for c in decode_checks(report).values()), failures(report)


# mistakes whose values the decode shows (the others show in gradients, devices, loops: the part's other checks)
SHOWN_IN_VALUES = ["head-split", "head-split__2", "kv-heads-ignored", "kv-heads-ignored__2", "mask-diagonal",
                   "mask-direction", "missing-out-proj", "missing-scale", "softmax-dim", "wrong-return", "wrong-scale",
                   "wrong-scale__2"]


@pytest.mark.parametrize("name", SHOWN_IN_VALUES)
def test_a_whole_pass_mistake_loses_the_decode_points(name):
    report = graded(KV_CACHE / "mutants" / f"{name}.py")
    assert not decode_checks(report)["gqa.decode"]["passed"], name


@pytest.mark.parametrize("name", ["mask-direction", "softmax-dim", "cache-mask-offset__2"])
def test_a_row_that_sees_a_later_position_loses_the_causal_point(name):
    causal = decode_checks(graded(KV_CACHE / "mutants" / f"{name}.py"))["gqa.causal"]
    assert not causal["passed"] and "moved output row" in causal["message_en"]


@pytest.mark.parametrize("longest", [4, 12])
def test_an_offset_left_out_only_for_long_chunks_is_met_by_the_longer_chunk(tmp_path, longest):
    """The offset mask only for chunks of up to 4 tokens, then of up to 12 (red team on the second lab: 20 against 16,
    and 20 against 17 once the longest chunk drawn was 12): the second chunk runs to the last position of the cache but
    one, 15 tokens or more in every grading (a first version drew caches that left it 7, and a fresh clone's secret
    passed the route)."""
    source = PLAIN.read_text(encoding="utf-8")
    assert source.count(OFFSET) == 1
    path = tmp_path / f"short_offset_{longest}.py"
    path.write_text(source.replace(OFFSET, f"triu(diagonal=start_pos + 1 if T <= {longest} else 1)"), encoding="utf-8")
    decode = decode_checks(graded(path))["gqa.decode"]
    assert not decode["passed"] and decode["mistakes"] == ["cache-mask-offset"], failures(graded(path))


def test_the_chunk_after_the_prompt_is_the_step_said_for_a_mask_left_out_after_the_prompt():
    decode = decode_checks(graded(KV_CACHE / "mutants" / "cache-mask-offset__2.py"))["gqa.decode"]
    assert "step 2 (sequence 0, start_pos=" in decode["message_en"] and "(a prompt then a chunk)" in decode["message_en"]


HOSTILE = {
    "positions counted in Python": ("        B, T, C = x.shape  # batch, new positions, model width",
                                    "        B, T, C = x.shape\n"
                                    "        start_pos = getattr(self, 'position', 0)\n"
                                    "        self.position = start_pos + T"),
    "positions counted per cache": ("        if cache is not None:\n",
                                    "        if cache is not None:\n"
                                    "            self.written = getattr(self, 'written', {})\n"
                                    "            start_pos = self.written.get(id(cache), 0)\n"
                                    "            self.written[id(cache)] = start_pos + T\n"),
    "the first cache kept on the module": ("        if cache is not None:\n",
                                           "        if cache is not None:\n"
                                           "            self.own = getattr(self, 'own', cache)\n"
                                           "            cache = self.own\n"),
    "keys and values in one memory": ("            k, v = cache.update(start_pos, k, v)  # (B, H_kv, S, d)",
                                      "            k, v = cache.update(start_pos, k, v)\n"
                                      "            cache.cache_v = cache.cache_k"),
    "values taken to Python": ("        return self.wo(y)", "        return self.wo(torch.tensor(y.tolist()))"),
    "the first output memorised": ("        return self.wo(y)",
                                   "        self.first = getattr(self, 'first', None)\n"
                                   "        if self.first is None or self.first.shape != y.shape:\n"
                                   "            self.first = self.wo(y).detach()\n"
                                   "        return self.first.clone()"),
}


@pytest.mark.parametrize("mistake, old, new", [
    ("mask-diagonal", "triu(diagonal=start_pos + 1)  # (T, S)", "triu(diagonal=start_pos if start_pos > 0 else 1)"),
    ("missing-scale", "/ math.sqrt(self.head_dim)", "/ (math.sqrt(self.head_dim) if start_pos == 0 else 1)"),
    ("wrong-scale", "/ math.sqrt(self.head_dim)", "/ math.sqrt(self.head_dim if start_pos == 0 else C)"),
])
def test_a_mistake_of_the_cached_path_alone_is_named_as_that_mistake(tmp_path, mistake, old, new):
    """Part 3 decodes through the grader's cache, so a wrong step after a right prompt is the module's: a diagonal
    hidden or a scale left out only where start_pos > 0 was named `cache-position`, whose fix points at KVCache
    (independently written bugs of the second lab)."""
    path = with_forward(tmp_path, mistake.replace("-", "_"), old, new)
    decode = decode_checks(graded(path))["gqa.decode"]
    assert not decode["passed"] and decode["mistakes"] == [mistake], failures(graded(path))


def test_heads_repeated_before_the_cache_fail_on_the_cpu_too_which_is_no_device_question(tmp_path):
    """repeat_kv before cache.update (the cache made for n_kv_heads heads gets n_heads): the cached path fails
    wherever it runs, so gqa.device is a cascade of the decode check's finding, not `device-not-judged` (an
    independently written bug of the second lab)."""
    path = with_forward(tmp_path, "repeated_before_the_cache",
                        "        if cache is not None:\n            k, v = cache.update(start_pos, k, v)  # (B, H_kv, S, d)\n"
                        "        k, v = repeat_kv(k, self.n_rep), repeat_kv(v, self.n_rep)  # (B, H, S, d)",
                        "        k, v = repeat_kv(k, self.n_rep), repeat_kv(v, self.n_rep)  # (B, H, T, d)\n"
                        "        if cache is not None:\n            k, v = cache.update(start_pos, k, v)  # (B, H, S, d)")
    report = grade_submission(path, checks=[c for c in checks_for("gqa") if c.id in ("gqa.decode", "gqa.device")])
    device = next(c for c in report["checks"] if c["id"] == "gqa.device")
    assert not device["passed"] and device["mistakes"] == [], failures(report)
    assert "fails on the CPU too" in device["message_en"] and "device-not-judged" not in report["mistakes"]


def test_a_module_that_leaves_the_cache_out_where_no_head_is_repeated_loses_the_decode_points(tmp_path):
    """The cache only where heads are repeated (n_rep > 1): with n_kv_heads == n_heads the module decodes a token
    without its past. The drawn sizes always repeat heads, so this kept every point (red team on the second lab)."""
    path = with_forward(tmp_path, "cache_only_for_groups", "        if cache is not None:\n",
                        "        if cache is not None and self.n_rep > 1:\n")
    decode = decode_checks(graded(path))["gqa.decode"]
    assert not decode["passed"] and decode["mistakes"] == ["cache-position"], failures(graded(path))
    assert "(n_kv_heads == n_heads (plain multi-head attention): a prompt, a token, a chunk)" in decode["message_en"]
    assert "step 2 (sequence 0, start_pos=" in decode["message_en"]
    assert "普通多头注意力" in decode["message_zh"]


@pytest.mark.parametrize("hostile", HOSTILE)
def test_state_kept_where_the_judge_cannot_follow_it_earns_no_decode_points(tmp_path, hostile):
    path = with_forward(tmp_path, hostile.replace(" ", "_"), *HOSTILE[hostile])
    decode = decode_checks(grade_submission(path, checks=checks_for("gqa")))["gqa.decode"]
    assert not decode["passed"] and decode["points"] == 0.0, decode["message_en"]


@pytest.mark.parametrize("hostile", ["positions counted in Python", "positions counted per cache"])
def test_a_position_counted_instead_of_start_pos_is_caught_where_a_position_is_decoded_again(tmp_path, hostile):
    """A count of positions, on the module or one per cache (the latter kept every point while each sequence only went
    forward: red team on the second lab), writes a token decoded again past where it belongs."""
    path = with_forward(tmp_path, hostile.replace(" ", "_"), *HOSTILE[hostile])
    decode = decode_checks(grade_submission(path, checks=checks_for("gqa")))["gqa.decode"]
    assert "step 5 (sequence 0, start_pos=" in decode["message_en"]
    assert "(a prompt then single tokens, the last but one generated again)" in decode["message_en"]
    assert "This step goes back to an earlier position" in decode["message_en"]
    assert "这一步回到了更早的位置" in decode["message_zh"]
    assert decode["mistakes"] == ["cache-position"]


def test_shared_memory_is_refused_at_the_step_after_it_was_made(tmp_path, rules_bypassed):
    """The rules refuse the assignment to the grader's cache first; with them off, the worker's own refusal of state
    that shares memory (the judge would run it on two copies, apart) still costs the points."""
    path = with_forward(tmp_path, "shared", *HOSTILE["keys and values in one memory"])
    decode = decode_checks(grade_submission(path, checks=checks_for("gqa")))["gqa.decode"]
    assert "SharedState: cache_k and cache_v share memory" in decode["message_en"]


def test_the_verdict_is_the_same_under_two_grading_secrets(monkeypatch):
    """Sizes, prompt and chunk lengths and values are drawn per grading: none may change a verdict."""
    verdicts = []
    for drawn in (11, 987654321):
        monkeypatch.setattr(secret, "FIXED_FOR_TESTS", drawn)
        for name in ("correct/stack_groups_provided_sdpa_for_the_prompt", "mutants/cache-mask-offset"):
            report = grade_submission(KV_CACHE / f"{name}.py", checks=checks_for("gqa"))
            verdicts.append((drawn, name, report["score"], report["mistakes"]))
    assert [v[2:] for v in verdicts[:2]] == [v[2:] for v in verdicts[2:]]


@pytest.mark.unit
def test_the_decode_checks_are_hidden_with_four_points():
    checks = [c for c in checks_for("gqa") if c.id in DECODE]
    assert [(c.id, c.points, c.visibility) for c in checks] == [("gqa.decode", 3, "hidden"), ("gqa.causal", 1, "hidden")]


def test_the_caches_buffers_written_by_hand_keep_full_marks(tmp_path):
    """The interface names cache_k and cache_v: a module that writes and slices them itself, in place of calling
    update, is honest (the grader's cache is handed in; only rebinding its attributes breaks the rules)."""
    path = with_forward(tmp_path, "by_hand", "            k, v = cache.update(start_pos, k, v)  # (B, H_kv, S, d)",
                        "            cache.cache_k[:B, :, start_pos:start_pos + T] = k\n"
                        "            cache.cache_v[:B, :, start_pos:start_pos + T] = v\n"
                        "            k, v = cache.cache_k[:B, :, :start_pos + T], cache.cache_v[:B, :, :start_pos + T]")
    checks = decode_checks(grade_submission(path, checks=checks_for("gqa")))
    assert all(c["passed"] for c in checks.values()), [c["message_en"] for c in checks.values()]
