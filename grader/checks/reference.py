"""Float64 references, computed on the fly in the trusted parent, and the classic wrong variants.

`attention` is the right answer; each variant reproduces one catalogued mistake so that a
student's numbers can be matched to the mistake that explains them.
"""
from __future__ import annotations

import itertools
import math

import torch

# Which tensors a slip of one letter reads instead of Q, K, V: "wrong-input-QQV" is `softmax(Q @ Q.mT) @ V`.
SDPA_WRONG_INPUTS = ("QQV", "KKV", "QKK", "QKQ")
SDPA_VARIANTS = ("missing-scale", "wrong-scale", "mask-diagonal", "mask-direction", "mask-multiplied",
                 "mask-after-softmax", "mask-after-softmax-inf", "softmax-dim", "mask-missing", "is-causal-ignored",
                 *(f"wrong-input-{reads}" for reads in SDPA_WRONG_INPUTS))
# Module-only variants: the scale by sqrt(dim), softmax over the heads, heads split or merged wrong.
# Which of q, k, v each head-split variant views straight to (B, H, T, d): all three, or the one or two a
# student wrote differently from the others (one line copied wrong).
WRONG_SPLITS = {"head-split": "qkv", "head-split-in": "qkv", "head-split-q": "q", "head-split-k": "k",
                "head-split-v": "v", "head-split-qk": "qk", "head-split-qv": "qv", "head-split-kv": "kv"}
# Which module input wq, wk and wv each read: "wrong-input-kkv" is `self.wq(k)`, `self.wk(k)`, `self.wv(v)`.
MHA_WRONG_INPUTS = tuple(a + b + c for a in "qkv" for b in "qkv" for c in "qkv" if a + b + c != "qkv")
MHA_VARIANTS = SDPA_VARIANTS + ("wrong-scale-width", "softmax-dim-heads", *WRONG_SPLITS, "head-split-out",
                                "missing-out-proj", *(f"wrong-input-{reads}" for reads in MHA_WRONG_INPUTS))
# variant name -> the catalog id it demonstrates
MISTAKE_OF = {"wrong-scale-width": "wrong-scale", "softmax-dim-heads": "softmax-dim", "mask-after-softmax-inf":
              "mask-after-softmax", "head-split-out": "head-split",
              **{variant: "head-split" for variant in WRONG_SPLITS if variant != "head-split"},
              **{f"wrong-input-{reads}": "wrong-input" for reads in SDPA_WRONG_INPUTS + MHA_WRONG_INPUTS}}


# Variants that cannot go together, by the step of the computation they change: a combination takes at most one
# of each (grader.checks.diagnosis searches pairs and triples of them when no single variant reproduces a student's numbers).
STEPS = {"scale": ("missing-scale", "wrong-scale", "wrong-scale-width"),
         "mask": ("mask-diagonal", "mask-direction", "mask-multiplied", "mask-after-softmax", "mask-after-softmax-inf",
                  "mask-missing", "is-causal-ignored"),
         "softmax": ("softmax-dim", "softmax-dim-heads"),
         "split": (*WRONG_SPLITS, "head-split-out"),
         "output": ("missing-out-proj",),
         "inputs": tuple(f"wrong-input-{reads}" for reads in SDPA_WRONG_INPUTS + MHA_WRONG_INPUTS)}
STEP_OF = {variant: step for step, variants in STEPS.items() for variant in variants}


def chosen(variant) -> frozenset[str]:
    """One variant (a name), a combination (a tuple of names, one per step), or none."""
    if variant is None:
        return frozenset()
    return frozenset([variant] if isinstance(variant, str) else variant)


def _reads(variants: frozenset[str], wrong_inputs: tuple[str, ...], right: str) -> str:
    """The inputs a wrong-input variant reads in place of `right` ("QQV" for `Q @ Q.mT`); `right` for any other."""
    for variant in variants:
        reads = variant.removeprefix("wrong-input-")
        if reads in wrong_inputs:
            return reads
    return right


def variants_for(variants: tuple[str, ...], is_causal: bool) -> list[str]:
    """The variants that differ from the right answer for this `is_causal`: a wrong mask shows only where
    a mask belongs, a mask applied whatever the flag says only where none does."""
    if is_causal:
        return [v for v in variants if v != "is-causal-ignored"]
    return [v for v in variants if not v.startswith("mask")]


