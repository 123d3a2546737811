"""Whether a graph stands for the code where values left it for Python (`.item()`, `.tolist()`, a branch on a tensor):
the graph is run on other values of the call's inputs beside the code itself, in several draws (`REPLAYS`), and both
must give the same outputs. Runs in the worker (`graph_probes._recorded`), before the answer is sent.
"""
from __future__ import annotations

import torch

from grader.graph import decode, run
from grader.sandbox.probes import _seed
from grader.sandbox.request_tensors import alike, magnitude, sameness


def faithful(answer: dict, call, inputs: list, varied: int) -> bool:
    try:
        return replayed_as_called(answer, call, inputs, varied)
    except Exception:  # the code or its graph fails on other values: the graph cannot stand for the code
        return False


REPLAY_SEED = 0
"""The replay of a graph whose values left for Python and the direct call it is compared with draw from one seed (a
module that reads a value in train() lost its dropout point to two different dropout masks, red team on the first
lab)."""


REPLAYS = (1.0, 0.5, -1.0, 2.0, "later x5")
"""How the replay's other values are drawn, each from one draw at the inputs' magnitude: as drawn, half and twice as
large (a magnitude is rounded to a power of 4: the parent's inputs may lie between), negated, and with the later half
of the positions five times larger, as a check redraws the future (red team on issue 42: floats read with `.item()`
and compared in Python chose the path the decoys' draw gave, where the parent's inputs take another). Inputs of half
precision meet the first three only (larger ones overflow, and honest code that asserts they are finite would fail)."""


def replayed_as_called(answer: dict, call, inputs: list, varied: int) -> bool:
    generator = torch.Generator().manual_seed(7)
    drawn = [(torch.randn(t.shape, generator=generator, dtype=torch.float64) * magnitude(t)
              * (t != 0 if t.is_floating_point() else 1)) for t in inputs[:varied]]  # a zero stays zero: unwritten
    halves = any(t.dtype in (torch.float16, torch.bfloat16) for t in inputs[:varied])  # slots of a cache
    graph = decode.decode(bytes(answer["graph"].numpy().tobytes()), len(answer["constants"]))
    pattern = sameness(inputs[:varied])  # one input given twice, or equal ones, stay so in every draw
    for replay in REPLAYS[:3] if halves else REPLAYS:
        other = [_varied(t, replay).to(inputs[i].dtype) for i, t in enumerate(drawn)] + [
            t.detach() for t in inputs[varied:]]
        for i, same in enumerate(pattern):
            if same is not None:
                other[i] = other[same[1]] if same[0] == "is" else other[same[1]].clone()
        replayed, _ = run.run(graph, other, answer["constants"], seed=REPLAY_SEED)
        _seed(REPLAY_SEED)  # a dropout in train() draws here what the replay drew: the same seed gives the same draw
        direct = call(*alike(other, lambda t: t.detach().clone()))  # one input given twice stays one
        if not (len(replayed) == len(direct) and all(
                torch.allclose(a.detach().double(), b.detach().double(), rtol=1e-4, atol=1e-5, equal_nan=True)
                for a, b in zip(replayed, direct))):
            return False
    return True


def _varied(drawn: torch.Tensor, replay) -> torch.Tensor:
    if replay != "later x5":
        return drawn * replay
    if drawn.dim() < 2:
        return drawn
    later = torch.arange(drawn.size(-2)) >= drawn.size(-2) // 2
    return drawn * torch.where(later, 5.0, 1.0).to(drawn.dtype).unsqueeze(-1)
