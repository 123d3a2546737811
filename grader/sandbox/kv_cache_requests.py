"""The kv_cache lab's probe requests (grader/sandbox/requests.py says how a request is checked): its KVCache built
and updated (`CacheRequest`), its GroupedQueryAttention on a whole prompt (`GqaRequest`) and decoding step by step
(`DecodeRequest`)."""
from __future__ import annotations

import torch

from grader.exercises.kv_cache import MODEL_ARGS as KV_MODEL_ARGS, PROJECTIONS as KV_PROJECTIONS
from grader.sandbox.request_fields import (DEVICES, DTYPES, _check_cotangent, _check_flags, _check_regime,
                                           _float_tensor, _is, _request, _require)


@_request
class DecodeRequest:
    """Build `GroupedQueryAttention(ModelArgs(**args))` and decode `steps` with the grader's own KVCache, one per
    sequence (grader/sandbox/decode_probes.py). A step is [sequence, start_pos, T]: one forward call on `xs[i]`
    (batch, T, dim) with that sequence's cache, starting where the sequence's last step ended or before it; the
    judge chains the steps' graphs on `xs` and `weights` (wq, wk, wv, wo: the parent's own, loaded by name), each
    cache from zeros. `count_ops`: each step's operators counted from
    its graph (the loop check of the cached path). `device`: the module, its caches and x there (the device check of
    the cached path)."""

    args: dict
    steps: list
    xs: list
    weights: dict
    count_ops: bool = False
    device: str = "cpu"

    def __post_init__(self) -> None:
        args = self.args
        _check_kv_args(self, args)
        _check_flags(self, ("count_ops",))
        _require(self.device in DEVICES, self, f"device must be one of {DEVICES}")
        dim = args["dim"]
        shapes = gqa_weight_shapes(args)
        _require(_is(self.weights, dict) and tuple(self.weights) == KV_PROJECTIONS and all(
            _float_tensor(w) and w.dtype == torch.float32 and tuple(w.shape) == shapes[name]
            for name, w in self.weights.items()), self, f"weights must be float32 tensors of shapes {shapes}")
        _require(_is(self.steps, list) and 0 < len(self.steps) == (len(self.xs) if _is(self.xs, list) else -1), self,
                 "steps and xs must be non-empty lists of one length")
        written: dict[int, int] = {}
        batch = None
        for step, x in zip(self.steps, self.xs):
            _require(_is(step, list) and len(step) == 3 and all(_is(n, int) and n >= 0 for n in step) and step[2] > 0,
                     self, "a step must be [sequence, start_pos, T] of ints, T > 0")
            sequence, start_pos, length = step
            _require(start_pos <= written.get(sequence, 0), self,
                     "a sequence's step must start where its last step ended, or before (a position decoded again)")
            written[sequence] = start_pos + length
            _require(written[sequence] <= args["max_seq_len"], self, "a step must end within max_seq_len")
            _require(_float_tensor(x) and x.dtype == torch.float32 and x.dim() == 3 and x.shape[1:] == (length, dim),
                     self, f"each x must be a float32 (B, T, {dim}) tensor of its step's T")
            batch = x.shape[0] if batch is None else batch
            _require(0 < x.shape[0] == batch <= args["max_batch_size"], self, "every x must share B <= max_batch_size")


