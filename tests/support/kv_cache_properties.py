"""The second lab's (`kv_cache`) properties: each a question a hand-in's `repeat_kv`, `KVCache` and
`GroupedQueryAttention` answer right or wrong, decided against the float64 reference
(grader/exercises/kv_cache/reference.py) and never through the grader. A property is a function of the hand-in's
names that raises (an AssertionError, or whatever the hand-in raised) when the hand-in gets it wrong.

The interface the hand-ins follow is fixed in issue 45: keyword construction of `ModelArgs` and `KVCache`, the
layers `wq, wk, wv, wo`, `forward(x, cache=None, start_pos=0)`, `update(start_pos, k, v) -> (keys, values)`.
The hand-ins run in float32, as students run them; the reference in float64.
"""
from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Callable

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from grader.exercises.kv_cache import reference

DIM, HEADS, KV_HEADS, MAX_SEQ_LEN, MAX_BATCH = 48, 6, 2, 16, 4  # head_dim 8: no two sizes alike
HEAD_DIM = DIM // HEADS
CLOSE = {"atol": 1e-5, "rtol": 1e-4}  # float32 against float64, outputs of size about 1
GRADIENT_CLOSE = {"atol": 1e-4, "rtol": 1e-3}  # gradients sum many more float32 terms, and reach 30
BUILT_IN_ATTENTION = (F.scaled_dot_product_attention, F.multi_head_attention_forward)


def load(path: Path) -> dict:
    """The names a hand-in defines, as a notebook-exported module would: its source run in a fresh namespace."""
    module = types.ModuleType(f"kv_cache_hand_in_{path.stem.replace('-', '_')}")
    sys.modules[module.__name__] = module  # dataclasses look their class's module up while making the class
    try:
        exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    return module.__dict__


def model_of(names: dict, heads: int = HEADS, kv_heads: int = KV_HEADS, seed: int = 0):
    """The hand-in's module with seeded weights copied into wq…wo, and those weights (as the module holds them)."""
    args = names["ModelArgs"](dim=DIM, n_heads=heads, n_kv_heads=kv_heads, max_seq_len=MAX_SEQ_LEN,
                              max_batch_size=MAX_BATCH)
    model = names["GroupedQueryAttention"](args)
    head_dim = DIM // heads
    shapes = {"wq": (heads * head_dim, DIM), "wk": (kv_heads * head_dim, DIM), "wv": (kv_heads * head_dim, DIM),
              "wo": (DIM, heads * head_dim)}
    generator = torch.Generator().manual_seed(seed)
    weights = {}
    for name, shape in shapes.items():
        layer = getattr(model, name)
        assert tuple(layer.weight.shape) == shape, f"{name}.weight is {tuple(layer.weight.shape)}, not {shape}"
        drawn = torch.randn(shape, generator=generator, dtype=torch.float64) * 2 / DIM ** 0.5
        with torch.no_grad():
            layer.weight.copy_(drawn)
        weights[name] = layer.weight.detach().double()
    return model, weights


