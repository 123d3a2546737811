"""Where a line of student code is, in words a Colab user can find: Colab numbers no cells.

A notebook's line is named by the graded name its cell defines ("the cell that defines
`MultiHeadAttention`, line 12"); a cell that defines none by its position from the top; a plain
`.py` file by its line alone. `where` is a located place (`Submission.locate`): `line`, and for a
notebook `cell` (1-based, among code cells) and `defines` where the cell defines a graded name.
"""
from __future__ import annotations


def place(where: dict, lang: str) -> str:
    line, cell, defines = where["line"], where.get("cell"), where.get("defines")
    if lang == "zh":
        if defines:
            return f"定义 `{defines}` 的单元格第 {line} 行"
        return f"从上往下第 {cell} 个代码单元格第 {line} 行" if cell else f"第 {line} 行"
    if defines:
        return f"the cell that defines `{defines}`, line {line}"
    return f"code cell {cell} from the top, line {line}" if cell else f"line {line}"


LINE_NUMBERS_HINT = {"zh": "（Colab 默认不显示行号：按 Ctrl+M L 打开。）",
                     "en": "(Colab hides line numbers by default: Ctrl+M L shows them.)"}
"""Said once in a report that quotes a line number: Colab's editor shows none until asked."""
