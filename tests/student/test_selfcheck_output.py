"""Is the public self-check's output as short as the failure, and does it blame only the student's code?

Run in-process from release/attention/ as built (its conftest's loader, as `python -m pytest` runs it):
- every check of a part is listed, passed or failed, its Chinese label before its name;
- an error the student's code raised is quoted once, however many checks it broke;
- an exception the self-check does not recognise is the student's own error, quoted with its line, never a
  wrong value (`y` renamed in `forward` while the template's `return y` stays);
- a NameError in the self-check's own code is never the student's mistake;
- a notebook saved under the name Colab gives its copy is read as a notebook.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from support.public_selfcheck import load_public
from support.paths import ROOT

pytestmark = pytest.mark.unit

RELEASE = ROOT / "release" / "attention"
SOLUTION = ROOT / "solutions" / "attention" / "attention.py"
SOLUTION_NOTEBOOK = ROOT / "solutions" / "attention" / "attention.ipynb"
MUTANTS = ROOT / "tests" / "submissions" / "mutants"
CONTIGUOUS_ERROR = "view size is not compatible"


@pytest.fixture(scope="module")
def public():
    """release/attention's selfcheck.py and its pytest loader (conftest.py imports `selfcheck`)."""
    return load_public()


def summaries(public, path: Path) -> dict[str, str]:
    """part -> the text the notebook's self-check cell prints for this file."""
    selfcheck, loader = public
    namespace, _ = loader.load_namespace(path)
    return {part: selfcheck.part_summary(part, selfcheck.run_part(part, namespace)) for part in selfcheck.SELFCHECK_CHECKS}


def y_renamed(tmp_path: Path) -> Path:
    """The reference solution with `y` renamed to `out` in forward, the template's `return y` kept."""
    text = SOLUTION.read_text(encoding="utf-8")
    forward = text.index("    def forward(")
    body = text[forward:].replace("        y = ", "        out = ").replace("(y)", "(out)").replace("y.transpose", "out.transpose")
    assert body.count("        return y\n") == 1 and "        y = " not in body
    path = tmp_path / "attention.py"
    path.write_text(text[:forward] + body, encoding="utf-8")
    return path


def test_a_renamed_result_is_the_students_error_with_its_line_and_the_name_to_use(public, tmp_path):
    text = summaries(public, y_renamed(tmp_path))["part2"]
    assert "[raised] 运行时出错 · Your code raised an error" in text, text
    assert "NameError: name 'y' is not defined" in text and "`return y`" in text, text
    assert "把结果存进 `y`" in text and "store the result in `y`" in text, text
    assert "value-mismatch" not in text and "与参考实现不一致" not in text, text
    assert text.count("NameError: name 'y'") == 1, text


def test_a_missing_contiguous_error_is_quoted_once(public):
    text = summaries(public, MUTANTS / "missing-contiguous.py")["part2"]
    assert "[missing-contiguous]" in text
    assert text.count(CONTIGUOUS_ERROR) == 1, text
    assert text.count("同一个错误（见上）/ the same error (see above)") == 2, text


def test_every_check_of_a_part_is_listed_passed_or_failed_chinese_label_first(public):
    selfcheck, _ = public
    for path in (MUTANTS / "missing-contiguous.py", MUTANTS / "missing-scale.py", SOLUTION):
        for part, text in summaries(public, path).items():
            for name, _ in selfcheck.SELFCHECK_CHECKS[part]:
                label = selfcheck.SELFCHECK_LABEL[name]
                assert f"{label} {name}" in text, (path.name, part, name, text)
                assert any("\u4e00" <= ch <= "\u9fff" for ch in label), label
    failed = summaries(public, MUTANTS / "missing-scale.py")["part1"]
    assert [line[0] for line in failed.splitlines() if line[:1] in "✓✗"] == ["✓", "✓", "✗", "✓"], failed


def test_a_fix_names_only_the_todos_of_the_part_that_failed(public):
    part1 = summaries(public, MUTANTS / "missing-scale.py")["part1"]
    assert "（TODO 1a）" in part1 and "2d" not in part1, part1


def test_the_selfchecks_own_name_error_is_never_the_students_mistake(public, monkeypatch):
    """The unbuilt selfcheck.py (no rules table: `module_allowed` undefined) on the reference solution."""
    selfcheck, loader = public
    monkeypatch.delattr(selfcheck, "module_allowed")
    namespace, _ = loader.load_namespace(SOLUTION)
    failure = selfcheck.run_part("part1", namespace)["rules"]
    assert failure is not None and failure.mistakes == ("selfcheck-error",), failure and failure.mistakes
    assert "不是你的错误" in selfcheck.part_summary("part1", {"rules": failure})


def test_a_notebook_named_as_colab_names_its_copy_is_read_as_a_notebook(public, tmp_path):
    _, loader = public
    copy = tmp_path / "attention.ipynb 的副本"
    shutil.copy(SOLUTION_NOTEBOOK, copy)
    namespace, errors = loader.load_namespace(copy)
    assert not errors and "MultiHeadAttention" in namespace and "scaled_dot_product_attention" in namespace


def test_pytest_quotes_the_contiguous_error_once_and_finds_the_colab_copy(tmp_path):
    """`python -m pytest` beside a notebook saved as Colab names it, with the missing-contiguous slip in it."""
    folder = tmp_path / "attention"
    shutil.copytree(RELEASE, folder)
    (folder / "attention.ipynb").unlink()
    text = SOLUTION_NOTEBOOK.read_text(encoding="utf-8")
    assert text.count("y.transpose(1, 2).contiguous().view(B, T, C)") == 1
    (folder / "attention.ipynb 的副本").write_text(text.replace("y.transpose(1, 2).contiguous().view", "y.transpose(1, 2).view"),
                                                  encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "ATTENTION_IMPL", "CI")}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "part2"], cwd=folder,
                          env=env, capture_output=True, text=True, timeout=300)
    assert "3 failed, 2 passed" in done.stdout, done.stdout[-3000:]
    failures = done.stdout.split("short test summary info")[0]
    assert failures.count(CONTIGUOUS_ERROR) == 1, failures


def test_one_error_text_in_two_parts_is_quoted_in_each(public):
    """pytest shares one report across parts: the untouched Part 2 raises the same NotImplementedError as Part 1,
    at another TODO, so it is quoted again, never "the same error (see above)"."""
    selfcheck, _ = public
    explained: set = set()
    failures = [selfcheck.SelfCheckFailure("not-implemented", "", "", raised=True, error="NotImplementedError",
                                           line="raise NotImplementedError()") for _ in range(3)]
    first, again, other_part = (selfcheck.explain_failure(failures[0], explained, "part1"),
                                selfcheck.explain_failure(failures[1], explained, "part1"),
                                selfcheck.explain_failure(failures[2], explained, "part2"))
    assert "报错 / error: NotImplementedError" in first and "同一个错误（见上）" in again
    assert "报错 / error: NotImplementedError" in other_part and "同一个错误" not in other_part