def causal_future(T: int, device=None) -> torch.Tensor:
    """True strictly above the diagonal: the positions a query must not see."""
    return torch.ones(T, T, dtype=torch.bool, device=device).triu(1)


def attention(Q, K, V, is_causal: bool = True, variant=None, scale: float | None = None):
    """softmax(Q K^T / sqrt(d_k) + M) V in float64; `variant` injects one catalogued mistake, or a combination."""
    variants = chosen(variant)
    Q, K, V = Q.double(), K.double(), V.double()
    given = {"Q": Q, "K": K, "V": V}
    Q, K, V = (given[name] for name in _reads(variants, SDPA_WRONG_INPUTS, "QKV"))
    T, d_k = Q.size(-2), Q.size(-1)
    is_causal = is_causal or "is-causal-ignored" in variants
    if scale is None:
        scale = 1.0 if "missing-scale" in variants else 1.0 / d_k if "wrong-scale" in variants else 1.0 / math.sqrt(d_k)
    scores = Q @ K.transpose(-2, -1) * scale  # (..., T, T)
    future = causal_future(T)
    if is_causal and not variants & {"mask-missing", "mask-after-softmax", "mask-after-softmax-inf"}:
        if "mask-diagonal" in variants:
            scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(0), float("-inf"))
        elif "mask-direction" in variants:
            scores = scores.masked_fill(future.T, float("-inf"))
        elif "mask-multiplied" in variants:
            scores = scores * (~future).double()
        else:
            scores = scores.masked_fill(future, float("-inf"))
    dim = -2 if "softmax-dim" in variants else 1 if "softmax-dim-heads" in variants else -1
    weights = torch.softmax(scores, dim=dim)
    if is_causal and "mask-after-softmax" in variants:
        weights = weights.masked_fill(future, 0.0)
    if is_causal and "mask-after-softmax-inf" in variants:
        weights = weights.masked_fill(future, float("-inf"))
    return weights @ V, weights


def multi_head_attention(q, k, v, weights: dict, n_heads: int, is_causal: bool, variant=None,
                         scale: float | None = None, memo: dict | None = None):
    """The MultiHeadAttention forward (eval mode) in float64 with the given wq/wk/wv/wo weights;
    `scale` multiplies every head's scores (default 1/√head_dim); `variant`: one mistake, or a combination.
    `memo`: one dict kept by a search that calls this many times on the same q, k, v, weights and n_heads (the
    variants of a diagnosis, the factors of a scale fit): the projections and attention steps two calls share
    are computed once, by the same operations."""
    variants = chosen(variant)
    memo = {} if memo is None else memo
    B, T, C = q.shape  # batch, sequence length, model width
    d = C // n_heads
    wrong = "".join(WRONG_SPLITS.get(name, "") for name in variants)
    given = {"q": q, "k": k, "v": v}

    def weight(name: str) -> torch.Tensor:
        if ("weight", name) not in memo:
            memo["weight", name] = weights[name].double().T
        return memo["weight", name]

    def projected(name: str, read: str) -> torch.Tensor:  # (B, H, T, d)
        key = ("projected", name, read, name in wrong)
        if key not in memo:
            x = given[read].double() @ weight(f"w{name}")  # (B, T, C)
            # a wrong split views straight to (B, H, T, d): positions and heads mix
            memo[key] = x.reshape(B, n_heads, T, d) if name in wrong else x.view(B, T, n_heads, d).transpose(1, 2)
        return memo[key]

    reads = _reads(variants, MHA_WRONG_INPUTS, "qkv")
    scale = 1.0 / math.sqrt(C) if "wrong-scale-width" in variants else scale
    inner = frozenset(name for name in variants if name in SDPA_VARIANTS or name == "softmax-dim-heads")
    key = ("attention", reads, tuple(name in wrong for name in "qkv"), inner, scale, is_causal)
    if key not in memo:
        xq, xk, xv = (projected(name, read) for name, read in zip("qkv", reads))
        memo[key] = attention(xq, xk, xv, is_causal, inner, scale)[0]  # (B, H, T, d)
    y = memo[key]
    if variants & {"head-split", "head-split-out"}:  # merged without transposing back
        y = y.reshape(B, T, C)
    else:
        y = y.transpose(1, 2).reshape(B, T, C)  # (B, T, C)
    return y if "missing-out-proj" in variants else y @ weight("wo")


