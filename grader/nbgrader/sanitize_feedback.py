"""Feedback step, the last: nothing a student wrote can be live markup in their feedback page.

The page is rendered from the autograded notebook, and instructors open it too. Markdown cells
may hold raw HTML (`<script>`, `<img onerror=…>`), which nbconvert passes through; raw cells and
outputs may hold HTML, SVG or JavaScript; metadata may hold anything. So, before the page is
rendered:

- markdown cells, raw cells and `text/html` / `text/markdown` outputs are cleaned with nh3
  (the Ammonia sanitizer) down to ALLOWED_TAGS, each with only the `class` attribute, and `img`
  only with a `data:image/png` source and an `alt`; what is left is text;
- outputs keep only the mimetypes a page shows safely: text, base64 PNG/JPEG, cleaned HTML and
  markdown (JavaScript, SVG, widget state and anything else is dropped);
- cell metadata keeps only `nbgrader`; notebook metadata only the kernel and language info;
  markdown attachments only PNG/JPEG images.

The kit's own verdicts (stream text, the weights picture, HTML tables within ALLOWED_TAGS) pass
unchanged. Markdown syntax itself (links, images) is rendered after this step, so each markdown cell is
rendered here too, by the page's own renderer: a cell whose links or images would carry any URL but
http(s), mailto, an anchor or a PNG/JPEG data URL (`javascript:`, SVG, however spelled) is shown as
plain text instead. An attachment nothing safe is left of (an SVG), or one the text names but the cell
lacks, becomes an empty picture, since the renderer fails the whole page on either. The page's
Content-Security-Policy (feedback_page_policy) is a second wall.
"""
from __future__ import annotations

import html
import re
import urllib.parse

import nh3
from nbconvert.exporters.exporter import ResourcesDict
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath
from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from traitlets import Bool

ALLOWED_TAGS = {
    "table", "thead", "tbody", "tr", "th", "td", "caption", "div", "span", "p", "ul", "ol", "li", "code", "pre",
    "b", "strong", "em", "i", "br", "hr", "blockquote", "sub", "sup", "details", "summary", "h1", "h2", "h3", "h4",
    "img",
}
"""What the kit's verdicts and a student's prose may use; every other tag is removed, its text kept."""
ALLOWED_ATTRIBUTES = {"*": {"class"}, "img": {"src", "alt"}}
IMAGE_SOURCE = re.compile(r"data:image/png;base64,[A-Za-z0-9+/=\s]*")
BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")
SAFE_OUTPUT_TYPES = {"text/plain", "text/html", "text/markdown", "image/png", "image/jpeg"}
SAFE_ATTACHMENT_TYPES = {"image/png", "image/jpeg"}
NOTEBOOK_METADATA_KEPT = ("kernelspec", "language_info")
SAFE_URL = re.compile(r"(https?://|mailto:|#|data:image/(png|jpeg);base64,)", re.I)
URL_ATTRIBUTE = re.compile(r"""\s(?:href|src|xlink:href|action|formaction|poster|srcset)\s*=\s*("[^"]*"|'[^']*'|[^\s>]+)""", re.I)
ATTACHMENT_NAME = re.compile(r"attachment:([^\s)\"'>]+)")
EMPTY_PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=")
"""A 1x1 transparent PNG: what an attachment with nothing safe in it shows."""
CELL_METADATA_KEPT = ("nbgrader",)


def _attribute(tag: str, attribute: str, value: str) -> str | None:
    if tag == "img" and attribute == "src" and not IMAGE_SOURCE.fullmatch(value):
        return None
    return value


def clean_html(html: str) -> str:
    """The HTML with only ALLOWED_TAGS and ALLOWED_ATTRIBUTES left; scripts and styles removed with their content."""
    return nh3.clean(html, tags=ALLOWED_TAGS, attributes=ALLOWED_ATTRIBUTES, url_schemes={"data"},
                     attribute_filter=_attribute, link_rel=None, strip_comments=True)


def clean_markdown(markdown: str) -> str:
    """Markdown with any raw HTML in it cleaned. Text in which the cleaner (an HTML5 parser, as the browser's)
    finds no markup at all stays as written, so `T <= max_seq_len` in a code span still reads so. Otherwise
    a `>` the cleaner escaped is put back (it opens no tag; markdown quotes need it); `<` stays escaped."""
    cleaned = clean_html(markdown)
    if cleaned == html.escape(markdown, quote=False):
        return markdown
    return cleaned.replace("&gt;", ">")


