"""Is a corpus file right? Decided by float64 comparison with references written here, never by the grader.

`failures(path)` runs the file's two graded names on every input shape the interface promises and returns the
names of the probes it fails. An empty list means the file is correct. The probes:

- `sdpa.lead0` .. `sdpa.lead3`: zero to three leading dims, d_k != d_v, causal and not, out and weights.
- `sdpa.t1`: one token.
- `sdpa.device` / `mha.device`: run on the `meta` device under a mode that records every op mixing a tensor of
  another device into it (a CPU mask built without `device=`); on a GPU that op raises, on `meta` some pass.
- `mha.values` (B=2), `mha.b1`, `mha.t1`, `mha.tmax` (T = max_seq_len): reference weights loaded into wq..wo,
  eval() with dropout > 0, causal and not, q, k, v different tensors.
- `mha.loop`: the number of tensor ops must not grow with the number of heads (a Python loop over heads does).
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import math
from pathlib import Path
from types import ModuleType, SimpleNamespace

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from grader.exercises.attention import DROPOUTS, GRADED_NAME, PROJECTIONS

ATOL, RTOL = 1e-6, 1e-5  # float64 inputs; loose enough for a float32 softmax round trip, far below any real bug
D_K, D_V, T = 8, 6, 5
ARGS = dict(dim=32, n_heads=4, dropout=0.25, max_seq_len=12)


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"corpus_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def reference_sdpa(Q, K, V, is_causal):
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    if is_causal:
        n = Q.shape[-2]
        scores = scores.masked_fill(torch.ones(n, n, dtype=torch.bool, device=Q.device).triu(1), float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ V, weights


def reference_mha(weights, q, k, v, n_heads, is_causal):
    B, n, D = q.shape

    def heads(x, name):
        return (x @ weights[name].T).view(B, n, n_heads, D // n_heads).transpose(1, 2)

    out, _ = reference_sdpa(heads(q, "wq"), heads(k, "wk"), heads(v, "wv"), is_causal)
    return out.transpose(1, 2).reshape(B, n, D) @ weights["wo"].T


class MixedDevices(TorchDispatchMode):
    """Records ops that combine tensors (more than one element) from different devices."""

    def __init__(self):
        super().__init__()
        self.mixed: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        flat, _ = tree_flatten((args, kwargs or {}))
        devices = {t.device.type for t in flat if isinstance(t, torch.Tensor) and t.numel() > 1}
        if len(devices) > 1:
            self.mixed.append(str(func))
        return func(*args, **(kwargs or {}))


class OpCount(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += 1
        return func(*args, **(kwargs or {}))


def _passes(run) -> bool:
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            return bool(run())
    except Exception:
        return False


def _close(got, want) -> bool:
    return isinstance(got, torch.Tensor) and got.shape == want.shape and torch.allclose(got, want, atol=ATOL, rtol=RTOL)


def _sdpa_matches(sdpa, lead, n) -> bool:
    gen = torch.Generator().manual_seed(len(lead) * 10 + n)
    Q, K = (torch.randn(*lead, n, D_K, generator=gen, dtype=torch.float64) for _ in range(2))
    V = torch.randn(*lead, n, D_V, generator=gen, dtype=torch.float64)
    for causal in (True, False):
        out, weights = sdpa(Q.clone(), K.clone(), V.clone(), is_causal=causal)
        want_out, want_weights = reference_sdpa(Q, K, V, causal)
        if not (_close(out, want_out) and _close(weights, want_weights)):
            return False
    return True


def _runs_on_one_device(call) -> bool:
    mode = MixedDevices()
    with mode:
        call()
    return not mode.mixed


def sdpa_failures(module) -> list[str]:
    sdpa = getattr(module, GRADED_NAME["sdpa"])
    failed = [f"sdpa.lead{len(lead)}" for lead in ((), (2,), (2, 3), (2, 1, 3)) if not _passes(lambda: _sdpa_matches(sdpa, lead, T))]
    if not _passes(lambda: _sdpa_matches(sdpa, (2,), 1)):
        failed.append("sdpa.t1")
    meta = [torch.randn(2, T, D_K, device="meta") for _ in range(3)]
    if not _passes(lambda: _runs_on_one_device(lambda: sdpa(*meta, is_causal=True))):
        failed.append("sdpa.device")
    return failed


def _build(module, is_causal, **changes):
    args = SimpleNamespace(**{**ARGS, **changes})
    model = getattr(module, GRADED_NAME["mha"])(args, is_causal=is_causal).double().eval()
    gen = torch.Generator().manual_seed(7)
    weights = {name: torch.randn(args.dim, args.dim, generator=gen, dtype=torch.float64) / math.sqrt(args.dim)
               for name in PROJECTIONS}
    with torch.no_grad():
        for name in PROJECTIONS:
            layer = getattr(model, name)
            assert isinstance(layer, torch.nn.Linear) and layer.bias is None
            layer.weight.copy_(weights[name])
    assert all(isinstance(getattr(model, name), torch.nn.Dropout) for name in DROPOUTS)
    return model, weights


def _mha_matches(module, B, n) -> bool:
    gen = torch.Generator().manual_seed(B * 100 + n)
    q, k, v = (torch.randn(B, n, ARGS["dim"], generator=gen, dtype=torch.float64) for _ in range(3))
    for causal in (True, False):
        model, weights = _build(module, causal)
        with torch.no_grad():
            got = model(q, k, v)
        if not _close(got, reference_mha(weights, q, k, v, ARGS["n_heads"], causal)):
            return False
    return True


def _ops_for_heads(module, n_heads) -> int:
    model, _ = _build(module, True, n_heads=n_heads)
    x = torch.randn(2, T, ARGS["dim"], dtype=torch.float64)
    mode = OpCount()
    with torch.no_grad(), mode:
        model(x, x, x)
    return mode.count


def mha_failures(module) -> list[str]:
    shapes = {"mha.values": (2, T), "mha.b1": (1, T), "mha.t1": (2, 1), "mha.tmax": (2, ARGS["max_seq_len"])}
    failed = [name for name, (B, n) in shapes.items() if not _passes(lambda: _mha_matches(module, B, n))]

    def on_meta():
        model, _ = _build(module, True)
        x = torch.randn(2, T, ARGS["dim"], device="meta", dtype=torch.float64)
        model.to("meta")
        return _runs_on_one_device(lambda: model(x, x, x))

    if not _passes(on_meta):
        failed.append("mha.device")
    if not _passes(lambda: _ops_for_heads(module, 2) == _ops_for_heads(module, 8)):
        failed.append("mha.loop")
    return failed


def failures(path: Path) -> list[str]:
    with contextlib.redirect_stdout(io.StringIO()):
        module = load(path)
    return sdpa_failures(module) + mha_failures(module)
