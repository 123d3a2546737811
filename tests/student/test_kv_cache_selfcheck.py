"""Does the second exercise's public self-check (release/kv_cache/) pass on the solution, fail on the stubs with
every part not implemented, name each of the lab's mistakes by its own id and pass the honest variants?

The mistakes and variants are made here from solutions/kv_cache/kv_cache.py, one edit each, so each stays the
solution but for the one thing it changes.
"""
from __future__ import annotations

import re
import shutil

import pytest

from support.paths import ROOT, SUBMISSIONS
from support.public_selfcheck import colab_python as find_colab_python, load_public, release_copy, selfcheck

pytestmark = pytest.mark.unit

SOLUTION = ROOT / "solutions" / "kv_cache" / "kv_cache.py"
STUBS = ROOT / "exercises" / "kv_cache" / "kv_cache.py"
PARTS = ("part1", "part2", "part3")

REPEAT = ("out = x[:, :, None].expand(B, H_kv, n_rep, T, d)  # (B, H_kv, n_rep, T, d)\n"
          "    out = out.reshape(B, H_kv * n_rep, T, d)")
MASK = "future = torch.ones(T, S, dtype=torch.bool, device=x.device).triu(diagonal=start_pos + 1)"
WRITE_K = "self.cache_k[:B, :, start_pos:start_pos + T] = k"
MISTAKES = {  # mistake id -> (the part whose self-check names it, the solution's text, what the mistake writes)
    "repeat-kv-order": ("part1", REPEAT, "out = x.repeat(1, n_rep, 1, 1)"),
    "repeat-kv-order__module": ("part3", REPEAT, "out = x.repeat(1, n_rep, 1, 1)"),
    "cache-position": ("part2", "keys = self.cache_k[:B, :, :start_pos + T]", "keys = self.cache_k[:B]"),
    "cache-position__write": ("part2", WRITE_K, "self.cache_k[:B, :, :T] = k"),
    "cache-device": ("part2", "self.cache_k = torch.zeros(shape, device=device, dtype=dtype)",
                     "self.cache_k = torch.zeros(shape, dtype=dtype)"),
    "cache-mask-offset": ("part3", MASK, MASK.replace("start_pos + 1", "1")),
    "cache-mask-offset__square": ("part3", MASK,
                                  "future = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(diagonal=1)"),
    "kv-heads-ignored": ("part3", "self.wk = nn.Linear(args.dim, args.n_kv_heads * self.head_dim, bias=False)",
                         "self.wk = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)"),
    "wrong-scale": ("part3", "/ math.sqrt(self.head_dim)", "/ math.sqrt(C)"),
    "missing-scale": ("part3", "/ math.sqrt(self.head_dim)", ""),
    "mask-diagonal": ("part3", MASK, MASK.replace("start_pos + 1", "start_pos")),
    "softmax-dim": ("part3", "att = F.softmax(att, dim=-1)", "att = F.softmax(att, dim=-2)"),
    "head-split": ("part3", "y = y.transpose(1, 2).contiguous().view(B, T, C)", "y = y.reshape(B, T, C)"),
    "missing-out-proj": ("part3", "y = self.wo(y)", "y = y"),
    "broken-grad": ("part3", "y = self.wo(y)", "y = self.wo(y.detach())"),
    "forbidden-api": ("part3", "att = F.softmax(att, dim=-1)  # (B, H, T, S)\n        y = att @ values",
                      "y = F.scaled_dot_product_attention(q, keys, values, attn_mask=~future)"),
}
"""Issue 45's mistakes of this lab (and the first lab's that still apply), each as the one edit that makes it."""
HONEST = {  # name -> edits: the idioms the issue lists as full marks
    "repeat_interleave": ((REPEAT, "out = x.repeat_interleave(n_rep, dim=1)"),),
    "head-map-indexing": ((REPEAT, "out = x[:, torch.arange(H_kv * n_rep, device=x.device) // n_rep]"),),
    "index_copy_": ((WRITE_K, "self.cache_k[:B].index_copy_(2, torch.arange(start_pos, start_pos + T, device=k.device),"
                              " k)"),),
    "additive-mask": (('att = att.masked_fill(future, float("-inf"))',
                       'att = att + torch.zeros(T, S, device=x.device).masked_fill(future, float("-inf"))'),),
    "arange-mask-and-finfo": ((MASK, "future = torch.arange(S, device=x.device) > start_pos + "
                                     "torch.arange(T, device=x.device)[:, None]"),
                              ('float("-inf"))  # (B, H, T, S)', "torch.finfo(att.dtype).min)")),
    "einsum": (("att = q @ keys.transpose(-2, -1)", "att = torch.einsum('bhtd,bhsd->bhts', q, keys)"),),
    "module-buffers-cache": ((
        "self.cache_k = torch.zeros(shape, device=device, dtype=dtype)  # (B_max, H_kv, L, d)\n"
        "        self.cache_v = torch.zeros(shape, device=device, dtype=dtype)  # (B_max, H_kv, L, d)",
        'super().__init__()\n'
        '        self.register_buffer("cache_k", torch.zeros(shape, device=device, dtype=dtype))\n'
        '        self.register_buffer("cache_v", torch.zeros(shape, device=device, dtype=dtype))'),
        ("class KVCache:", "class KVCache(nn.Module):")),
    "dataclass-cache": (("class KVCache:", "@dataclass\nclass KVCache:"), (
        "    def __init__(self, max_batch_size: int, max_seq_len: int, n_kv_heads: int, head_dim: int,\n"
        "                 device=None, dtype=torch.float32):",
        "    max_batch_size: int\n    max_seq_len: int\n    n_kv_heads: int\n    head_dim: int\n"
        "    device: object = None\n    dtype: torch.dtype = torch.float32\n\n"
        "    def __post_init__(self):\n"
        "        max_batch_size, max_seq_len = self.max_batch_size, self.max_seq_len\n"
        "        n_kv_heads, head_dim, device, dtype = self.n_kv_heads, self.head_dim, self.device, self.dtype")),
    "provided-attention-without-cache": (("att = F.softmax(att, dim=-1)  # (B, H, T, S)\n        y = att @ values",
                                          "y = scaled_dot_product_attention(q, keys, values)[0] if cache is None "
                                          "else F.softmax(att, dim=-1) @ values"),),
}


