"""Does the loop check's operator count of honest code stay one number whatever the probe's regime and layout?

The probes hand Part 1 its inputs in two regimes (training: gradients on, inputs that need grad; inference:
`no_grad`) and two layouts (contiguous, and the transposed view Part 2 passes), in an order drawn per grading, and
the loop check compares counts across them (docs/isolation.md). Autograd detaches each output it saves, and a view
of a non-contiguous tensor becomes clone + _unsafe_view: counting those made an honest ScaleNorm-style file a
`python-loop` under some grading keys. Every correct style and correct corpus file is traced as the worker records it,
in all four, and counted by the parent's own `ops_counted`.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

from grader.graph.answers import Findings, ops_counted
from grader.sandbox import tracing
from support.paths import CORPUS

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(CORPUS))
from expected import ALL  # noqa: E402

HONEST = sorted(ROOT.glob("tests/submissions/correct/*.py")) + sorted(
    CORPUS / f"{name}.py" for name, row in ALL.items() if not row["fails"])


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"counted_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass of the file looks its module up
    spec.loader.exec_module(module)
    return module


def _counted(function, inputs: list[torch.Tensor]) -> int:
    recorder = tracing.trace(lambda *given: [t for t in function(*given) if isinstance(t, torch.Tensor)], inputs)
    text, constants = tracing.encode(recorder)
    return ops_counted({"graph": text, "constants": constants}, Findings())[0]


def _inputs(training: bool, transposed: bool) -> list[torch.Tensor]:
    made = [torch.randn(2, 5, 3, 4).transpose(1, 2) if transposed else torch.randn(2, 3, 5, 4) for _ in range(3)]
    return [(x.detach().requires_grad_() * 1) if training else x for x in made]  # made by an operation: no leaf


@pytest.mark.parametrize("path", HONEST, ids=[p.stem for p in HONEST])
def test_an_honest_part_1_counts_alike_in_every_regime_and_layout(path):
    sdpa = _load(path).scaled_dot_product_attention
    counts = {}
    for training in (True, False):
        for transposed in (False, True):
            with torch.enable_grad() if training else torch.no_grad():
                counts[training, transposed] = _counted(lambda q, k, v: sdpa(q, k, v, True),
                                                        _inputs(training, transposed))
    assert len(set(counts.values())) == 1, counts