def rendered_urls_are_safe(markdown: str, attachments: dict) -> bool:
    """Every URL in the HTML the page's renderer makes of this markdown is one SAFE_URL allows."""
    try:
        rendered = MarkdownWithMath(renderer=IPythonRenderer(escape=False, attachments=attachments)).render(markdown)
    except Exception:  # a renderer failure would fail the whole page: show the text instead
        return False
    for match in URL_ATTRIBUTE.finditer(rendered):
        url = re.sub(r"[\x00-\x20]", "", html.unescape(match.group(1).strip("\"'")))
        if url and not SAFE_URL.match(url):
            return False
    return True


def as_text(markdown: str) -> str:
    """Markdown shown as written, nothing of it a link: one preformatted HTML block (it ends only at its
    closing tag, which escaping keeps out of the text)."""
    return f"<pre>{html.escape(markdown)}</pre>"


def safe_attachments(attachments, markdown: str) -> NotebookNode:
    """PNG/JPEG data only; an attachment with none left, or one the text names but the cell lacks, an empty PNG."""
    kept = NotebookNode()
    for name, bundle in (attachments or {}).items():
        if isinstance(bundle, dict):
            kept[name] = NotebookNode({t: v for t, v in bundle.items() if t in SAFE_ATTACHMENT_TYPES
                                       and isinstance(v, str) and BASE64.fullmatch(v)})
    for name in ATTACHMENT_NAME.findall(markdown):
        for spelling in (name, urllib.parse.unquote(name)):
            kept.setdefault(spelling, NotebookNode())
    for name, bundle in kept.items():
        if not bundle:
            kept[name] = NotebookNode({"image/png": EMPTY_PNG})
    return kept


def _text(value) -> str:
    return "".join(map(str, value)) if isinstance(value, list) else str(value)


def clean_output(output: NotebookNode) -> NotebookNode | None:
    """The output with only safe data, or None when nothing of it can be shown safely."""
    kind = output.get("output_type")
    if kind == "stream":  # rendered as escaped text
        return NotebookNode({"output_type": "stream", "name": str(output.get("name", "stdout")),
                             "text": _text(output.get("text", ""))})
    if kind == "error":  # rendered as escaped text
        return NotebookNode({"output_type": "error", "ename": str(output.get("ename", "")),
                             "evalue": str(output.get("evalue", "")),
                             "traceback": [str(line) for line in output.get("traceback", [])]})
    if kind not in ("display_data", "execute_result"):
        return None
    data = {}
    for mimetype, value in (output.get("data") or {}).items():
        if mimetype not in SAFE_OUTPUT_TYPES:
            continue
        value = _text(value)
        if mimetype == "text/html":
            value = clean_html(value)
        elif mimetype == "text/markdown":
            value = clean_markdown(value)
        elif mimetype.startswith("image/") and not BASE64.fullmatch(value):
            continue
        data[mimetype] = value
    if not data:
        return None
    metadata = {}
    for mimetype in ("image/png", "image/jpeg"):  # only an image's alt text, nothing in it that closes an attribute
        alt = ((output.get("metadata") or {}).get(mimetype) or {}).get("alt")
        if mimetype in data and isinstance(alt, str):
            metadata[mimetype] = {"alt": re.sub(r"[\"'<>&]", "", alt)}
    cleaned = NotebookNode({"output_type": kind, "data": data, "metadata": metadata})
    if kind == "execute_result":
        cleaned.execution_count = None
    return cleaned


class SanitizeFeedback(Preprocessor):
    """Clean markdown, raw cells, outputs and metadata so that nothing in the page runs or loads."""

    enabled = Bool(True, help="Sanitize feedback pages (on unless configured off).").tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        nb.metadata = NotebookNode({key: nb.metadata[key] for key in NOTEBOOK_METADATA_KEPT if key in nb.metadata})
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell: NotebookNode, resources: ResourcesDict,
                        index: int) -> tuple[NotebookNode, ResourcesDict]:
        cell.metadata = NotebookNode({key: cell.metadata[key] for key in CELL_METADATA_KEPT if key in cell.metadata})
        if cell.cell_type == "markdown":
            cell.source = clean_markdown(_text(cell.source))
            cell.attachments = safe_attachments(cell.get("attachments"), cell.source)
            if not rendered_urls_are_safe(cell.source, cell.attachments):
                cell.source = as_text(cell.source)
        elif cell.cell_type == "raw":
            cell.source = clean_html(_text(cell.source))
        if "attachments" in cell and cell.cell_type != "markdown":
            cell.attachments = safe_attachments(cell.attachments, "")
        if cell.cell_type == "code":
            cell.outputs = [cleaned for cleaned in map(clean_output, cell.get("outputs", [])) if cleaned is not None]
        return cell, resources