@_request
class CacheRequest:
    """Build `KVCache(max_batch_size, max_seq_len, n_kv_heads, head_dim, device=..., dtype=...)` and call
    `update(start_pos, k, v)` on it for each of `steps` in order, one cache throughout. A step is a dict
    {"start_pos", "k", "v"}: k and v (B, n_kv_heads, T, head_dim) of the cache's dtype, B <= max_batch_size, and
    [start_pos, start_pos + T) within max_seq_len."""

    max_batch_size: int
    max_seq_len: int
    n_kv_heads: int
    head_dim: int
    dtype: str = "float32"
    steps: list
    device: str = "cpu"
    count_ops: bool = False

    def __post_init__(self) -> None:
        sizes = (self.max_batch_size, self.max_seq_len, self.n_kv_heads, self.head_dim)
        _require(all(_is(size, int) and size > 0 for size in sizes), self, "the cache's sizes must be positive ints")
        _require(self.dtype in DTYPES, self, f"dtype must be one of {DTYPES}")
        _require(self.device in DEVICES, self, f"device must be one of {DEVICES}")
        _check_flags(self, ("count_ops",))
        _require(_is(self.steps, list) and len(self.steps) > 0, self, "steps must be a non-empty list")
        for step in self.steps:
            _require(_is(step, dict) and set(step) == {"start_pos", "k", "v"}, self,
                     "a step must be a dict of start_pos, k and v")
            k, v, start_pos = step["k"], step["v"], step["start_pos"]
            _require(_float_tensor(k) and _float_tensor(v) and k.shape == v.shape and k.dim() == 4, self,
                     "a step's k and v must be floating-point tensors of one 4-d shape")
            _require(str(k.dtype).removeprefix("torch.") == self.dtype == str(v.dtype).removeprefix("torch."), self,
                     "a step's k and v must have the cache's dtype")
            B, heads, T, width = k.shape
            _require(0 < B <= self.max_batch_size and heads == self.n_kv_heads and width == self.head_dim and T > 0,
                     self, "a step's k and v must be (B <= max_batch_size, n_kv_heads, T, head_dim)")
            _require(_is(start_pos, int) and 0 <= start_pos and start_pos + T <= self.max_seq_len, self,
                     "a step's positions must lie within max_seq_len")


@_request
class GqaRequest:
    """Build `GroupedQueryAttention(ModelArgs(**args))` (the kv_cache lab's arguments) and run `forward(x)` once,
    without a cache (the whole prompt's causal pass), its parameters and buffers graph inputs: the parent runs the
    graph with `weights` in place of the module's own projections."""

    args: dict  # KV_MODEL_ARGS' fields, in order, each an int
    x: torch.Tensor  # (B, T, dim)
    weights: dict | None = None  # projection name -> its (out, in) weight, sized by n_heads and n_kv_heads
    seed: int = 0
    device: str = "cpu"
    grad: bool = False
    cotangent: torch.Tensor | None = None  # d(loss)/d(out), needed with grad
    count_ops: bool = False
    regime: str | None = None  # REGIMES; None: training with grad, inference without

    def __post_init__(self) -> None:
        args = self.args
        _check_kv_args(self, args)
        dim = args["dim"]
        x = self.x
        _require(_float_tensor(x) and x.dim() == 3 and x.shape[-1] == dim, self,
                 f"x must be a floating-point (B, T, {dim}) tensor")
        _require(x.shape[0] <= args["max_batch_size"] and x.shape[1] <= args["max_seq_len"], self,
                 "x must fit max_batch_size and max_seq_len")
        if self.weights is not None:
            expected = gqa_weight_shapes(args)
            _require(_is(self.weights, dict) and set(self.weights) <= set(expected), self,
                     f"weights must be a dict keyed by {tuple(expected)}")
            _require(all(_float_tensor(w) and tuple(w.shape) == expected[name] for name, w in self.weights.items()),
                     self, f"each weight must be a floating-point tensor of its shape {expected}")
        _require(_is(self.seed, int), self, "seed must be an int")
        _require(self.device in DEVICES, self, f"device must be one of {DEVICES}")
        _check_flags(self, ("grad", "count_ops"))
        _check_regime(self, self.regime)
        _check_cotangent(self, tuple(x.shape))


def _check_kv_args(request, args) -> None:
    """The kv_cache lab's `ModelArgs` fields, in order, each a positive int, with heads that split and group."""
    _require(_is(args, dict) and tuple(args) == tuple(KV_MODEL_ARGS) and all(_is(v, int) and v > 0
                                                                              for v in args.values()), request,
             f"args must be a dict of exactly {tuple(KV_MODEL_ARGS)}, in that order, each a positive int")
    _require(args["dim"] % args["n_heads"] == 0 and args["n_heads"] % args["n_kv_heads"] == 0, request,
             "args: dim must be a multiple of n_heads, n_heads of n_kv_heads")


def gqa_weight_shapes(args: dict) -> dict[str, tuple[int, int]]:
    """The projections' `(out, in)` weight shapes `GroupedQueryAttention(args)` promises: wk and wv sized by
    n_kv_heads."""
    dim, head_dim = args["dim"], args["dim"] // args["n_heads"]
    queries, keys = args["n_heads"] * head_dim, args["n_kv_heads"] * head_dim
    return dict(zip(KV_PROJECTIONS, ((queries, dim), (keys, dim), (keys, dim), (dim, queries))))
