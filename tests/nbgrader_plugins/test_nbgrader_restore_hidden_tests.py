"""Does OverwriteCells stay quiet about untouched test cells, and still report an edited one?"""
from __future__ import annotations

import logging

import pytest
from nbgrader.preprocessors import OverwriteCells

from support import colab_notebooks as cn
from grader.nbgrader.restore_hidden_tests import RestoreHiddenTests
from support.nbgrader_course import Course, apply

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Course:
    return Course.create(tmp_path_factory.mktemp("hidden-tests-course"))


def checksum_warnings(nb, course: Course, caplog, steps) -> list[str]:
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        for step in steps:
            nb = apply(step, nb, course.root, db_url=f"sqlite:///{course.root / 'gradebook.db'}")
    return [r.getMessage() for r in caplog.records if "checksum" in r.getMessage()]


def test_untouched_stub_gives_no_checksum_warning(course, caplog):
    """Run as autograde does, is the released notebook as handed out free of "checksum has changed" warnings?"""
    assert checksum_warnings(course.release, course, caplog, [RestoreHiddenTests, OverwriteCells]) == []


def test_without_the_step_nbgrader_warns_for_every_test_cell(course, caplog):
    """The noise this step removes: OverwriteCells alone warns for both untouched test cells."""
    warnings = checksum_warnings(course.release, course, caplog, [OverwriteCells])
    assert any("sdpa_tests" in w for w in warnings) and any("mha_tests" in w for w in warnings)


def test_an_edited_test_cell_is_still_reported_and_restored(course, caplog):
    """Does a student's edit of a locked test cell still get nbgrader's warning and its text restored?"""
    nb = cn.edit(course.release, "sdpa_tests", 'selfcheck_notebook("part1", globals())', "print('all good')")
    warnings = checksum_warnings(nb, course, caplog, [RestoreHiddenTests, OverwriteCells])
    assert any("sdpa_tests" in w for w in warnings) and not any("mha_tests" in w for w in warnings)
