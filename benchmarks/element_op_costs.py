"""What an elementwise operator costs this CPU per element, over an add in the same dtype: the per-class weights
of grader.graph.costs (TRANSCENDENTAL, POWERS) come from this. Then what an operator priced by its work (a window,
a convolution, distances, a decomposition) costs per unit of the work grader.graph.costs charges it, over the same
add: a ratio at or under 16 (an element touched) means the estimate holds. One thread, as the judge runs.

    .venv/bin/python benchmarks/element_op_costs.py
"""
from __future__ import annotations

import time

import torch
import torch.nn.functional as F

ELEMENTS = 1 << 20


def seconds_per_element(op, x: torch.Tensor, repeats: int = 20) -> float:
    op(x)
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        op(x)
        best = min(best, time.process_time() - start)
    return best / x.numel()


def seconds_per_unit(op, units: float, repeats: int = 5) -> float:
    op()
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        op()
        best = min(best, time.process_time() - start)
    return best / units


def work_priced(add: float) -> dict[str, float]:
    """Seconds per unit of charged work (output x window, output x in-channels x kernel, distances x features,
    2 n**3 for a decomposition), for an operator of each class the cost model prices by its work."""
    signal, image = torch.rand(1, 1, 1 << 18), torch.rand(1, 1, 256, 256)
    channels, weight = torch.rand(1, 64, 4096), torch.rand(64, 64, 9)
    points, square = torch.rand(1, 512, 256), torch.rand(256, 256) + 256 * torch.eye(256)
    rows = {
        "max_pool1d, window 256 (per output x window)":
            seconds_per_unit(lambda: F.max_pool1d(signal, 256, 1), ((1 << 18) - 255) * 256),
        "avg_pool2d, window 16x16":
            seconds_per_unit(lambda: F.avg_pool2d(image, 16, 1), 241 * 241 * 256),
        "conv1d, 64 channels, kernel 9 (per output x C_in x k)":
            seconds_per_unit(lambda: F.conv1d(channels, weight), 64 * 4088 * 64 * 9),
        "cdist, 512 x 512 over 256 (per distance x feature)":
            seconds_per_unit(lambda: torch.cdist(points, points), 512 * 512 * 256),
        "linalg_inv, 256 x 256 (per 2 n^3)": seconds_per_unit(lambda: torch.linalg.inv(square), 2 * 256 ** 3),
        "linalg_svd, 256 x 256 (per 2 n^3)": seconds_per_unit(lambda: torch.linalg.svd(square), 2 * 256 ** 3),
    }
    return {name: seconds / add for name, seconds in rows.items()}


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
    print(f"\n{'priced by its work':54} {'x float32 add':>14}")
    for name, ratio in work_priced(add).items():
        print(f"{name:54} {ratio:14.2f}")


if __name__ == "__main__":
    main()
