"""Does every feedback page carry, first in its head, exactly the Content-Security-Policy README documents?

The policy is written here as README writes it (*Untrusted input*, Feedback pages), not read from the code:
a policy loosened in the code alone (`default-src *`) fails this test.
"""
from __future__ import annotations

import re

import pytest
from nbformat import v4

from grader.nbgrader.feedback_page_policy import FeedbackPageExporter
from support.feedback_page import DOCUMENTED_POLICY

pytestmark = pytest.mark.unit


def rendered_page() -> str:
    page, _ = FeedbackPageExporter().from_notebook_node(v4.new_notebook(cells=[v4.new_markdown_cell("prose")]), {})
    return page


def test_the_page_carries_the_documented_policy_first_in_its_head():
    page = rendered_page()
    head = re.search(r"<head\b[^>]*>\s*(<[^>]*>)", page, re.IGNORECASE)
    assert head is not None, page[:500]
    assert head[1] == f'<meta http-equiv="Content-Security-Policy" content="{DOCUMENTED_POLICY}">'


def test_the_page_carries_no_other_policy():
    """A second policy could only add sources: one meta, the documented one."""
    assert len(re.findall(r"Content-Security-Policy", rendered_page(), re.IGNORECASE)) == 1
