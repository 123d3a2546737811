"""Do the graphs of honest attention code cost a small part of what a graph may cost?

The judge refuses a graph whose estimated work passes 4 * 10**10 multiply-adds (docs/isolation.md), with every
operator priced by what it does (grader/graph/costs.py: a product by its contracted length, a window, a convolution
or a decomposition by its work). Each correct style of the suite is traced as the worker records it (64 positions, 4
heads of 16, a model width of 64), forward and backward, and each graph's
estimated work is held under a hundredth of that bound (the largest is about 6 * 10**7, under a six-hundredth):
pricing what honest code does not use can never cost it a point.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

from grader.graph import decode, run
from grader.handin import parent_budget
from grader.sandbox import tracing

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
CORRECT = sorted(ROOT.glob("tests/submissions/correct/*.py"))
GRAPH_BOUND = 4e10  # docs/isolation.md: a graph's work, in float32 multiply-adds


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"costed_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass of the file looks its module up
    spec.loader.exec_module(module)
    return module


def _estimated_work(function, inputs: list[torch.Tensor]) -> float:
    """The operations the runner charges for the graph of `function(*inputs)` and its backward, run on the inputs."""
    def forward_and_backward(*given):
        outputs = [t for t in function(*given) if isinstance(t, torch.Tensor)]
        grads = torch.autograd.grad(sum(o.float().sum() for o in outputs), given, allow_unused=True)
        return outputs + [g for g in grads if g is not None]

    recorder = tracing.trace(forward_and_backward, inputs)
    text, constants = tracing.encode(recorder)
    graph = decode.decode(bytes(text.numpy()), constants=len(constants))
    with parent_budget.charged(parent_budget.ParentBudget()) as budget:
        run.run(graph, [t.detach() for t in inputs], constants)
    return budget.spent_operations


@pytest.mark.parametrize("path", CORRECT, ids=[p.stem for p in CORRECT])
def test_an_honest_graph_costs_under_a_hundredth_of_the_bound(path):
    module = _load(path)
    torch.manual_seed(0)
    work = []
    q, k, v = (torch.randn(2, 4, 64, 16, requires_grad=True) for _ in range(3))
    work.append(_estimated_work(lambda q, k, v: module.scaled_dot_product_attention(q, k, v, True), [q, k, v]))
    args = module.ModelArgs()
    args.dim, args.n_heads, args.dropout = 64, 4, 0.0  # the file's defaults may be a model's (768, 12)
    attention = module.MultiHeadAttention(args, True)
    x = torch.randn(2, 64, args.dim, requires_grad=True)
    work.append(_estimated_work(lambda x: [attention(x, x, x)], [x]))
    assert all(0 < w < GRAPH_BOUND / 100 for w in work), work
