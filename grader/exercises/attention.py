"""The exercise `attention`, declared once: causal scaled dot-product attention and a multi-head attention module.

Torch-free (grader/exercises/__init__.py says why). Everything that depends on the exercise's shape (cell split,
static rules, probes, checks, reports, fixtures, tests) iterates over `PARTS` instead of spelling a part out.
Adding a part starts here (docs/developing.md, "Adding a part").
"""
from __future__ import annotations

from grader.exercises import Exercise, Part

PARTS: tuple[Part, ...] = (
    Part("sdpa", 1, "scaled_dot_product_attention", "causal scaled dot-product attention", "sdpa", "sdpa_tests",
         10.0, "part1"),
    Part("mha", 2, "MultiHeadAttention", "multi-head attention module", "mha", "mha_tests", 10.0, "part2"),
)
PART = {part.id: part for part in PARTS}
PART_IDS = tuple(PART)
GRADED_NAME = {part.id: part.graded_name for part in PARTS}  # part -> the name it grades
GRADED_NAMES = tuple(GRADED_NAME.values())
MAX_SCORE = sum(part.points for part in PARTS)

PROVIDED_CELLS = ("imports", "model_args", "selfcheck")
"""grade_ids of the notebook's locked, provided cells, in order."""
IMPORTS = "import math, torch, torch.nn as nn, torch.nn.functional as F; from dataclasses import dataclass"
"""What the provided imports cell binds (a notebook that lost it is still graded on its code)."""

MODEL_ARGS_CLASS = "ModelArgs"
"""The provided dataclass of the module's hyperparameters, which Part 2's constructor takes."""
MODEL_ARGS = {"dim": 64, "n_heads": 4, "dropout": 0.0, "max_seq_len": 256}
"""The provided `ModelArgs` dataclass: its fields and the notebook's defaults, in order."""
MODEL_ARGS_TYPES = {"dim": "int", "n_heads": "int", "dropout": "float", "max_seq_len": "int"}

PROJECTIONS = ("wq", "wk", "wv", "wo")
"""`MultiHeadAttention`'s parameters, `nn.Linear(dim, dim, bias=False)`: the interface the grader loads
reference weights through."""
DROPOUTS = ("attn_dropout", "resid_dropout")


def model_args_source() -> str:
    """The provided `ModelArgs` as one line of Python (for a notebook that lost the provided cell)."""
    fields = "; ".join(f"{name}: {MODEL_ARGS_TYPES[name]} = {value!r}" for name, value in MODEL_ARGS.items())
    return f"class {MODEL_ARGS_CLASS}: {fields}"


EXERCISE = Exercise("attention", PARTS, PROVIDED_CELLS, IMPORTS, (IMPORTS, "@dataclass", model_args_source()),
                    ("selfcheck.py",))
