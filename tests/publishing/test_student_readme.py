"""Does the students' README travel with what they are given, saying in Chinese first and in English how to begin?"""
from __future__ import annotations

import importlib
import re

import pytest

from grader.build.colab_badge import colab_url
from grader.build.student_readme import source, student_readme, target
from grader.build.config import COLAB_PLACEHOLDER, ROOT

pytestmark = pytest.mark.unit

EXERCISES = ("attention", "kv_cache")
"""Every exercise has its students' README (written here, not read from grader.exercises: a declared exercise
without one must fail these tests, not drop out of them)."""
SOURCE, TARGET = source("attention"), target("attention")


@pytest.mark.parametrize("name", EXERCISES)
def test_the_build_writes_it_into_the_release_with_the_notebooks_colab_link(name):
    text = student_readme(name).decode("utf-8")
    assert f"]({colab_url(f'release/{name}/{name}.ipynb')})" in text
    assert COLAB_PLACEHOLDER not in text
    assert (ROOT / target(name)).read_text(encoding="utf-8") == text  # what is published is what the build makes


@pytest.mark.parametrize("name", EXERCISES)
def test_it_is_chinese_first_then_english_and_covers_colab_the_self_check_and_grading(name):
    text = (ROOT / target(name)).read_text(encoding="utf-8")
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    assert headings and all(re.match(r"## [\u4e00-\u9fff]", heading) and "·" in heading for heading in headings)
    for topic in ("Colab", "self-check", "What is graded", "python -m pytest"):
        assert topic in text, topic


def test_a_source_without_the_colab_placeholder_is_refused(tmp_path, monkeypatch):
    """A README whose link was hard-coded would send every student to a stale or wrong notebook."""
    module = importlib.import_module("grader.build.student_readme")  # grader.build's own name is the function

    (tmp_path / SOURCE).parent.mkdir(parents=True)
    (tmp_path / SOURCE).write_text("# no link\n", encoding="utf-8")
    monkeypatch.setattr(module, "ROOT", tmp_path)
    with pytest.raises(ValueError, match="COLAB_URL"):
        module.student_readme("attention")


@pytest.mark.parametrize("name", EXERCISES)
def test_it_gives_downloads_that_exist_on_github(name):
    """GitHub downloads no folder: each file's own page (a relative link, beside the README) or the zip of the
    published repository (COLAB_REPO at COLAB_BRANCH, the placeholder as shipped)."""
    text = (ROOT / target(name)).read_text(encoding="utf-8")
    assert "Download this whole folder" not in text and "下载整个文件夹" not in text
    assert text.count("](https://github.com/attention-kit/attention-kit/archive/refs/heads/main.zip)") == 2  # zh, en
    for file in (f"{name}.ipynb", "selfcheck.py", "conftest.py", f"test_{name}.py"):
        assert f"[{file}]({file})" in text and (ROOT / target(name)).with_name(file).is_file(), file


@pytest.mark.parametrize("name", EXERCISES)
def test_it_says_that_unfinished_parts_fail(name):
    text = (ROOT / target(name)).read_text(encoding="utf-8")
    assert "还没做完的部分，检查会失败" in text and "Checks of the parts you have not done yet fail" in text


def test_a_source_without_the_zip_placeholder_is_refused(tmp_path, monkeypatch):
    module = importlib.import_module("grader.build.student_readme")

    (tmp_path / SOURCE).parent.mkdir(parents=True)
    (tmp_path / SOURCE).write_text("[Colab](COLAB_URL), no download\n", encoding="utf-8")
    monkeypatch.setattr(module, "ROOT", tmp_path)
    with pytest.raises(ValueError, match="REPOSITORY_ZIP_URL"):
        module.student_readme("attention")
