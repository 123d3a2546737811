"""Typed probe requests: what a check may ask the worker to run, validated in the parent.

A request is checked when it is built, before anything reaches the worker: an unknown field, a
wrong type, a value outside what the probe takes or tensors whose shapes disagree raise
`BadRequest`, a `GraderError`. So a typo in a check is the grader's bug, reported as one, and
never comes back from student code as an exception diagnosed as the student's mistake.
"""
from __future__ import annotations

import dataclasses
import enum

import torch

from grader.exercises import every_part
from grader.exercises.attention import DROPOUTS, MODEL_ARGS, MODEL_ARGS_TYPES, PROJECTIONS
from grader.graph.layouts import LAYOUTS
from grader.sandbox.kv_cache_requests import CacheRequest, DecodeRequest, GqaRequest, gqa_weight_shapes  # noqa: F401
from grader.sandbox.request_fields import (DEVICES, DTYPES, FIELD_TYPES, MODES, REGIMES, BadRequest,  # noqa: F401
                                           _check_cotangent, _check_flags, _check_regime, _float_tensor, _is,
                                           _request, _require)


class Probe(enum.Enum):
    """The probes the worker runs (`probes.PROBES`), by the name it knows them by."""

    SDPA = "sdpa"
    MHA = "mha"
    MHA_INTERFACE = "mha_interface"
    REPEAT = "repeat"  # a FunctionRequest: the kv_cache lab's repeat_kv
    DECODE = "gqa_decode"  # a DecodeRequest: GroupedQueryAttention decoding step by step (its part: gqa)
    CACHE = "cache"  # a CacheRequest: the kv_cache lab's KVCache, built, then updated step by step
    GQA = "gqa"  # a GqaRequest: the kv_cache lab's GroupedQueryAttention on a whole prompt

    @property
    def part(self) -> str:
        """The part whose code the probe runs: a probe's name starts with its part's id."""
        return self.value.split("_")[0]


def _check_common(request) -> None:
    """`is_causal` (None: the student's default) and the model arguments, as the notebook declares them."""
    _require(request.is_causal is None or _is(request.is_causal, bool), request, "is_causal must be None or a bool")
    args = request.args
    _require(_is(args, dict) and tuple(args) == tuple(MODEL_ARGS), request,
             f"args must be a dict of exactly {tuple(MODEL_ARGS)}, in that order")
    for name, value in args.items():
        kind = FIELD_TYPES[MODEL_ARGS_TYPES[name]]
        _require(_is(value, kind), request, f"args[{name!r}] must be a {kind.__name__}")
    _require(args["dim"] > 0 and args["n_heads"] > 0 and args["max_seq_len"] > 0, request, "args sizes must be positive")
    _require(0.0 <= args["dropout"] <= 1.0, request, "args['dropout'] must lie in [0, 1]")


@_request
class SdpaRequest:
    """One call of `scaled_dot_product_attention(Q, K, V[, is_causal])`, with what to observe."""

    Q: torch.Tensor
    K: torch.Tensor
    V: torch.Tensor
    is_causal: bool | None = None
    device: str = "cpu"
    grad: bool = False
    cotangent: torch.Tensor | None = None  # d(loss)/d(out), needed with grad
    count_ops: bool = False
    gradcheck: bool = False
    layout: str = "contiguous"  # how Q, K, V lie in memory (grader/graph/layouts.py), with the same values
    regime: str | None = None  # REGIMES; None: training with grad, inference without

    def __post_init__(self) -> None:
        Q, K, V = self.Q, self.K, self.V
        _require(all(_float_tensor(t) for t in (Q, K, V)), self, "Q, K and V must be floating-point tensors")
        _require(Q.dtype == K.dtype == V.dtype, self, "Q, K and V must share a dtype")
        _require(Q.dim() >= 2 and Q.dim() == K.dim() == V.dim(), self, "Q, K and V must have the same rank, at least 2")
        _require(Q.shape[:-2] == K.shape[:-2] == V.shape[:-2], self, "Q, K and V must share their batch dimensions")
        _require(Q.shape[-1] == K.shape[-1] and K.shape[-2] == V.shape[-2], self,
                 "Q and K must share d_k; K and V must share their length")
        _require(self.is_causal is None or _is(self.is_causal, bool), self, "is_causal must be None or a bool")
        _require(self.device in DEVICES, self, f"device must be one of {DEVICES}")
        _check_flags(self, ("grad", "count_ops", "gradcheck"))
        _require(self.layout in LAYOUTS, self, f"layout must be one of {LAYOUTS}")
        _check_regime(self, self.regime)
        _check_cotangent(self, (*Q.shape[:-1], V.shape[-1]))