def cache_of(names: dict, kv_heads: int = KV_HEADS, heads: int = HEADS, **where):
    return names["KVCache"](max_batch_size=MAX_BATCH, max_seq_len=MAX_SEQ_LEN, n_kv_heads=kv_heads,
                            head_dim=DIM // heads, **where)


def tokens(B: int, T: int, seed: int = 1) -> torch.Tensor:
    return torch.randn(B, T, DIM, generator=torch.Generator().manual_seed(seed))


def expected(x, weights, heads: int = HEADS, kv_heads: int = KV_HEADS, **mistake) -> torch.Tensor:
    """The reference's full causal pass over x, as float32."""
    return reference.gqa_forward(x, weights, heads, kv_heads, **mistake).y.float()


def assert_close(actual, wanted, what: str, **tolerance):
    assert actual.shape == wanted.shape, f"{what}: shape {tuple(actual.shape)}, not {tuple(wanted.shape)}"
    assert torch.allclose(actual, wanted, **(tolerance or CLOSE)), \
        f"{what}: off by {(actual - wanted).abs().max().item():.3g}"


def decoded(model, cache, x, steps: list[int]):
    """x fed in pieces of the given lengths with one cache, each at its start position; the outputs joined."""
    outputs, start = [], 0
    for length in steps:
        outputs.append(model(x[:, start:start + length], cache=cache, start_pos=start))
        start += length
    return torch.cat(outputs, dim=1)


def implemented(names):
    """Every graded name runs without raising NotImplementedError (what else it raises is other properties' concern)."""
    calls = {"repeat_kv": lambda: names["repeat_kv"](torch.zeros(1, 2, 3, 4), 2),
             "KVCache.update": lambda: cache_of(names).update(0, torch.zeros(1, KV_HEADS, 3, HEAD_DIM),
                                                              torch.zeros(1, KV_HEADS, 3, HEAD_DIM)),
             "GroupedQueryAttention": lambda: model_of(names)[0](tokens(1, 3))}
    for name, call in calls.items():
        try:
            call()
        except NotImplementedError as error:
            raise AssertionError(f"{name} raised NotImplementedError") from error
        except Exception:
            pass


def repeat(names):
    """repeat_kv on hand-made values: output head h is input head h // n_rep, for n_rep 1, 2 and 3; gradients flow."""
    x = torch.arange(2 * 3 * 4 * 5, dtype=torch.float64).view(2, 3, 4, 5)  # every entry its own value
    for n_rep in (1, 2, 3):
        out = names["repeat_kv"](x, n_rep)
        assert torch.equal(out, reference.repeat_kv(x, n_rep)), f"repeat_kv(x, {n_rep}) is not head h // n_rep"
    leaf = x.clone().requires_grad_(True)
    names["repeat_kv"](leaf, 2).sum().backward()
    assert leaf.grad is not None and torch.equal(leaf.grad, torch.full_like(x, 2.0)), "no gradient back to x"


def single_position(names):
    """A one-position prompt: the query sees itself only, so the output is wo of its own value."""
    model, weights = model_of(names)
    x = tokens(2, 1)
    assert_close(model(x), expected(x, weights), "a prompt of one position")


def rows_sum_to_one(names):
    """One value everywhere (every position, head and channel): weights that sum to 1 over the keys give it back,
    however the heads are split, so the output is wo of that value at every position."""
    model, weights = model_of(names)
    with torch.no_grad():
        model.wv.weight.zero_()
        model.wv.weight[:, 0] = 0.5  # the values read feature 0 only, which is 1 at every position
    weights["wv"] = model.wv.weight.detach().double()
    x = tokens(2, 6)
    x[..., 0] = 1.0
    assert_close(model(x), expected(x, weights), "one value at every position")


def finite(names):
    """A prompt's outputs are finite numbers (a row whose every key is hidden has none left: NaN)."""
    model, _ = model_of(names)
    assert torch.isfinite(model(tokens(2, 7))).all(), "NaN or inf in the output"


def prompt(names):
    """A whole prompt, no cache, batch 2: the full causal pass."""
    model, weights = model_of(names)
    x = tokens(2, 7)
    assert_close(model(x), expected(x, weights), "a prompt of 7 positions")


def causal(names):
    """Strict causal zeros, seen through outputs: changing later positions changes no earlier output, with no cache
    and after a cached prompt (a chunk whose last position changes)."""
    model, _ = model_of(names)
    x = tokens(2, 7)
    later = x.clone()
    later[:, 4:] = tokens(2, 3, seed=5)
    assert torch.allclose(model(x)[:, :4], model(later)[:, :4], equal_nan=True), "an output saw a later position"
    outputs = []
    for chunk_end in (x, later):
        cache = cache_of(names)
        model(x[:, :4], cache=cache, start_pos=0)
        outputs.append(model(torch.cat([x[:, 4:6], chunk_end[:, 6:7]], dim=1), cache=cache, start_pos=4))
    assert torch.allclose(outputs[0][:, :2], outputs[1][:, :2], equal_nan=True), \
        "in a chunk after a cached prompt, an output saw a later position of the chunk"


def decode(names):
    """A prompt of 5, then 4 single tokens with one cache (batch 2 of 4): the full causal pass, row by row."""
    model, weights = model_of(names)
    x = tokens(2, 9)
    steps = decoded(model, cache_of(names), x, [5, 1, 1, 1, 1])
    assert_close(steps, expected(x, weights), "a prompt then single tokens")
    assert_close(steps, model(x), "a prompt then single tokens, against the module's own full pass")


def token_by_token(names):
    """Every position fed alone, from the first, with one cache: the full causal pass (one query per call, so no
    mask over the new positions can hide a mistake of the cached ones)."""
    model, weights = model_of(names)
    x = tokens(2, 6)
    assert_close(decoded(model, cache_of(names), x, [1] * 6), expected(x, weights), "one position at a time")


def output_shape(names):
    """forward returns one tensor (B, T, dim) for a prompt, a token and a chunk."""
    model, _ = model_of(names)
    store, x = cache_of(names), tokens(2, 9)
    for start, length in ((0, 5), (5, 1), (6, 3)):
        out = model(x[:, start:start + length], cache=store, start_pos=start)
        assert isinstance(out, torch.Tensor), f"forward returned a {type(out).__name__}, not a tensor"
        assert tuple(out.shape) == (2, length, DIM), f"forward returned {tuple(out.shape)}, not (2, {length}, {DIM})"


def chunk(names):
    """A prompt of 5, then a chunk of 3 tokens, then one more: the full causal pass."""
    model, weights = model_of(names)
    x = tokens(2, 9)
    assert_close(decoded(model, cache_of(names), x, [5, 3, 1]), expected(x, weights), "a prompt then a chunk of 3")


def cache(names):
    """KVCache alone: zero buffers of the promised shape and dtype; each update writes rows :B at
    [start_pos, start_pos + T), leaves the rest, and returns exactly what has been written."""
    store = cache_of(names, dtype=torch.float64)
    full = (MAX_BATCH, KV_HEADS, MAX_SEQ_LEN, HEAD_DIM)
    for name in ("cache_k", "cache_v"):
        buffer = getattr(store, name)
        assert tuple(buffer.shape) == full and buffer.dtype == torch.float64, f"{name} {tuple(buffer.shape)}"
        assert not buffer.any(), f"{name} does not start as zeros"
    generator = torch.Generator().manual_seed(3)
    k1, v1, k2, v2 = (torch.randn(3, KV_HEADS, T, HEAD_DIM, generator=generator, dtype=torch.float64)
                      for T in (5, 5, 2, 2))
    store.update(0, k1, v1)
    keys, values = store.update(5, k2, v2)
    for name, returned, written in (("keys", keys, torch.cat([k1, k2], 2)), ("values", values, torch.cat([v1, v2], 2))):
        assert returned.shape == written.shape, \
            f"update returned {name} {tuple(returned.shape)}, not (3, {KV_HEADS}, 7, {HEAD_DIM})"
        assert torch.equal(returned, written), f"update returned {name} other than the positions written"
    for name, written in (("cache_k", torch.cat([k1, k2], 2)), ("cache_v", torch.cat([v1, v2], 2))):
        buffer = getattr(store, name)
        assert torch.equal(buffer[:3, :, :7], written), f"{name} does not hold the positions at [start_pos, +T)"
        assert not buffer[3:].any() and not buffer[:, :, 7:].any(), f"{name} was written outside its slots"


def in_place(names):
    """update writes into the buffers KVCache made: code holding cache_k and cache_v from before the calls reads
    every position written (a cache rebuilt at each call, torch.cat's new tensors, leaves them zeros)."""
    store = cache_of(names, dtype=torch.float64)
    held_k, held_v = store.cache_k, store.cache_v
    generator = torch.Generator().manual_seed(4)
    k1, v1, k2, v2 = (torch.randn(3, KV_HEADS, T, HEAD_DIM, generator=generator, dtype=torch.float64)
                      for T in (5, 5, 2, 2))
    store.update(0, k1, v1)
    store.update(5, k2, v2)
    for name, held, written in (("cache_k", held_k, torch.cat([k1, k2], 2)), ("cache_v", held_v, torch.cat([v1, v2], 2))):
        assert torch.equal(held[:3, :, :7], written), f"the {name} made in __init__ does not hold what update wrote"


def cache_device(names):
    """KVCache(device=...) makes its buffers there (the meta device stands in for a GPU), in the given dtype."""
    store = cache_of(names, device=torch.device("meta"), dtype=torch.float64)
    for name in ("cache_k", "cache_v"):
        buffer = getattr(store, name)
        assert buffer.device.type == "meta" and buffer.dtype == torch.float64, f"{name} on {buffer.device}"


def cache_dtype(names):
    """KVCache(dtype=torch.float16) keeps float16: its buffers, and the keys and values update returns."""
    store = cache_of(names, dtype=torch.float16)
    for name in ("cache_k", "cache_v"):
        assert getattr(store, name).dtype == torch.float16, f"{name} is {getattr(store, name).dtype}"
    k = torch.randn(2, KV_HEADS, 3, HEAD_DIM, generator=torch.Generator().manual_seed(5)).half()
    keys, values = store.update(0, k, k.clone())
    assert keys.dtype == values.dtype == torch.float16, f"update returned {keys.dtype} and {values.dtype}"


class _CpuScalarsAsOnAGpu(TorchFunctionMode):
    """A GPU's masked_fill takes a CPU 0-dim tensor as its value beside a tensor of its own; the meta device's kernel
    alone refuses it, so here it is moved to meta first."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in (torch.Tensor.masked_fill, torch.Tensor.masked_fill_, torch.masked_fill) and len(args) > 2 \
                and isinstance(args[2], torch.Tensor) and args[2].dim() == 0 and args[2].device.type == "cpu" \
                and args[0].is_meta:
            args = (*args[:2], args[2].to("meta"), *args[3:])
        return func(*args, **(kwargs or {}))


def model_device(names):
    """The module, its cache and inputs on one other device (meta, as a GPU takes a CPU scalar tensor): a prompt, a
    token and a chunk run there."""
    model, _ = model_of(names)
    model = model.to("meta")
    x = tokens(2, 9).to("meta")
    with _CpuScalarsAsOnAGpu():
        out = decoded(model, cache_of(names, device=torch.device("meta")), x, [5, 1, 3])
    assert out.device.type == "meta" and tuple(out.shape) == (2, 9, DIM)


def moved_after_use(names):
    """The module called once on the CPU, then moved with `.to(device)` (meta): what it kept from that call moved too,
    and a prompt and a token run there."""
    model, _ = model_of(names)
    with torch.no_grad():
        model(tokens(2, 4))
    model = model.to("meta")
    x = tokens(2, 6).to("meta")
    with _CpuScalarsAsOnAGpu():
        out = decoded(model, cache_of(names, device=torch.device("meta")), x, [5, 1])
    assert out.device.type == "meta" and tuple(out.shape) == (2, 6, DIM)


def kv_heads(names):
    """n_kv_heads 1 and 2 of 6 query heads: wk and wv sized by n_kv_heads, and the full causal pass."""
    for kv in (1, 2):
        model, weights = model_of(names, kv_heads=kv)
        x = tokens(2, 6)
        assert_close(model(x), expected(x, weights, kv_heads=kv), f"n_kv_heads={kv}")


def plain_multi_head(names):
    """n_kv_heads == n_heads (plain multi-head attention), with a cache: the full causal pass."""
    model, weights = model_of(names, kv_heads=HEADS)
    x = tokens(2, 7)
    assert_close(decoded(model, cache_of(names, kv_heads=HEADS), x, [4, 1, 2]), expected(x, weights, kv_heads=HEADS),
                 "n_kv_heads == n_heads")


def out_proj(names):
    """The output goes through wo: doubling wo's weights doubles the output."""
    model, _ = model_of(names)
    x = tokens(2, 5)
    before = model(x)
    with torch.no_grad():
        model.wo.weight.mul_(2)
    assert_close(model(x), 2 * before, "the output with wo doubled")


def grad(names):
    """Gradients of the prompt pass (no cache) with respect to x and wq…wo: the reference's."""
    model, weights = model_of(names)
    x = tokens(2, 6).requires_grad_(True)
    upstream = torch.randn(2, 6, DIM, generator=torch.Generator().manual_seed(7))
    (model(x) * upstream).sum().backward()
    x64 = x.detach().double().requires_grad_(True)
    w64 = {name: w.clone().requires_grad_(True) for name, w in weights.items()}
    (reference.gqa_forward(x64, w64, HEADS, KV_HEADS).y * upstream.double()).sum().backward()
    got = {"x": x.grad, **{name: getattr(model, name).weight.grad for name in w64}}
    for name, want in {"x": x64.grad, **{name: w.grad for name, w in w64.items()}}.items():
        assert got[name] is not None, f"no gradient reached {name}"
        assert_close(got[name], want.float(), f"the gradient of {name}", **GRADIENT_CLOSE)


class _CallCounter(TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.calls = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.calls.append(func)
        return func(*args, **(kwargs or {}))


def _calls(run) -> list:
    with _CallCounter() as counter:
        run()
    return counter.calls


def loop_free(names):
    """The number of torch calls does not grow with the heads (same n_rep) or with the positions of a chunk."""
    def passes(heads, kv, length):
        model, _ = model_of(names, heads=heads, kv_heads=kv)
        store = cache_of(names, kv_heads=kv, heads=heads)
        x = tokens(1, 4 + length)
        return (len(_calls(lambda: model(x[:, :length]))),
                len(_calls(lambda: decoded(model, store, x, [4, length]))))
    counts = {(heads, kv, length): passes(heads, kv, length) for heads, kv in ((4, 2), (8, 4)) for length in (2, 5)}
    assert len(set(counts.values())) == 1, f"torch calls per pass grow with heads or positions: {counts}"


def no_builtin_attention(names):
    """torch's own attention is never called (nor nn.MultiheadAttention held)."""
    model, _ = model_of(names)
    x = tokens(2, 8)
    calls = _calls(lambda: (model(x), decoded(model, cache_of(names), x, [5, 3])))
    assert not [f for f in calls if f in BUILT_IN_ATTENTION], "torch's built-in attention was called"
    assert not [m for m in model.modules() if isinstance(m, torch.nn.MultiheadAttention)]


PROPERTIES: dict[str, Callable[[dict], None]] = {f.__name__: f for f in (
    implemented, repeat, single_position, rows_sum_to_one, finite, prompt, causal, decode, token_by_token, chunk,
    output_shape, cache, in_place, cache_device, cache_dtype, model_device, moved_after_use, kv_heads, plain_multi_head, out_proj,
    grad, loop_free, no_builtin_attention)}


def failure(names: dict, prop: str) -> str | None:
    """Why the hand-in fails the property (the exception, in one line), or None when it holds."""
    try:
        PROPERTIES[prop](names)
    except Exception as error:  # the hand-in's own exceptions count as failing the property
        return f"{type(error).__name__}: {error}".splitlines()[0][:300]
    return None
