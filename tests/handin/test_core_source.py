"""Does the reader turn notebook cells into the module the grader runs, keeping only what the graded names need?

Pure text work (grader.handin.source): no sandbox, no torch.
"""
from grader.exercises import attention
from grader.handin.cell_magics import strip_magics
from grader.handin.source import MAX_CODE_LINES, submission_from_cells

import pytest

pytestmark = pytest.mark.unit

IMPORTS = "import torch\nimport torch.nn as nn"
SDPA = attention.PART["sdpa"].graded_name
MHA = attention.PART["mha"].graded_name


def definition(name: str, body: str = "return helper(Q)") -> str:
    if name == MHA:
        return f"class {name}(nn.Module):\n    def forward(self, q, k, v):\n        {body}"
    return f"def {name}(Q, K, V, is_causal=True):\n    {body}"


def test_graded_definitions_and_what_they_use_are_kept_everything_else_dropped():
    """Is a helper from another cell kept, and are prints, plots and test calls left out?"""
    cells = [IMPORTS, "def helper(x):\n    return x\n\nprint('plot')", definition(SDPA),
             f"{SDPA}(1, 2, 3)\nunused = 5"]
    submission = submission_from_cells(cells, "a.ipynb")
    assert submission.refusal is None and not submission.syntax_errors
    assert f"def {SDPA}(" in submission.source and "def helper(x):" in submission.source
    assert "print('plot')" not in submission.source and "unused = 5" not in submission.source
    assert f"{SDPA}(1, 2, 3)" not in submission.source


def test_every_declared_graded_name_is_kept():
    """Is each part's graded name (grader.exercises.attention) extracted, whatever the parts are?"""
    cells = [IMPORTS, "def helper(x):\n    return x"] + [definition(part.graded_name) for part in attention.PARTS]
    source = submission_from_cells(cells, "a.ipynb").source
    for part in attention.PARTS:
        assert f" {part.graded_name}(" in source, part.id


def test_a_line_of_the_module_maps_back_to_the_students_cell_and_line():
    """Is an error's line in the executed module reported as (cell, line) of the notebook, counted from 1?"""
    cells = [IMPORTS, "x = 1\n\n" + definition(SDPA, "return Q")]
    submission = submission_from_cells(cells, "a.ipynb")
    module_line = submission.source.splitlines().index("    return Q") + 1
    assert submission.locate({"line": module_line, "text": "return Q"}) == \
        {"line": 4, "text": "return Q", "cell": 2, "defines": SDPA}  # Colab numbers no cells: named by what it defines
    helper = submission_from_cells([IMPORTS, "def helper(x):\n    return x", definition(SDPA)], "a.ipynb")
    assert "defines" not in helper.locate({"line": helper.source.splitlines().index("    return x") + 1})
    plain = submission_from_cells(cells, "a.py", is_notebook=False)
    assert plain.locate({"line": module_line})["line"] == 4 and "cell" not in plain.locate({"line": module_line})


def test_a_broken_cell_does_not_hide_the_others():
    """Is a syntax error recorded with its cell and line while the other cells are still extracted?"""
    cells = [IMPORTS, "def oops(:\n    pass", definition(SDPA, "return Q")]
    submission = submission_from_cells(cells, "a.ipynb")
    assert [(e["cell"], e["line"], e["type"]) for e in submission.syntax_errors] == [(1, 1, "SyntaxError")]
    assert f"def {SDPA}(" in submission.source


def test_magics_are_blanked_and_non_python_cells_dropped():
    """Does a `%%time` cell keep its Python, while `%%bash` and `!pip` lines are not Python?"""
    assert strip_magics("%%time\nx = 1") == "\nx = 1"
    assert strip_magics("%%bash\nrm -rf /") == ""
    assert strip_magics("!pip install einops\nimport einops") == "\nimport einops"
    submission = submission_from_cells([IMPORTS, "%%time\n" + definition(SDPA, "return Q")], "a.ipynb")
    assert f"def {SDPA}(" in submission.source and not submission.syntax_errors


