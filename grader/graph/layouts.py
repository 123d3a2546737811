"""How a probe lays out Part 1's inputs in memory, the same in the worker and in the parent (whose graph run must
meet the strides the code met): as real use hands them over, not only as fresh contiguous tensors.

`heads` is the layout Part 2 hands Part 1 after `view(B, T, H, d).transpose(1, 2)`: not contiguous, the last dim
still of stride 1. `columns` stores each (T, d) matrix transposed. Code that reads `is_contiguous()` or a stride
meets every layout a check compares (grader/checks/regimes.py).
"""
from __future__ import annotations

import torch

LAYOUTS = ("contiguous", "heads", "columns")


def laid_out(tensor: torch.Tensor, layout: str) -> torch.Tensor:
    """`tensor`'s values in `layout`; `heads` needs a leading dim (with none, the columns layout stands in)."""
    if layout == "contiguous":
        return tensor
    first, second = (-3, -2) if layout == "heads" and tensor.dim() >= 3 else (-2, -1)
    return tensor.transpose(first, second).contiguous().transpose(first, second)
