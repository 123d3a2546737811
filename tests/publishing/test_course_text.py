"""Do the course's own words (its lab, its notes) come from one setting, COURSE_TEXT in grader/build/config.py,
into every file students get, so that another course changes them there and nowhere else?"""
from __future__ import annotations

import copy

import pytest

from grader.build import targets
from grader.build.config import COURSE_TEXT, ROOT
from grader.exercises import exercises
from grader.build.inline_selfcheck import inline_selfcheck, selfcheck_source
from grader.build.read_write import read_notebook
from grader.build.student_readme import student_readme

pytestmark = pytest.mark.unit

SHIPPED_WORDS = ("实验 07", "Happy-LLM 笔记", "the Happy-LLM notes")
"""The words this course ships with, as docs/instructors/publishing.md lists them."""
SOURCES = [f"source/{name}/{file}" for name in ("attention", "kv_cache")
           for file in (f"{name}.ipynb", "selfcheck.py", "README.md")]


@pytest.mark.parametrize("path", SOURCES)
def test_the_sources_hold_placeholders_not_the_words(path):
    """The notebook's self-check cell aside: the build writes it there from selfcheck.py, words filled in."""
    if path.endswith(".ipynb"):
        text = "\n".join(cell.source for cell in read_notebook(ROOT / path).cells if cell.get("id") != "selfcheck")
    else:
        text = (ROOT / path).read_text(encoding="utf-8")
    assert not [words for words in SHIPPED_WORDS if words in text]


def test_the_published_notebook_and_self_check_hold_the_words_and_no_placeholder():
    for path in ("release/attention/attention.ipynb", "release/attention/selfcheck.py",
                 "solutions/attention/attention.ipynb"):
        text = (ROOT / path).read_text(encoding="utf-8")
        assert all(words in text for words in SHIPPED_WORDS[1:]), path
        assert not [placeholder for placeholder in COURSE_TEXT if placeholder in text], path
    assert "因果掩码（causal mask，实验 07 里叫“遮罩”）" in (ROOT / "release/attention/attention.ipynb").read_text(
        encoding="utf-8")
    for path in ("release/kv_cache/kv_cache.ipynb", "solutions/kv_cache/kv_cache.ipynb"):  # it names the lab only
        text = (ROOT / path).read_text(encoding="utf-8")
        assert "实验 07 里的那个" in text and not [placeholder for placeholder in COURSE_TEXT if placeholder in text]


def test_another_course_sets_its_words_once_and_every_target_follows(monkeypatch):
    words = {"COURSE_LAB": "Lab 3", "COURSE_NOTES_ZH": "讲义", "COURSE_NOTES_EN": "the lecture notes"}
    for placeholder, value in words.items():
        monkeypatch.setitem(COURSE_TEXT, placeholder, value)
    written = {}
    for exercise in exercises():
        name, notebook = exercise.name, exercise.source_notebook
        source = inline_selfcheck(read_notebook(ROOT / notebook), notebook)  # as render() reads it
        written.update({target.path: target.write(_stepped(copy.deepcopy(source), target), target.path).decode("utf-8")
                        for target in targets(exercise)})
        written[f"{name}/selfcheck.py"] = selfcheck_source(name)
        written[f"{name}/README.md"] = student_readme(name).decode("utf-8")
    assert {path.split("/")[1] for path in written if path.startswith("release/")} == {"attention", "kv_cache"}
    for path, text in written.items():
        assert not [old for old in SHIPPED_WORDS if old in text], path
        assert not [placeholder for placeholder in words if placeholder in text], path
    for path in ("release/attention/attention.ipynb", "solutions/attention/attention.ipynb"):
        assert "causal mask，Lab 3 里叫" in written[path] and "讲义里的" in written[path], path
    assert "the lecture notes' n_embd" in written["attention/selfcheck.py"]
    assert "Lab 3 里的那个" in written["release/kv_cache/kv_cache.ipynb"]


def _stepped(nb, target):
    for step in target.steps:
        nb = step(nb, target.path)
    return nb


def test_publishing_md_names_every_setting_another_course_changes():
    page = (ROOT / "docs" / "instructors" / "publishing.md").read_text(encoding="utf-8")
    section = page.split("## What to change for another course")[1].split("\n## ")[0]
    for setting in (*COURSE_TEXT, "COLAB_REPO", "course_id", "WithholdFixCode.until"):
        assert f"`{setting}`" in section or f".{setting}`" in section, setting
    assert all(words in section for words in SHIPPED_WORDS[:2])
