"""Which regime and layout each call of a check is made in, so that no check's verdict can be steered by how its
inputs are handed over.

Real use hands the code its inputs in training (gradients on, inputs made by an operation from leaves that need grad,
parameters needing grad) and in inference (under `torch.no_grad()`), and Part 1 meets them laid out as Part 2 makes
them (`heads`: not contiguous) as well as contiguous. Code could read any of these plain properties
(`requires_grad`, `is_leaf`, `torch.is_grad_enabled()`, `is_contiguous()`, a stride) and behave well only where a
check looks. So every check that compares several calls spreads its calls over every regime (and, in Part 1, every
layout), each in an order drawn per grading (`Context.sizes`): code keyed on a property meets both of its values in
one check, and where the verdict compares the calls (op counts, the stand-ins, outputs before and after the future
changed) its two paths disagree whichever way it is keyed.
"""
from __future__ import annotations

import itertools
import random

from grader.checks import Context
from grader.checks.secret import seed as secret_seed
from grader.sandbox.requests import REGIMES

SPREAD_LAYOUTS = ("heads", "contiguous")
"""Part 1's layouts real use hands over: Part 2's heads after `transpose(1, 2)`, and contiguous tensors."""


def _draw(ctx: Context, label: str) -> random.Random:
    return random.Random(secret_seed(ctx.secret, "regimes", label))


def regimes(ctx: Context, label: str, kinds: list) -> list[str]:
    """One regime per call: the calls of each kind (a layout, a shape class, or None) take the regimes in turn,
    from a start drawn per grading, so two calls of a kind meet both."""
    draw = _draw(ctx, label)
    starts: dict = {}
    taken: dict = {}
    chosen = []
    for kind in kinds:
        if kind not in starts:
            starts[kind], taken[kind] = draw.randrange(len(REGIMES)), 0
        chosen.append(REGIMES[(starts[kind] + taken[kind]) % len(REGIMES)])
        taken[kind] += 1
    return chosen


def combinations(ctx: Context, label: str, count: int, layouts: tuple[str, ...] = SPREAD_LAYOUTS) -> list[tuple[str, str]]:
    """`count` (layout, regime) pairs: every pair of `layouts` x regimes once before any repeats, in an order drawn
    per grading."""
    pairs = list(itertools.product(layouts, REGIMES))
    _draw(ctx, label).shuffle(pairs)
    return list(itertools.islice(itertools.cycle(pairs), count))