def gradients(out: torch.Tensor, leaves: list[torch.Tensor], cotangent: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The vector-Jacobian product of `out` with `cotangent` for each of `leaves`: the gradients of the scalar
    sum(out * cotangent), whose backward hands `out` exactly `cotangent` (1.0 times each value), so every gradient
    is the one `torch.autograd.grad(out, leaves, cotangent)` computes, bit for bit. Not written that way: autograd
    checks a tensor of output gradients with torch.fx's symbolic shapes, whose first import (sympy) cost the parent
    about 0.35 s of CPU per process, more than the rest of a grading."""
    return torch.autograd.grad((out * cotangent.to(out.dtype)).sum(), leaves)


def combinations(variants: list[str], largest: int = 3) -> list[tuple[str, ...]]:
    """Pairs, then triples (up to `largest`), of `variants` that change different steps. The module's projections
    reading the wrong input (26 ways) join pairs only (triples with them would be thousands); a slip inside the
    attention step (`weights @ K`, `Q @ Q.mT`: 4 ways) joins triples too, beside a mask and a head-split slip."""
    found = []
    in_attention = {f"wrong-input-{reads}" for reads in SDPA_WRONG_INPUTS}
    for size in range(2, largest + 1):
        for combination in itertools.combinations(variants, size):
            steps = [STEP_OF.get(v, v) for v in combination]
            if len(set(steps)) == size and (size == 2 or "inputs" not in steps or in_attention & set(combination)):
                found.append(combination)
    return found


def attention_dropout_placements(q, k, v, weights: dict, n_heads: int, p: float, seed: int) -> dict[str, torch.Tensor]:
    """The causal module's train() output with only attn_dropout dropping (rate `p`), for each tensor it may be
    applied to: "weights" (after softmax: right), "scores" (before softmax), "heads" (to weights @ V) and "output"
    (to the module's output after wo, resid_dropout's place: the two layers swapped), and "both" (the weights, then
    the output: code that drops with args.dropout itself at both places). The
    dropout mask is drawn as the parent runs a graph's dropout: `bernoulli_(1 - p)` from a generator seeded with
    `seed`, on a float32 tensor of that place's shape (for "both", the output's mask next from the same generator);
    the arithmetic is float64."""
    W = {name: w.double() for name, w in weights.items()}
    B, T, C = q.shape
    d = C // n_heads

    def kept(shape, generator=None) -> torch.Tensor:  # 0 or 1/(1-p): nn.Dropout's draw (bernoulli_), from a generator
        if generator is None:  # of its own seeded so, never the global one (threads grade side by side)
            generator = torch.Generator().manual_seed(seed)
        return (torch.empty(shape).bernoulli_(1 - p, generator=generator) / (1 - p)).double()

    split = lambda x: x.view(B, T, n_heads, d).transpose(1, 2)  # noqa: E731  (B, H, T, d)
    xq, xk, xv = split(q.double() @ W["wq"].T), split(k.double() @ W["wk"].T), split(v.double() @ W["wv"].T)
    scores = xq @ xk.transpose(-2, -1) / math.sqrt(d)  # (B, H, T, T)
    future = causal_future(T)
    outputs = {}
    for place in ("weights", "scores", "heads", "output", "both"):
        generator = torch.Generator().manual_seed(seed)
        s = scores * kept(scores.shape) if place == "scores" else scores
        a = torch.softmax(s.masked_fill(future, float("-inf")), dim=-1)  # (B, H, T, T)
        a = a * kept(a.shape, generator) if place in ("weights", "both") else a
        y = a @ xv  # (B, H, T, d)
        y = y * kept(y.shape) if place == "heads" else y
        out = y.transpose(1, 2).reshape(B, T, C) @ W["wo"].T  # (B, T, C)
        outputs[place] = out * kept(out.shape, generator) if place in ("output", "both") else out
    return outputs
