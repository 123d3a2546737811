"""Feedback pages' exporter: nbgrader's HTML page with a Content-Security-Policy that lets nothing run or load.

sanitize_feedback cleans what a student wrote; this is the second wall, for whatever markup
survives or that markdown syntax itself creates (`[x](javascript:…)`, `![](http://…)`): the page
may run no script, load nothing from anywhere, and show only inline styles and `data:` images
and fonts. The verdicts are static text, tables and PNGs, so the page loses nothing it needs;
math then needs no script (rendered or written without MathJax).

The same head carries one style rule: text outputs (the verdicts' stdout) wrap at the page's width.
The verdicts are written one line per paragraph, and nbgrader's template would otherwise show
them in a `<pre>` that scrolls sideways; `word-break: normal` keeps English words whole where the
template's `break-all` would split them anywhere.

The page's header lists each graded test cell as "Test cell" (nbgrader's template); each link is
named by its part instead ("Part 1 · scaled_dot_product_attention"), so the two are told apart.
"""
from __future__ import annotations

import html
import re

from nbconvert.exporters import HTMLExporter

from grader.exercises import every_part

CONTENT_SECURITY_POLICY = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; font-src data:; "
                           "base-uri 'none'; form-action 'none'")
META = f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">'
WRAPPED_OUTPUT_TEXT = ("<style>div.output_text pre { white-space: pre-wrap; word-break: normal; "
                       "overflow-wrap: anywhere; }</style>")
_HEAD = re.compile(r"<head\b[^>]*>", re.IGNORECASE)


def with_policy(page: str) -> str:
    """The page with the policy as the first element of its head (it governs only what follows it), then the
    style that wraps text outputs."""
    head = _HEAD.search(page)
    if head is None:
        return META + WRAPPED_OUTPUT_TEXT + page
    return page[:head.end()] + "\n" + META + "\n" + WRAPPED_OUTPUT_TEXT + page[head.end():]


def with_part_names(page: str) -> str:
    """The header's "Test cell" links named by the part each test cell grades."""
    for part in every_part():
        page = page.replace(f'<a href="#{part.tests_cell}">Test cell</a>',
                            f'<a href="#{part.tests_cell}">{html.escape(part.label)}</a>')
    return page


class FeedbackPageExporter(HTMLExporter):
    """nbgrader's HTML exporter (its feedback template), each page carrying CONTENT_SECURITY_POLICY and
    WRAPPED_OUTPUT_TEXT."""

    def from_notebook_node(self, nb, resources=None, **kwargs):
        output, resources = super().from_notebook_node(nb, resources, **kwargs)
        return with_policy(with_part_names(output)), resources