def edited(edits, tmp_path):
    text = SOLUTION.read_text(encoding="utf-8")
    for old, new in edits:
        assert text.count(old) == 1, f"the solution no longer holds {old!r}"
        text = text.replace(old, new)
    path = tmp_path / "kv_cache.py"
    path.write_text(text, encoding="utf-8")
    return path


def named(path) -> dict[str, set[str]]:
    """part -> the mistake ids its self-check names for the module at `path`."""
    selfcheck, loader = load_public("kv_cache")
    namespace, syntax_errors = loader.load_namespace(path)
    assert syntax_errors == []
    return {part: {m for failure in selfcheck.run_part(part, namespace).values() if failure for m in failure.mistakes}
            for part in PARTS}


@pytest.mark.parametrize("mistake", MISTAKES)
def test_each_mistake_of_the_lab_is_named_by_its_own_id(mistake, tmp_path):
    """Is the mistake named, by its id alone, in the part that teaches it: every check it fails says that id, never a
    mismatch or an error the self-check cannot name?"""
    part, *edit = MISTAKES[mistake]
    found = named(edited([edit], tmp_path))
    assert found[part] == {mistake.split("__")[0]}, found


@pytest.mark.parametrize("variant", HONEST)
def test_honest_variants_pass_every_check(variant, tmp_path):
    assert named(edited(HONEST[variant], tmp_path)) == {part: set() for part in PARTS}


@pytest.mark.parametrize("path", sorted((SUBMISSIONS / "kv_cache" / "correct").glob("*.py")), ids=lambda p: p.stem)
def test_every_honest_hand_in_the_grader_gives_full_marks_passes_the_self_check(path):
    """The student's self-check and the grader agree on honest code: a model that checks a request against
    cache.max_seq_len passed the grader and failed the self-check, whose own cache kept no sizes."""
    assert named(path) == {part: set() for part in PARTS}