@_request
class MhaRequest:
    """Build `MultiHeadAttention(ModelArgs(**args)[, is_causal])` and run forward on each of `calls`.

    A call is a dict {"q", "k", "v"} of (B, T, dim) tensors, with an optional "mode" (eval or
    train), "seed" and "regime" (REGIMES); the checks read their own calls back beside the answer's results.
    """

    args: dict
    calls: list
    is_causal: bool | None = None
    weights: dict | None = None  # projection name -> (dim, dim) weight to load
    seed: int = 0
    device: str = "cpu"
    dtype: str | None = None  # the module's dtype (module.to), by torch's name
    grad: bool = False
    cotangent: torch.Tensor | None = None  # d(loss)/d(out) for every call, needed with grad
    roundtrip: bool = False  # rebuild from its own state_dict first
    count_ops: bool = False
    dropout_p: dict | None = None  # dropout layer name -> its p, set after building

    def __post_init__(self) -> None:
        _check_common(self)
        dim = self.args["dim"]
        _require(isinstance(self.calls, (list, tuple)) and len(self.calls) > 0, self, "calls must be a non-empty list")
        for call in self.calls:
            _check_call(self, call, dim)
        if self.weights is not None:
            _require(_is(self.weights, dict) and set(self.weights) <= set(PROJECTIONS), self,
                     f"weights must be a dict keyed by {PROJECTIONS}")
            _require(all(_float_tensor(w) and tuple(w.shape) == (dim, dim) for w in self.weights.values()), self,
                     f"each weight must be a floating-point ({dim}, {dim}) tensor")
        _require(_is(self.seed, int), self, "seed must be an int")
        _require(self.device in DEVICES, self, f"device must be one of {DEVICES}")
        _require(self.dtype is None or self.dtype in DTYPES, self, f"dtype must be None or one of {DTYPES}")
        _check_flags(self, ("grad", "roundtrip", "count_ops"))
        first = tuple(self.calls[0]["q"].shape)  # the output's shape: (B, T, dim) like q
        _require(not self.grad or all(tuple(call["q"].shape) == first for call in self.calls), self,
                 "grad=True needs calls of one shape (they share the cotangent)")
        _check_cotangent(self, first)
        if self.dropout_p is not None:
            _require(_is(self.dropout_p, dict) and set(self.dropout_p) <= set(DROPOUTS), self,
                     f"dropout_p must be a dict keyed by {DROPOUTS}")
            _require(all(_is(p, float) and 0.0 <= p <= 1.0 for p in self.dropout_p.values()), self,
                     "each dropout p must be a float in [0, 1]")


def _check_call(request, call, dim: int) -> None:
    _require(_is(call, dict) and {"q", "k", "v"} <= set(call) <= {"q", "k", "v", "mode", "seed", "regime"}, request,
             "a call must be a dict of q, k, v and optionally mode, seed and regime")
    q, k, v = call["q"], call["k"], call["v"]
    _require(all(_float_tensor(t) and t.dim() == 3 and t.shape[-1] == dim for t in (q, k, v)), request,
             f"a call's q, k and v must be floating-point (B, T, {dim}) tensors")
    _require(q.shape[0] == k.shape[0] == v.shape[0] and k.shape[1] == v.shape[1], request,
             "a call's q, k and v must share B; k and v must share T")
    _require(call.get("mode", "eval") in MODES, request, f"a call's mode must be one of {MODES}")
    _require(_is(call.get("seed", 0), int), request, "a call's seed must be an int")
    _check_regime(request, call.get("regime"))


@_request
class MhaInterfaceRequest:
    """Build `MultiHeadAttention(ModelArgs(**args)[, is_causal])` and describe its layers and buffers."""

    args: dict
    is_causal: bool | None = None

    def __post_init__(self) -> None:
        _check_common(self)


DECLARED_PARTS = tuple(part.id for part in every_part())


@_request
class FunctionRequest:
    """One call of a part's graded function on floating-point tensors and Python ints (`repeat_kv(x, n_rep)`),
    passed positionally in the order of `arguments`, with what to observe. The function is the one the part's
    declaration names (grader/exercises/); gradients are taken for every tensor argument, of the first output."""

    part: str  # the declared part whose graded function is called: the probe's own part (`checked`)
    arguments: list  # each a floating-point tensor or an int; a list, so that the decoys replace its tensors
    device: str = "cpu"
    grad: bool = False
    cotangent: torch.Tensor | None = None  # d(loss)/d(the first output), needed with grad
    count_ops: bool = False
    layout: str = "contiguous"  # how each tensor lies in memory (grader/graph/layouts.py), with the same values
    regime: str | None = None  # REGIMES; None: training with grad, inference without

    def __post_init__(self) -> None:
        _require(_is(self.part, str) and self.part in DECLARED_PARTS, self, f"part must be one of {DECLARED_PARTS}")
        _require(_is(self.arguments, list) and len(self.arguments) > 0, self, "arguments must be a non-empty list")
        _require(all(_float_tensor(a) or _is(a, int) for a in self.arguments), self,
                 "each argument must be a floating-point tensor or an int")
        _require(any(_float_tensor(a) for a in self.arguments), self, "the arguments must hold a tensor")
        _require(self.device in DEVICES, self, f"device must be one of {DEVICES}")
        _check_flags(self, ("grad", "count_ops"))
        _require(self.layout in LAYOUTS, self, f"layout must be one of {LAYOUTS}")
        _check_regime(self, self.regime)
        if self.grad:  # the output's shape is the code's to give: a wrong one is a finding, never a bad request
            _require(_float_tensor(self.cotangent), self, "grad=True needs a floating-point cotangent")
        else:
            _require(self.cotangent is None, self, "a cotangent without grad=True")


REQUEST_TYPE = {Probe.SDPA: SdpaRequest, Probe.MHA: MhaRequest, Probe.MHA_INTERFACE: MhaInterfaceRequest,
                Probe.REPEAT: FunctionRequest, Probe.DECODE: DecodeRequest, Probe.CACHE: CacheRequest, Probe.GQA: GqaRequest}


def checked(probe: Probe, request: object) -> dict:
    """The request's fields as the worker's probe takes them, once it is the probe's own kind."""
    if not isinstance(probe, Probe):
        raise BadRequest(f"{probe!r} is not a Probe")
    if type(request) is not REQUEST_TYPE[probe]:
        raise BadRequest(f"the {probe.value} probe takes a {REQUEST_TYPE[probe].__name__}, "
                         f"not a {type(request).__name__}")
    if getattr(request, "part", probe.part) != probe.part:  # what the probe sees is counted against its part
        raise BadRequest(f"the {probe.value} probe calls part {probe.part}'s code, not part {request.part}'s")
    return {field.name: getattr(request, field.name) for field in dataclasses.fields(request)}
