"""Part 1's probes as the checks use them: inputs drawn per grading, one call of repeat_kv with its structural
check, the head map its output shows, and the shape probe the device and loop checks take an input from."""
from __future__ import annotations

import dataclasses

import torch

from grader.checks import Context, Outcome, failed
from grader.checks.common import failed_with_error, resource_failure
from grader.checks.regimes import regimes
from grader.sandbox.requests import FunctionRequest, Probe

# (B, H_kv, T, d, n_rep): n_rep = 1 (the output is x itself, or an equal tensor), one key/value head, T = 1, a long T,
# a width that is not a power of two, heads != positions, many groups of few heads and few groups of many
SHAPES = [(2, 2, 5, 8, 4), (1, 4, 3, 6, 1), (3, 1, 1, 4, 8), (2, 3, 7, 5, 2), (1, 2, 64, 16, 3), (4, 8, 2, 4, 1),
          (2, 4, 6, 12, 2)]


def keys(ctx: Context, B: int, H_kv: int, T: int, d: int, seed: int, dtype=torch.float32) -> torch.Tensor:
    """A (B, H_kv, T, d) input drawn per grading: every head holds other values, so each output head shows which
    input head it copied."""
    return torch.randn(B, H_kv, T, d, generator=ctx.generator(seed)).to(dtype)


def output(answer: dict) -> dict:
    outputs = answer.get("outputs") or [{}]
    return outputs[0] if isinstance(outputs[0], dict) else {}


def value(answer: dict) -> torch.Tensor | None:
    item = output(answer)
    return item.get("value") if item.get("kind") == "tensor" else None


def structure_problem(answer: dict, expected: tuple) -> Outcome | None:
    """repeat_kv must return one tensor of shape (B, H_kv * n_rep, T, d)."""
    structure, item = answer.get("structure", {}), output(answer)
    if structure.get("kind") != "tensor" or item.get("kind") != "tensor":
        got = structure.get("kind") if structure.get("length") is None else \
            f"{structure.get('kind')} of length {structure.get('length')}"
        return failed(f"应返回一个张量，实际返回了 {got}。", f"Expected one tensor, got {got}.", ["wrong-return"])
    if tuple(item["shape"]) != tuple(expected):
        return failed(f"输出的形状应为 {tuple(expected)}，实际为 {tuple(item['shape'])}。",
                      f"The output should have shape {tuple(expected)}, got {tuple(item['shape'])}.", ["wrong-return"])
    return None


def expected_shape(x: torch.Tensor, n_rep: int) -> tuple:
    B, H_kv, T, d = x.shape
    return B, H_kv * n_rep, T, d


def checked(ctx: Context, answer: dict, x: torch.Tensor, n_rep: int) -> tuple[dict, Outcome | None]:
    if "error" in answer:
        return answer, failed_with_error(ctx, answer["error"], "调用 repeat_kv", "calling repeat_kv")
    return answer, structure_problem(answer, expected_shape(x, n_rep))


def call(ctx: Context, x: torch.Tensor, n_rep: int, **options) -> tuple[dict, Outcome | None]:
    """Run the student's repeat_kv on (x, n_rep) and apply the structural check every check relies on."""
    return checked(ctx, ctx.student.call(Probe.REPEAT, request(x, n_rep, **options)), x, n_rep)


def request(x: torch.Tensor, n_rep: int, **options) -> FunctionRequest:
    return FunctionRequest(part="repeat", arguments=[x, n_rep], **options)


def probe_shapes(ctx: Context) -> list[tuple[tuple, Outcome | None]]:
    """Every promised shape, each in a regime drawn per grading: (shape, its first problem or None). Run once per
    grading: repeat.shapes judges it, the device and loop probes need a shape the code runs on."""
    if "repeat" not in ctx.probed:
        results = []
        chosen = regimes(ctx, "repeat.shapes", [None] * len(SHAPES))
        for seed, (shape, regime) in enumerate(zip(SHAPES, chosen), start=200):
            *dims, n_rep = shape
            x = keys(ctx, *dims, seed)
            _, problem = call(ctx, x, n_rep, regime=regime)
            if problem:
                problem = dataclasses.replace(problem, zh=f"输入 x{tuple(x.shape)}、n_rep={n_rep}：" + problem.zh,
                                              en=f"Input x{tuple(x.shape)}, n_rep={n_rep}: " + problem.en)
            results.append((shape, problem))
            if problem and resource_failure(problem):  # no other shape will do better, and each try costs seconds
                break
        ctx.probed["repeat"] = results
    return ctx.probed["repeat"]


def runs_somewhere(ctx: Context) -> bool:
    """Whether the code returned the promised shape for some n_rep > 1 (where it repeats anything at all)."""
    return any(problem is None and shape[-1] > 1 for shape, problem in probe_shapes(ctx))


def head_map(out: torch.Tensor, x: torch.Tensor) -> list[int | None]:
    """For each output head, the input head it equals exactly (every input head holds other values), or None."""
    found = []
    for h in range(out.size(1)):
        same = [j for j in range(x.size(1)) if torch.equal(out[:, h].double(), x[:, j].double())]
        found.append(same[0] if same else None)
    return found
