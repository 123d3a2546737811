"""Which cells a notebook's JSON holds, read as nbformat reads them.

nbgrader reads every notebook through nbformat, which picks the cells by the declared version; the kit's
own reading (grader.handin.source) must pick the same ones, or a file holding both `cells` and `worksheets`
scores differently on the two paths (it once scored 20/20 through `grader grade` and 0/20 through
`nbgrader autograde`).
"""
from __future__ import annotations

from grader.handin.clean_text import printable


class NotebookVersionRefused(Exception):
    def __init__(self, zh: str, en: str) -> None:
        super().__init__(en)
        self.zh, self.en = zh, en


def notebook_cells(notebook: dict, name: str) -> tuple[list, str]:
    """The cells and the key of their code, read as nbformat reads them (nbgrader reads every notebook through
    it), so a file holding both `cells` and `worksheets` is read the same way on every path: by its declared
    version, 3 from the worksheets' `input`, 4 from the cells' `source`. Any other version is refused."""
    major = notebook.get("nbformat")
    if major in (2, 3):  # nbformat's upgrade flattens every worksheet and takes `input` as the source
        worksheets = notebook.get("worksheets")
        cells = [c for ws in worksheets if isinstance(ws, dict) and isinstance(ws.get("cells", []), list)
                 for c in ws.get("cells", [])] \
            if isinstance(worksheets, list) else []
        return cells, "input"
    if major == 4:
        cells = notebook.get("cells")
        return (cells if isinstance(cells, list) else []), "source"
    shown_zh, shown_en = ("没有声明 nbformat 版本", "declares no nbformat version") if major is None else \
        (f"声明的 nbformat 版本是 {printable(repr(major)[:20], keep_newlines=False)}",
         f"declares nbformat version {printable(repr(major)[:20], keep_newlines=False)}")
    raise NotebookVersionRefused(f"{name} {shown_zh}，notebook 只按第 3 或第 4 版读取。",
                                 f"{name} {shown_en}; notebooks are read as version 3 or 4 only.")
