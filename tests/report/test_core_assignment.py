"""Do the declaration of the assignment and what is built from it agree?

grader.exercises.attention against the registered checks and the demo's notebook builder: no sandbox.
"""
import pytest

from grader.exercises import attention
from grader.checks import checks_for
from grader.demo.class_notebooks import answers_from_python
from support.paths import ROOT
from grader.exercises.attention import EXERCISE

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("part", attention.PARTS, ids=attention.PART_IDS)
def test_a_parts_declared_points_are_its_checks_points(part):
    assert sum(c.points for c in checks_for(part.id)) == part.points


def test_every_check_belongs_to_a_declared_part():
    assert {c.part for c in checks_for(exercise=EXERCISE)} == set(attention.PART_IDS)
    assert sum(c.points for c in checks_for(exercise=EXERCISE)) == attention.MAX_SCORE


def test_a_py_submission_splits_into_one_solution_cell_per_part(tmp_path):
    """Each part's cell holds its graded name and what follows; the provided imports and ModelArgs stay in theirs."""
    helpers = "import math\nimport torch\nimport torch.nn as nn\nfrom dataclasses import dataclass\n" \
              "from einops import rearrange\n\n@dataclass\n" \
              "class ModelArgs:\n    dim: int = 8\n\ndef helper(x):\n    return x\n"
    definitions = "\n".join(f"def {part.graded_name}():\n    return helper({part.number})\n" for part in attention.PARTS)
    path = tmp_path / "submission.py"
    path.write_text(helpers + definitions, encoding="utf-8")
    cells = answers_from_python(path)
    assert list(cells) == [part.solution_cell for part in attention.PARTS]
    first = attention.PARTS[0].solution_cell
    assert cells[first].startswith("from einops import rearrange\n\n\ndef helper(x):")
    for part in attention.PARTS:
        assert f"def {part.graded_name}():" in cells[part.solution_cell]
        assert all(f"def {other.graded_name}():" not in cells[part.solution_cell]
                   for other in attention.PARTS if other != part)
    assert not any("class ModelArgs" in text or "import torch\n" in text or "import math" in text or "dataclasses" in text
                   for text in cells.values())


def test_readme_catalog_table_is_the_catalog():
    """The docs' mistake catalog (docs/reading-a-report.md) lists exactly grader/mistakes.json's ids, with their titles and
    fix-first groups."""
    import json
    import re

    root = ROOT
    catalog = json.loads((root / "grader" / "mistakes.json").read_text(encoding="utf-8"))
    rows = re.findall(r"^\| `([a-z0-9-]+)` \| (.+?) \| (.+?) \| ([a-z-]+) \|$", (root / "docs" / "reading-a-report.md").read_text(encoding="utf-8"),
                      re.M)
    table = {mistake: (zh, en, group) for mistake, zh, en, group in rows}
    assert table == {m: (e["title_zh"], e["title_en"], e["fix_first"]) for m, e in catalog.items()}
