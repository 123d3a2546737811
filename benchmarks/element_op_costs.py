"""What an elementwise operator costs this CPU per element, over an add in the same dtype: the per-class weights
of grader.graph.costs (TRANSCENDENTAL, POWERS) come from this. One thread, as the judge runs.

    .venv/bin/python benchmarks/element_op_costs.py
"""
from __future__ import annotations

import time

import torch

ELEMENTS = 1 << 20


def seconds_per_element(op, x: torch.Tensor, repeats: int = 20) -> float:
    op(x)
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        op(x)
        best = min(best, time.process_time() - start)
    return best / x.numel()


def main() -> None:
    torch.set_num_threads(1)
    real = torch.rand(ELEMENTS) + 0.5
    complex_ = torch.complex(real, real.flip(0))
    add = seconds_per_element(lambda x: x + x, real)
    rows = {"float32 add": add}
    for name in ("sigmoid", "exp", "log", "tanh", "sin", "erf", "atan", "lgamma", "digamma"):
        rows[f"float32 {name}"] = seconds_per_element(getattr(torch, name), real)
    rows["float32 pow (tensor exponent)"] = seconds_per_element(lambda x: torch.pow(x, x), real)
    rows["float32 pow (2.5)"] = seconds_per_element(lambda x: torch.pow(x, 2.5), real)
    for name in ("add", "mul", "exp", "log", "sigmoid", "tanh", "sqrt"):
        op = (lambda x: x + x) if name == "add" else (lambda x: x * x) if name == "mul" else getattr(torch, name)
        rows[f"complex64 {name}"] = seconds_per_element(op, complex_)
    rows["complex64 pow (tensor exponent)"] = seconds_per_element(lambda x: torch.pow(x, x), complex_)
    print(f"{'operator':34} {'ns/element':>11} {'x float32 add':>14}")
    for name, seconds in rows.items():
        print(f"{name:34} {seconds * 1e9:11.2f} {seconds / add:14.1f}")


if __name__ == "__main__":
    main()
