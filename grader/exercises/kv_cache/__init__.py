"""The second exercise, `kv_cache`: a key/value cache with grouped-query attention, declared once: `repeat_kv`, a
`KVCache` and `GroupedQueryAttention` that decodes with it.

Torch-free (grader/exercises/__init__.py says why). The interface, fixed for every helper of issue 45, is the
notebook's (source/kv_cache/kv_cache.ipynb): its parts, in order, with their graded names and points; the provided
cells (the imports, `ModelArgs`, lab 1's causal attention, the self-check); the self-check files beside it.
"""
from __future__ import annotations

from grader.exercises import Exercise, Part

PARTS: tuple[Part, ...] = (
    Part("repeat", 1, "repeat_kv", "key/value heads repeated for their query heads", "repeat", "repeat_tests",
         4.0, "part1"),
    Part("cache", 2, "KVCache", "preallocated key/value cache", "cache", "cache_tests", 6.0, "part2"),
    Part("gqa", 3, "GroupedQueryAttention", "grouped-query attention with a KV cache", "gqa", "gqa_tests", 10.0,
         "part3"),
)

PROVIDED_CELLS = ("imports", "model_args", "causal_attention", "selfcheck")
"""grade_ids of the notebook's locked, provided cells, in order."""
IMPORTS = "import math, torch, torch.nn as nn, torch.nn.functional as F; from dataclasses import dataclass"
"""What the provided imports cell binds (a notebook that lost it is still graded on its code)."""

MODEL_ARGS_CLASS = "ModelArgs"
MODEL_ARGS = {"dim": 64, "n_heads": 8, "n_kv_heads": 2, "max_seq_len": 256, "max_batch_size": 4}
"""The provided `ModelArgs` dataclass: its fields (all ints) and the notebook's defaults, in order."""

CAUSAL_ATTENTION = "scaled_dot_product_attention"
"""Lab 1's function, given in the provided cell `causal_attention`: not graded here, and free to call."""
CAUSAL_ATTENTION_SOURCE = """def scaled_dot_product_attention(Q, K, V, is_causal=True):
    T, d_k = Q.size(-2), Q.size(-1)
    scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(d_k)
    if is_causal:
        future = torch.ones(T, T, dtype=torch.bool, device=Q.device).triu(diagonal=1)
        scores = scores.masked_fill(future, float("-inf"))
    weights = F.softmax(scores, dim=-1)
    return torch.matmul(weights, V), weights"""
"""The provided cell's function, for a notebook that lost that cell (the same computation, without its comments)."""

PROJECTIONS = ("wq", "wk", "wv", "wo")
"""`GroupedQueryAttention`'s parameters, bias-free `nn.Linear`s (wk, wv sized by n_kv_heads): the interface the
grader loads reference weights through."""
CACHE_BUFFERS = ("cache_k", "cache_v")
"""`KVCache`'s preallocated tensors, (max_batch_size, n_kv_heads, max_seq_len, head_dim) each."""
GRADERS_KV_CACHE_SOURCE = """class KVCache:
    def __init__(self, max_batch_size, max_seq_len, n_kv_heads, head_dim, device=None, dtype=torch.float32):
        shape = (max_batch_size, n_kv_heads, max_seq_len, head_dim)
        self.cache_k = torch.zeros(shape, device=device, dtype=dtype)
        self.cache_v = torch.zeros(shape, device=device, dtype=dtype)

    def update(self, start_pos, k, v):
        B, T = k.size(0), k.size(2)
        self.cache_k[:B, :, start_pos:start_pos + T] = k
        self.cache_v[:B, :, start_pos:start_pos + T] = v
        return self.cache_k[:B, :, :start_pos + T], self.cache_v[:B, :, :start_pos + T]"""
"""The grader's own KVCache, the interface's, which Part 3's decode probe hands the student's GroupedQueryAttention
(grader/sandbox/decode_probes.py): a mistake in the student's KVCache costs Part 2's points alone, never Part 3's."""


def model_args_source() -> str:
    """The provided `ModelArgs` as one line of Python (for a notebook that lost the provided cell)."""
    fields = "; ".join(f"{name}: int = {value!r}" for name, value in MODEL_ARGS.items())
    return f"class {MODEL_ARGS_CLASS}: {fields}"


EXERCISE = Exercise(name="kv_cache", parts=PARTS, provided_cells=PROVIDED_CELLS, imports=IMPORTS,
                    provided_code=(IMPORTS, "@dataclass", model_args_source(), *CAUSAL_ATTENTION_SOURCE.splitlines()),
                    selfcheck_files=("selfcheck.py",))
