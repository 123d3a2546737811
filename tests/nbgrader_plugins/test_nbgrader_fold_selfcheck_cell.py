"""Does the feedback page show the provided self-check cell as one line, leaving every other cell alone?"""
import copy

from grader.build.config import SELFCHECK_CELL
from grader.nbgrader.fold_selfcheck_cell import SELFCHECK_GRADE_ID, FoldSelfcheckCell
from support.nbgrader_course import release_notebook

import pytest

pytestmark = pytest.mark.unit


def test_selfcheck_cell_is_folded_to_its_title_and_others_untouched():
    nb = release_notebook()
    before = copy.deepcopy(nb)
    nb, _ = FoldSelfcheckCell().preprocess(nb, {})
    changed = [(a, b) for a, b in zip(before.cells, nb.cells) if a.source != b.source]
    assert len(changed) == 1 and changed[0][0].metadata["nbgrader"]["grade_id"] == SELFCHECK_GRADE_ID == SELFCHECK_CELL
    folded = changed[0][1].source
    assert folded.count("\n") == 1 and folded.startswith("# @title") and "omitted" in folded


def test_the_feedback_exporters_config_draws_no_warning(caplog):
    """generate_feedback configures every preprocessor with the HTML exporter's `display_data_priority`: once a
    warning per page ("not recognized by FoldSelfcheckCell")."""
    from nbconvert.exporters import HTMLExporter

    FoldSelfcheckCell(config=HTMLExporter().default_config)
    assert "not recognized" not in caplog.text