def test_code_over_the_line_cap_is_refused_before_parsing():
    submission = submission_from_cells(["x = 1\n" * (MAX_CODE_LINES + 1)], "a.ipynb")
    assert submission.refusal is not None and submission.refusal.mistake == "submission-too-large"
    assert submission.source == ""


def test_a_broken_rule_in_a_notebook_is_placed_by_the_cell_that_defines_the_graded_name():
    """Colab numbers no cells: the rules gate's line names the cell by the class it defines, in both languages."""
    from grader.rules import violations
    mha = "class MultiHeadAttention:\n    def forward(self, x):\n        import os\n        return x\n"
    submission = submission_from_cells(["import torch", "print('hi')", mha], "attention.ipynb")
    found = [v for v in violations(submission.source, attention.EXERCISE) if v.mistake == "forbidden-import"]
    where = submission.locate({"line": found[0].line, "text": found[0].text, "function": "<module>"})
    assert found[0].describe("en", where).startswith("the cell that defines `MultiHeadAttention`, line 3 `import os`")
    assert found[0].describe("zh", where).startswith("定义 `MultiHeadAttention` 的单元格第 3 行")


def test_a_percent_line_that_continues_a_statement_is_python_not_a_magic():
    """Is a line opening with `%` inside brackets, a string or after a backslash kept, while a magic at the
    start of a statement (indented too) is still blanked?"""
    continued = 'assert d % h == 0, (\n    "dim %d, heads %d"\n    % (d, h))\n'
    assert strip_magics(continued) == continued.rstrip("\n")
    assert strip_magics('x = 1 + \\\n  % 3') == 'x = 1 + \\\n  % 3'
    assert strip_magics('doc = """\n%d lines\n"""') == 'doc = """\n%d lines\n"""'
    assert strip_magics('f(a,  # a comment (\n)\n!ls') == 'f(a,  # a comment (\n)\n'
    assert strip_magics('if True:\n    !pip install einops\n%timeit f()') == 'if True:\n\n'


def test_a_py_file_has_no_magics():
    """A .py hand-in is Python throughout: its `%` continuation line is kept whole, not blanked."""
    code = IMPORTS + "\n" + definition(SDPA, 'assert Q.dim() % 2 >= 0, (\n        "dims %d"\n        % Q.dim())\n    return Q')
    submission = submission_from_cells([code], "a.py", is_notebook=False)
    assert "% Q.dim())" in submission.source and not submission.syntax_errors


def test_a_future_import_is_kept_though_no_definition_reads_it():
    """`from __future__ import annotations` changes how every later statement compiles: it always runs."""
    code = "from __future__ import annotations\n" + IMPORTS + "\n" + definition(SDPA, "return Q")
    assert "from __future__ import annotations" in submission_from_cells([code], "a.py", is_notebook=False).source


def test_speed_up_decorators_run_as_the_identity():
    """`@torch.compile` (with options too) and `@torch.jit.script`, however torch is imported, are dropped with
    their lines; a call of torch.compile elsewhere is left to the grading rules."""
    helper = ("import torch as t\nfrom torch import jit\n\n@t.compile(\n    mode='reduce-overhead')\ndef a(x):\n    return x\n\n"
              "@jit.script\ndef b(x):\n    return x\n\nfast = torch.compile(a)\n\n")
    code = IMPORTS + "\n" + helper + definition(SDPA, "return b(fast(Q))")
    source = submission_from_cells([code], "a.py", is_notebook=False).source
    assert "@t.compile(" not in source and "mode='reduce-overhead')" not in source and "@jit.script" not in source
    assert "def a(x):" in source and "def b(x):" in source and "fast = torch.compile(a)" in source
    assert len(source.splitlines()) == len(code.splitlines()) + len(attention.EXERCISE.provided_code)
