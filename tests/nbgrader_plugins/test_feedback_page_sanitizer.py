"""Does every student get a feedback page whatever their markdown's attachments and links hold, with no
`javascript:` URL and no SVG left in it by the sanitizer alone (the page's CSP is the second wall)?

The page is rendered here by the same exporter and markdown renderer `nbgrader generate_feedback` uses.
"""
from __future__ import annotations

import re

import pytest
from nbformat import v4

from grader.nbgrader.feedback_page_policy import FeedbackPageExporter
from grader.nbgrader.sanitize_feedback import SanitizeFeedback

pytestmark = pytest.mark.unit

SVG = "PHN2ZyBvbmxvYWQ9ImFsZXJ0KDEpIi8+"  # <svg onload="alert(1)"/>
HOSTILE_MARKDOWN = [
    "[click](javascript:alert(1))", "[click](JaVaScRiPt:alert(1))", "[click](&#106;avascript:alert(1))",
    "[click](java%0ascript:alert(1))", "[r]\n\n[r]: javascript:alert(1)", "![svg](data:image/svg+xml;base64," + SVG + ")",
    "[click](vbscript:msgbox(1))", "[click](data:text/html;base64,PHNjcmlwdD4=)",
]


def page(cells: list) -> str:
    nb = v4.new_notebook(cells=cells)
    nb, resources = SanitizeFeedback().preprocess(nb, {})
    body, _ = FeedbackPageExporter().from_notebook_node(nb, resources)
    return body


def hostile_cells() -> list:
    svg_only = v4.new_markdown_cell("**My figure** ![figure](attachment:figure.svg)",
                                    attachments={"figure.svg": {"image/svg+xml": SVG}})
    missing = v4.new_markdown_cell("![gone](attachment:gone.png)")
    return [svg_only, missing] + [v4.new_markdown_cell(text) for text in HOSTILE_MARKDOWN]


def test_a_page_is_rendered_whatever_the_attachments_hold():
    """An SVG-only attachment and an attachment the cell lacks each made the renderer fail the whole page; the
    prose around them is still rendered (an empty picture stands in), not shown as raw text."""
    body = page(hostile_cells())
    assert "<strong>My figure</strong>" in body and 'alt="gone"' in body


def test_the_sanitizer_alone_leaves_no_script_url_and_no_svg():
    body = page(hostile_cells()).lower()
    urls = re.findall(r"""(?:href|src)\s*=\s*["']([^"']*)""", body)
    assert urls and all(url.startswith(("data:image/png;base64,", "#", "https://")) for url in urls), urls
    assert body.count("<svg") == page([]).lower().count("<svg")  # the template's own icons only
    assert SVG.lower() not in " ".join(urls)


def test_honest_prose_links_and_pictures_stay():
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
    cells = [v4.new_markdown_cell("See [the docs](https://pytorch.org/docs) and `T <= max_seq_len`.\n\n"
                                  "![mask](attachment:mask.png)", attachments={"mask.png": {"image/png": png}})]
    body = page(cells)
    assert 'href="https://pytorch.org/docs"' in body and f"data:image/png;base64,{png}" in body
    assert "T &lt;= max_seq_len" in body
    assert body.count("Content-Security-Policy") == 1