def test_the_parts_are_declared_as_the_exercise_declares_them():
    """release/ imports no grader, so selfcheck.py names the parts again: held equal to grader.exercises here."""
    from grader.exercises import exercise

    selfcheck, _ = load_public("kv_cache")
    parts = exercise("kv_cache").parts
    assert selfcheck.SELFCHECK_TITLE == {part.marker: part.label for part in parts}
    assert list(selfcheck.SELFCHECK_CHECKS) == list(selfcheck.SELFCHECK_GRADED) == [part.marker for part in parts]
    assert [selfcheck.SELFCHECK_GRADED[part.marker][0] for part in parts] == [part.graded_name for part in parts]


LAB_IDS = {"repeat-kv-order", "cache-position", "cache-device", "cache-mask-offset", "kv-heads-ignored"}
"""The lab's new mistake ids (issue 45), which the catalog (grader/mistakes.json) is to hold with these titles."""


def test_the_mistake_titles_are_the_catalogs():
    """Does every id the self-check names hold the catalog's zh and en titles, but for its own ids and the lab's new
    ones the catalog does not hold yet (each compared as soon as it does)?"""
    from grader.catalog import catalog

    selfcheck, _ = load_public("kv_cache")
    absent = {mistake for mistake in selfcheck.SELFCHECK_MISTAKES if mistake not in catalog()}
    assert absent <= set(selfcheck.SELFCHECK_OWN_MISTAKES) | LAB_IDS, absent
    for mistake, (title_zh, title_en, _, _) in selfcheck.SELFCHECK_MISTAKES.items():
        if mistake not in absent:
            assert (catalog()[mistake]["title_zh"], catalog()[mistake]["title_en"]) == (title_zh, title_en), mistake


@pytest.fixture(scope="module")
def colab_python():
    return find_colab_python()


def failure_sections(stdout: str) -> dict[str, str]:
    """test id (`part1-shapes`) -> its failure section, from pytest's report."""
    body = stdout.split("short test summary info")[0]
    pieces = re.split(r"^_{3,} test_check\[(part\d-\w+)\] _{3,}$", body, flags=re.MULTILINE)
    return dict(zip(pieces[1::2], pieces[2::2]))


@pytest.mark.e2e
def test_the_released_selfcheck_passes_on_the_solution_module(colab_python, tmp_path):
    """As a student runs it: release/kv_cache/ alone, the solution module beside it as kv_cache.py."""
    folder = release_copy("kv_cache", tmp_path)
    shutil.copy(SOLUTION, folder / "kv_cache.py")
    result = selfcheck(colab_python, folder)
    assert result.returncode == 0 and "14 passed" in result.stdout, result.stdout[-3000:]


@pytest.mark.e2e
def test_the_released_selfcheck_fails_on_the_stubs_with_every_part_not_implemented(colab_python, tmp_path):
    folder = release_copy("kv_cache", tmp_path)
    shutil.copy(STUBS, folder / "kv_cache.py")
    result = selfcheck(colab_python, folder)
    assert result.returncode == 1 and "11 failed, 3 passed" in result.stdout, result.stdout[-3000:]
    sections = failure_sections(result.stdout)
    assert {name.split("-")[0] for name in sections} == set(PARTS)
    assert all("[not-implemented]" in text for text in sections.values()), sections
    assert "checks of parts not done yet are expected to fail" in result.stdout


@pytest.mark.e2e
def test_the_released_notebook_is_what_is_checked_when_no_module_is_there(colab_python, tmp_path):
    """The notebook as shipped fails like the stubs; the solution notebook in its place passes."""
    folder = release_copy("kv_cache", tmp_path)
    assert "11 failed, 3 passed" in selfcheck(colab_python, folder).stdout
    shutil.copy(ROOT / "solutions" / "kv_cache" / "kv_cache.ipynb", folder / "kv_cache.ipynb")
    assert "14 passed" in selfcheck(colab_python, folder).stdout
