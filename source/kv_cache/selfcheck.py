# @title 自检工具（已提供，运行即可）/ Self-check helpers (provided: just run this cell)
# 这个单元格只定义自检用的函数，不需要读懂，也不要修改。/ Defines the self-check functions; no need to read or edit.
import ast
import math
import re
import sys
import traceback

import torch
import torch.nn as nn
import torch.nn.functional as F

# For maintainers: the public self-check of the kv_cache exercise, one source for both places it runs: the
# notebook's self-check cells (`make build` inlines this file into the provided cell `selfcheck`) and
# `python -m pytest` beside the notebook (`make build` copies it to release/kv_cache/selfcheck.py).
# Only torch: it must run on Colab and on a student's machine without the course's grader. The references are
# computed here with plain torch ops, one head at a time and without a cache (a float64 pass over the whole
# sequence, lab 1's square mask), and Part 3 runs with a cache of our own (a concatenating one: the exercise asks
# for better), so Part 3 is checked whatever Part 2's cache does. Neither is the exercise's answer.

SELFCHECK_MISTAKES = {
    "not-implemented": ("未完成实现", "Not implemented",
                        "把 TODO 处抛出 NotImplementedError 的那一行换成你的代码，并运行定义它的单元格。",
                        "Replace the TODO's NotImplementedError line with your code and run the cell that defines it."),
    "wrong-return": ("返回值不对", "Wrong return value",
                     "repeat_kv 返回 (B, H_kv·n_rep, T, d)；update 返回 (keys, values)；模块返回 (B, T, dim)。",
                     "repeat_kv returns (B, H_kv·n_rep, T, d); update returns (keys, values); the module (B, T, dim)."),
    "repeat-kv-order": ("repeat_kv 的头顺序错了", "repeat_kv puts the heads in the wrong order",
                        "输出的第 h 个头是输入的第 h // n_rep 个头：用 repeat_interleave(n_rep, dim=1)，或在第 2 维后"
                        "插一维 expand 再 reshape；不是 repeat(1, n_rep, 1, 1)（TODO 1a）。",
                        "Output head h is input head h // n_rep: repeat_interleave(n_rep, dim=1), or a new dim after "
                        "dim 1 expanded then reshaped; not repeat(1, n_rep, 1, 1) (TODO 1a)."),
    "cache-position": ("缓存写错了位置或读多了", "Cache written at the wrong place or read too far",
                       "写到 [start_pos, start_pos + T)、批次行 [:B]；只返回写过的部分 cache_k[:B, :, :start_pos + T]"
                       "（TODO 2b / 2c）。",
                       "Write at [start_pos, start_pos + T) of rows [:B]; return only what was written, "
                       "cache_k[:B, :, :start_pos + T] (TODO 2b / 2c)."),
    "cache-device": ("缓存建在了错误的设备上", "Cache on the wrong device",
                     "创建缓存时写 torch.zeros(..., device=device, dtype=dtype)（TODO 2a）。",
                     "Create the buffers with torch.zeros(..., device=device, dtype=dtype) (TODO 2a)."),
    "cache-mask-offset": ("因果掩码没有按 start_pos 偏移", "Causal mask not offset by start_pos",
                          "新 token i 的绝对位置是 start_pos + i：它看得见键 j 当且仅当 j <= start_pos + i；掩码形状 "
                          "(T, start_pos + T)（TODO 3d）。",
                          "New token i sits at start_pos + i: it sees key j iff j <= start_pos + i; the mask is "
                          "(T, start_pos + T) (TODO 3d)."),
    "kv-heads-ignored": ("忽略了 n_kv_heads", "n_kv_heads ignored",
                         "wk、wv 输出 n_kv_heads * head_dim 维，k、v 拆成 n_kv_heads 个头，再 repeat_kv 到 n_heads"
                         "（TODO 3a / 3b）。",
                         "wk and wv output n_kv_heads * head_dim; split k and v into n_kv_heads heads, then repeat_kv "
                         "them to n_heads (TODO 3a / 3b)."),
    "missing-scale": ("没有除以 √d_k", "Missing √d_k scaling",
                      "分数要除以 √head_dim（TODO 3c）。", "Divide the scores by √head_dim (TODO 3c)."),
    "wrong-scale": ("缩放因子错误", "Wrong scaling factor",
                    "除以 √head_dim（每个头的维度），而不是 √dim（TODO 3c）。",
                    "Divide by √head_dim (one head's width), not √dim (TODO 3c)."),
    "mask-missing": ("没有因果掩码", "Causal mask missing",
                     "有没有缓存都要在 softmax 之前遮住未来：键 j > start_pos + i 填 -inf（TODO 3d）。",
                     "With or without a cache, hide the future before softmax: -inf for keys j > start_pos + i (TODO 3d)."),
    "mask-diagonal": ("对角线被遮蔽", "Diagonal masked too",
                      "每个 token 都看得见自己：遮住 j > start_pos + i，不是 j >= start_pos + i（TODO 3d）。",
                      "Every token sees itself: hide j > start_pos + i, not j >= start_pos + i (TODO 3d)."),
    "mask-direction": ("掩码方向反了", "Mask hides the past",
                       "遮住未来（键的位置大于查询的位置），不是过去（TODO 3d）。",
                       "Hide the future (keys after the query), not the past (TODO 3d)."),
    "softmax-dim": ("softmax 维度错误", "Softmax over wrong dimension",
                    "沿最后一维（键，dim=-1）做 softmax（TODO 3e）。", "Softmax over the last dim, the keys, dim=-1 (TODO 3e)."),
    "head-split": ("拆分／合并多头的顺序错了", "Heads split in wrong order",
                   "先 view(B, T, H, d) 再 transpose(1, 2)；合并时先 transpose(1, 2) 再 reshape(B, T, -1)（TODO 3b / 3f）。",
                   "view(B, T, H, d) then transpose(1, 2); merge with transpose(1, 2) then reshape(B, T, -1) "
                   "(TODO 3b / 3f)."),
    "missing-out-proj": ("缺少输出投影", "Output projection not applied",
                         "合并多头之后再经过 self.wo（TODO 3f）。", "Apply self.wo after merging the heads (TODO 3f)."),
    "broken-grad": ("梯度被切断", "Gradient flow cut",
                    "不要用 detach、.data、.item()、no_grad 或 numpy：只用张量运算（TODO 1a / 3b）。",
                    "No detach, .data, .item(), no_grad or numpy: tensor ops only (TODO 1a / 3b)."),
    "hardcoded-device": ("设备写死", "Hard-coded device",
                         "不要写死 \"cuda\" / .cuda() / \"cpu\"：用 device=x.device（TODO 3d）。",
                         "Do not hard-code \"cuda\" / .cuda() / \"cpu\": use device=x.device (TODO 3d)."),
    "syntax-error": ("语法错误", "Syntax error", "先修好这一行的语法。", "Fix the syntax of this line first."),
    "forbidden-api": ("调用了现成实现", "Built-in attention used",
                      "自己写出 softmax(q kᵀ / √d) v：用 @、masked_fill 和 softmax；已提供的 scaled_dot_product_attention 可以用。",
                      "Compute softmax(q kᵀ / √d) v yourself with @, masked_fill and softmax; the provided "
                      "scaled_dot_product_attention may be used."),
    "forbidden-import": ("导入了不允许的模块", "Module not allowed in graded code", None, None),  # fixes: the table's
    "introspection": ("用了 eval／globals 等动态查找", "Dynamic lookups or interpreter internals",
                      "直接写出属性和运算（self.wq、x.size(1)、torch.softmax），不要用 eval、globals 或特殊属性。",
                      "Name attributes and ops directly (self.wq, x.size(1), torch.softmax); no eval, globals or "
                      "special attributes."),
    "private-torch": ("使用了 torch 的私有或底层接口", "Private or low-level torch API",
                      "只用公开的张量运算：@、torch.softmax、masked_fill、repeat_interleave。",
                      "Use the public tensor ops: @, torch.softmax, masked_fill, repeat_interleave."),
    "tampering": ("篡改评分环境", "Tampering with grading",
                  "不要修改 torch 或其他模块、类；自己的状态放在 self 上。",
                  "Leave torch and other modules and classes as they are; keep your own state on self."),
    "value-mismatch": ("结果与参考实现不一致", "Result differs from the reference",
                       "逐步对照说明检查：投影与拆头、repeat_kv、打分与缩放、掩码、softmax 的维度、合并多头、wo。",
                       "Check each step against the text: projections and heads, repeat_kv, scores and scale, mask, "
                       "softmax dim, merging the heads, wo."),
    "raised": ("运行时出错", "Your code raised an error",
               "按报错改正上面引用的那一行。若是 NameError，多半是名字拼错或还没赋值。",
               "Correct the quoted line. A NameError is usually a misspelt or unassigned name."),
    "selfcheck-error": ("自检程序本身出错（不是你的错误）", "The self-check itself failed (not your mistake)",
                        "重新运行“自检工具”单元格后再试；仍然出错请告诉老师，并附上这条消息。",
                        "Run the self-check helpers cell again, then retry; if it persists, tell your teacher and "
                        "include this message."),
}
"""mistake id -> (zh title, en title, zh fix, en fix). The ids and titles are the course's mistake catalog
(a test holds them equal), but for SELFCHECK_OWN_MISTAKES."""
SELFCHECK_OWN_MISTAKES = ("value-mismatch", "raised", "selfcheck-error")
"""This self-check's own ids, not the catalog's: a wrong result it cannot name, an error it does not recognise
in the student's code, and a failure of its own code."""

_ERROR_MISTAKES = (  # (exception type, text in its message, mistake); the first that matches names it
    ("NotImplementedError", "", "not-implemented"),
    ("AssertionError", "not compiled with CUDA", "hardcoded-device"),
    ("RuntimeError", "NVIDIA driver", "hardcoded-device"),
    ("RuntimeError", "Found no NVIDIA", "hardcoded-device"),
)


# --- how a check fails: `make build` copies it here from source/selfcheck/failures.py ---
# --- end of how a check fails ---


# ---- Part 1 · repeat_kv ---------------------------------------------------------------------------

def _repeated(repeat_kv, x, n_rep):
    out = _call(repeat_kv, x, n_rep)
    B, H_kv, T, d = x.shape
    if not isinstance(out, torch.Tensor) or out.shape != (B, H_kv * n_rep, T, d):
        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        _fail("wrong-return", f"输入 {tuple(x.shape)}、n_rep={n_rep} 时输出应为 {(B, H_kv * n_rep, T, d)}，实际 {shape}。",
              f"for input {tuple(x.shape)} and n_rep={n_rep} the output must be {(B, H_kv * n_rep, T, d)}, got {shape}.")
    return out


def check_repeat_shapes(repeat_kv):
    generator = torch.Generator().manual_seed(0)
    for shape, n_rep in (((2, 2, 5, 4), 3), ((1, 4, 1, 8), 2), ((3, 2, 7, 6), 1), ((2, 1, 3, 4), 4)):
        _repeated(repeat_kv, torch.randn(*shape, generator=generator), n_rep)


def check_repeat_head_order(repeat_kv):
    """Each input head filled with its own number: output head h must read input head h // n_rep."""
    B, H_kv, T, d, n_rep = 2, 3, 4, 5, 2
    x = torch.arange(H_kv, dtype=torch.float32).view(1, H_kv, 1, 1).expand(B, H_kv, T, d).contiguous()
    heads = [int(v) if float(v).is_integer() else round(v, 3) for v in _repeated(repeat_kv, x, n_rep)[0, :, 0, 0].tolist()]
    wanted = [h // n_rep for h in range(H_kv * n_rep)]
    if heads == [h % H_kv for h in range(H_kv * n_rep)]:
        _fail("repeat-kv-order", f"H_kv=3、n_rep=2 时输出的头依次来自输入头 {heads}，应为 {wanted}：同一组的查询头要共用同一个 kv 头。",
              f"with H_kv=3, n_rep=2 the output heads come from input heads {heads}, not {wanted}: the query heads "
              "of one group share one kv head.")
    if heads != wanted:
        _fail("value-mismatch", f"输出的头依次来自输入头 {heads}，应为 {wanted}。",
              f"the output heads come from input heads {heads}, not {wanted}.")
    y = torch.randn(2, 3, 4, 5, generator=torch.Generator().manual_seed(1))
    out = _repeated(repeat_kv, y, n_rep)
    if not all(torch.equal(out[:, h], y[:, h // n_rep]) for h in range(H_kv * n_rep)):
        _fail("value-mismatch", "头的顺序对，但数值与输入不同。", "the heads are in order, but the values differ from the input.")


def check_repeat_grad(repeat_kv):
    x = torch.randn(1, 2, 3, 4, generator=torch.Generator().manual_seed(2), requires_grad=True)
    out = _repeated(repeat_kv, x, 3)
    if not out.requires_grad:
        _fail("broken-grad", "输出不带梯度：repeat_kv 切断了梯度。", "the output carries no gradient: repeat_kv cut it.")
    _call(out.sum().backward)
    if x.grad is None or not torch.equal(x.grad, torch.full_like(x, 3.0)):
        _fail("broken-grad", "每个输入元素被复制了 3 次，它的梯度应为 3。",
              "each input element is copied 3 times, so its gradient must be 3.")


# ---- Part 2 · KVCache -----------------------------------------------------------------------------

def _cache(KVCache, **options):
    sizes = dict(max_batch_size=4, max_seq_len=16, n_kv_heads=2, head_dim=3)
    return _call(KVCache, **sizes, **options)


def _buffers(cache):
    found = [getattr(cache, name, None) for name in ("cache_k", "cache_v")]
    if not all(isinstance(t, torch.Tensor) for t in found):
        _fail("wrong-return", "缓存要有两个张量属性 cache_k 和 cache_v。", "the cache must hold two tensors, cache_k and cache_v.")
    return found


def check_cache_interface(KVCache):
    for buffer in _buffers(_cache(KVCache)):
        if buffer.shape != (4, 2, 16, 3) or buffer.dtype != torch.float32 or bool(buffer.any()):
            _fail("wrong-return", f"KVCache(max_batch_size=4, max_seq_len=16, n_kv_heads=2, head_dim=3) 的 cache_k、"
                  f"cache_v 应是形状 (4, 2, 16, 3) 的 float32 零张量，实际 {tuple(buffer.shape)} {buffer.dtype}。",
                  f"KVCache(max_batch_size=4, max_seq_len=16, n_kv_heads=2, head_dim=3) must preallocate cache_k and "
                  f"cache_v as float32 zeros of shape (4, 2, 16, 3), got {tuple(buffer.shape)} {buffer.dtype}.")
    if any(b.dtype != torch.float64 for b in _buffers(_cache(KVCache, dtype=torch.float64))):
        _fail("wrong-return", "dtype=torch.float64 时缓存不是 float64：创建时写 dtype=dtype。",
              "with dtype=torch.float64 the cache is not float64: create it with dtype=dtype.")
    # the meta device stands in for a GPU here: a tensor made there has shapes and no numbers
    placed = {b.device.type for b in _buffers(_cache(KVCache, device=torch.device("meta")))}
    if placed != {"meta"}:
        _fail("cache-device", f"device=meta（代替 GPU）时缓存却在 {', '.join(sorted(placed))} 上：模型在 GPU 上时就会报设备不一致。",
              f"with device=meta (standing in for a GPU) the cache is on {', '.join(sorted(placed))}: with the model "
              "on a GPU that is a device mismatch.")


def _updated(cache, start_pos, k, v):
    result = _call(cache.update, start_pos, k, v)
    if not (isinstance(result, tuple) and len(result) == 2 and all(isinstance(t, torch.Tensor) for t in result)):
        _fail("wrong-return", "update 应返回二元组 (keys, values)。", "update must return the tuple (keys, values).")
    return result


def check_cache_write(KVCache):
    """A prompt of 3, one token, then a chunk of 2, in batch 2 of a cache made for 4: written in place where
    each belongs, and only what was written read back."""
    cache = _cache(KVCache)
    generator = torch.Generator().manual_seed(3)
    written_k, written_v = [], []
    for start_pos, T in ((0, 3), (3, 1), (4, 2)):
        k, v = (torch.randn(2, 2, T, 3, generator=generator) for _ in range(2))
        written_k.append(k)
        written_v.append(v)
        keys, values = _updated(cache, start_pos, k, v)
        wanted_k, wanted_v = torch.cat(written_k, dim=2), torch.cat(written_v, dim=2)
        where_zh, where_en = f"update(start_pos={start_pos}) 写入 T={T} 个位置后", f"after update(start_pos={start_pos}) with T={T}"
        if keys.shape != wanted_k.shape or values.shape != wanted_v.shape:
            _fail("cache-position", f"{where_zh}，返回的 keys 形状是 {tuple(keys.shape)}，应为 {tuple(wanted_k.shape)}：只返回写过的"
                  "批次行和位置 [:B, :, :start_pos + T]。",
                  f"{where_en}, the keys returned are {tuple(keys.shape)}, not {tuple(wanted_k.shape)}: return only the "
                  "rows and positions written, [:B, :, :start_pos + T].")
        if torch.equal(keys, wanted_v) and torch.equal(values, wanted_k):
            _fail("wrong-return", "update 返回的 keys 和 values 对调了。", "update returned keys and values swapped.")
        if not (torch.equal(keys, wanted_k) and torch.equal(values, wanted_v)):
            _fail("cache-position", f"{where_zh}，返回的内容与写入的不一致：位置 [start_pos, start_pos + T) 写错了。",
                  f"{where_en}, what comes back differs from what was written: not written at [start_pos, start_pos + T).")
    cache_k, cache_v = _buffers(cache)
    if cache_k.shape != (4, 2, 16, 3):
        _fail("wrong-return", f"更新后 cache_k 的形状变成了 {tuple(cache_k.shape)}：缓存要预先分配，原地写入，不要拼接出新张量。",
              f"after the updates cache_k is {tuple(cache_k.shape)}: preallocate it and write in place, do not "
              "concatenate a new tensor.")
    if not torch.equal(cache_k[:2, :, :6], torch.cat(written_k, dim=2)) or bool(cache_k[:, :, 6:].any()) \
            or bool(cache_k[2:].any()) or not torch.equal(cache_v[:2, :, :6], torch.cat(written_v, dim=2)):
        _fail("cache-position", "cache_k / cache_v 里的内容不在应有的位置：批次行 [:B]、位置 [start_pos, start_pos + T)。",
              "cache_k / cache_v do not hold the writes where they belong: rows [:B], positions "
              "[start_pos, start_pos + T).")


# ---- Part 3 · GroupedQueryAttention ---------------------------------------------------------------

_SIZES = dict(dim=48, n_heads=6, n_kv_heads=2, max_seq_len=32, max_batch_size=4)
"""head_dim 8, n_rep 3: dim not a power of two, √dim ≠ √head_dim, heads ≠ positions so transposes cannot hide."""


class _ReferenceCache:
    """The self-check's own cache, so Part 3 is checked whatever Part 2's cache does: it keeps the positions before
    start_pos and appends the new ones (a copy of everything at every step: Part 2 asks for better)."""

    def __init__(self):
        self.keys = self.values = None
        # the sizes a KVCache built for this module keeps: a model may check a request against cache.max_seq_len
        self.max_batch_size, self.max_seq_len = _SIZES["max_batch_size"], _SIZES["max_seq_len"]
        self.n_kv_heads, self.head_dim = _SIZES["n_kv_heads"], _SIZES["dim"] // _SIZES["n_heads"]
        self.device, self.dtype = None, torch.float32

    def update(self, start_pos, k, v):
        if start_pos == 0:
            self.keys, self.values = k, v
        else:
            self.keys = torch.cat([self.keys[:, :, :start_pos], k], dim=2)
            self.values = torch.cat([self.values[:, :, :start_pos], v], dim=2)
        return self.keys, self.values


def _reference_cache():
    return _ReferenceCache()


def _gqa(GroupedQueryAttention, ModelArgs, **sizes):
    torch.manual_seed(0)
    return _call(GroupedQueryAttention, _call(ModelArgs, **{**_SIZES, **sizes}))


def _x(B=2, T=9, seed=1):
    return torch.randn(B, T, _SIZES["dim"], generator=torch.Generator().manual_seed(seed))


def _forward(gqa, x, cache=None, start_pos=0):
    try:
        y = _call(gqa, x, cache=cache, start_pos=start_pos)
    except SelfCheckFailure as failure:  # a (T, T) mask meets (T, start_pos + T) scores: the offset is missing
        if failure.raised and start_pos > 0 and x.size(1) > 1 and "must match the size" in failure.error:
            _fail("cache-mask-offset", f"缓存了 {start_pos} 个位置之后一次输入 {x.size(1)} 个 token 时，掩码与分数的形状对不上。",
                  f"a chunk of {x.size(1)} tokens after {start_pos} cached positions: the mask does not fit the scores.",
                  failure.error, failure.line)
        raise
    if not isinstance(y, torch.Tensor) or y.shape != x.shape:
        shape = tuple(y.shape) if isinstance(y, torch.Tensor) else type(y).__name__
        _fail("wrong-return", f"start_pos={start_pos} 时输出应为 (B, T, dim) = {tuple(x.shape)}，实际 {shape}。",
              f"at start_pos={start_pos} the output must be (B, T, dim) = {tuple(x.shape)}, got {shape}.")
    return y


def _by_hand(gqa, x, start, variant=None, n_kv_heads=None):
    """The outputs of rows [start, S) of x (B, S, dim) from gqa's weights: the whole sequence in float64, causal
    as in lab 1, each query head reading its kv head, the right way or one named wrong way; None when the module
    lacks what this reads."""
    n_heads, n_kv_heads = _SIZES["n_heads"], n_kv_heads or _SIZES["n_kv_heads"]
    B, S, C = x.shape
    d, n_rep = C // n_heads, n_heads // n_kv_heads
    try:
        def split(name, heads):
            y = x.double() @ getattr(gqa, name).weight.detach().double().T  # (B, S, heads * d)
            if variant in ("head-split", "head-split-in"):  # viewed straight to (B, H, S, d): positions and heads mix
                return y.reshape(B, heads, S, d)
            return y.view(B, S, heads, d).transpose(1, 2)  # (B, heads, S, d)

        q, k, v = split("wq", n_heads), split("wk", n_kv_heads), split("wv", n_kv_heads)
        # the kv head each query head reads, head by head: h // n_rep, or h % H_kv where repeat mixed the groups
        kv_of = [h % n_kv_heads if variant == "repeat-kv-order" else h // n_rep for h in range(n_heads)]
        k, v = torch.stack([k[:, g] for g in kv_of], dim=1), torch.stack([v[:, g] for g in kv_of], dim=1)
        scale = 1.0 if variant == "missing-scale" else math.sqrt(C) if variant == "wrong-scale" else math.sqrt(d)
        att = q @ k.transpose(-2, -1) / scale  # (B, H, S, S)
        future = torch.ones(S, S, dtype=torch.bool).triu(diagonal=1)  # lab 1's mask
        # rows [start, S) as a cache would run them with a mask not offset: row i hides keys j > i - start
        hidden = {"mask-direction": future.T, "mask-missing": torch.zeros(S, S, dtype=torch.bool),
                  "cache-mask-offset": torch.ones(S, S, dtype=torch.bool).triu(diagonal=1 - start)}.get(variant, future)
        att = att.masked_fill(hidden, float("-inf"))
        weights = F.softmax(att, dim=-2 if variant == "softmax-dim" else -1)
        y = weights @ v  # (B, H, S, d)
        if variant in ("head-split", "head-split-out"):  # merged without transposing back
            y = y.reshape(B, S, C)
        else:
            y = y.transpose(1, 2).reshape(B, S, C)  # (B, S, C)
        y = y if variant == "missing-out-proj" else y @ gqa.wo.weight.detach().double().T
        return y[:, start:]
    except Exception:  # the student's module lacks what this reads: no variant to name
        return None


_VARIANTS = ("mask-missing", "missing-scale", "wrong-scale", "repeat-kv-order", "mask-direction", "softmax-dim",
             "head-split", "head-split-in", "head-split-out", "missing-out-proj")
"""The wrong ways of _by_hand tried on any pass; "cache-mask-offset" (a mask not offset) is tried after a cache."""


def _name_values(gqa, x, start, y):
    """Which classic mistake produced rows [start, S) of y: tried against the reference computed that wrong way.
    After a cache (start > 0) a missing mask lets a chunk see its own future: that is the offset's mistake too."""
    d = _SIZES["dim"] // _SIZES["n_heads"]
    wk = getattr(gqa, "wk", None)
    kv_heads = getattr(wk, "out_features", 0) // d
    if kv_heads and kv_heads != _SIZES["n_kv_heads"] and _close(y, _by_hand(gqa, x, start, n_kv_heads=kv_heads)):
        return "kv-heads-ignored"
    if torch.isnan(y).any() and torch.isfinite(y[:, 1:]).all() and start == 0:
        return "mask-diagonal"  # row 0 saw nothing: the diagonal masked too
    for variant in (("cache-mask-offset",) if start else ()) + _VARIANTS:
        if _close(y, _by_hand(gqa, x, start, variant)):
            if variant == "mask-missing" and start:
                return "cache-mask-offset"
            return variant if not variant.startswith("head-split") else "head-split"
    return "value-mismatch"


def check_gqa_interface(GroupedQueryAttention, ModelArgs):
    gqa = _gqa(GroupedQueryAttention, ModelArgs)
    d, H, H_kv, C = 8, _SIZES["n_heads"], _SIZES["n_kv_heads"], _SIZES["dim"]
    wanted = {"wq": (C, H * d), "wk": (C, H_kv * d), "wv": (C, H_kv * d), "wo": (H * d, C)}
    for name, (fan_in, fan_out) in wanted.items():
        layer = getattr(gqa, name, None)
        if not (isinstance(layer, nn.Linear) and layer.bias is None):
            _fail("wrong-return", f"self.{name} 应是 nn.Linear(..., bias=False)。", f"self.{name} must be nn.Linear(..., bias=False).")
        if (layer.in_features, layer.out_features) == (fan_in, fan_out):
            continue
        if name in ("wk", "wv") and layer.out_features == H * d:
            _fail("kv-heads-ignored", f"n_kv_heads=2、n_heads=6 时 self.{name} 输出 {layer.out_features} 维，应为 "
                  f"n_kv_heads * head_dim = {fan_out}：这是普通多头注意力，缓存没有变小。",
                  f"with n_kv_heads=2, n_heads=6, self.{name} outputs {layer.out_features}, not n_kv_heads * head_dim = "
                  f"{fan_out}: a plain multi-head module, whose cache is no smaller.")
        _fail("wrong-return", f"self.{name} 应是 {fan_in} -> {fan_out}，实际 {layer.in_features} -> {layer.out_features}。",
              f"self.{name} must be {fan_in} -> {fan_out}, got {layer.in_features} -> {layer.out_features}.")


def check_gqa_shapes(GroupedQueryAttention, ModelArgs):
    """Every input the exercise promises: a prompt without a cache, a prompt then single tokens then a chunk
    with one, in a batch of 2 and of 1 (fewer rows than the cache holds)."""
    gqa = _gqa(GroupedQueryAttention, ModelArgs).eval()
    with torch.no_grad():
        _forward(gqa, _x(T=5))
        for B in (2, 1):
            x, cache = _x(B=B), _reference_cache()
            for start, stop in ((0, 5), (5, 6), (6, 7), (7, 9)):
                _forward(gqa, x[:, start:stop], cache, start)


def check_gqa_values(GroupedQueryAttention, ModelArgs):
    """The whole sequence without a cache, against the float64 reference from the module's own weights."""
    gqa = _gqa(GroupedQueryAttention, ModelArgs).eval()
    x = _x()
    with torch.no_grad():
        y = _forward(gqa, x)
    if not _close(y, _by_hand(gqa, x, 0)):
        _fail(_name_values(gqa, x, 0, y), "没有缓存时，输出与参考实现（同样的权重，完整的因果注意力）不一致。",
              "without a cache the output differs from the reference (the same weights, full causal attention).")


def check_gqa_decoding(GroupedQueryAttention, ModelArgs):
    """A prompt of 5, two single tokens, then a chunk of 2, with one cache: each step's rows equal the full
    causal pass's rows."""
    gqa = _gqa(GroupedQueryAttention, ModelArgs).eval()
    x, cache = _x(), _reference_cache()
    with torch.no_grad():
        for start, stop in ((0, 5), (5, 6), (6, 7), (7, 9)):
            step = f"start_pos={start}, T={stop - start}"
            try:
                y = _forward(gqa, x[:, start:stop], cache, start)
            except SelfCheckFailure as failure:
                if failure.raised and stop - start > 1 and start > 0 and "must match the size" in failure.error:
                    _fail("cache-mask-offset", f"缓存之后一次输入 {stop - start} 个 token（{step}）时掩码的形状不对。",
                          f"a chunk of {stop - start} tokens after the cache ({step}): the mask has the wrong shape.",
                          failure.error, failure.line)
                raise
            if not _close(y, _by_hand(gqa, x[:, :stop], start)):
                _fail(_name_values(gqa, x[:, :stop], start, y),
                      f"带缓存逐步解码（{step}）的输出与完整因果计算的对应行不一致。",
                      f"decoding with the cache ({step}) differs from the same rows of the full causal pass.")


def check_gqa_causal(GroupedQueryAttention, ModelArgs):
    """Changing the last token of a chunk changes none of the rows before it: with and without a cache."""
    gqa = _gqa(GroupedQueryAttention, ModelArgs).eval()
    x = _x()
    future = x.clone()
    future[:, -1] += 10.0
    with torch.no_grad():
        for start in (0, 5):
            ys = []
            for inputs in (x, future):
                cache = _reference_cache() if start else None
                if start:
                    _forward(gqa, inputs[:, :start], cache, 0)
                ys.append(_forward(gqa, inputs[:, start:], cache, start))
            if not torch.isfinite(ys[0]).all():
                _fail(_name_values(gqa, x, start, ys[0]), "输出含 NaN，无法检验未来是否影响过去。",
                      "the output contains NaN, so whether the future reaches the past cannot be measured.")
            if not torch.allclose(ys[0][:, :-1], ys[1][:, :-1], atol=1e-6):
                where_zh, where_en = ("缓存了 5 个位置之后的", "after 5 cached positions, ") if start else ("", "")
                _fail(_name_values(gqa, x, start, ys[0]),
                      f"{where_zh}一段输入里，改动最后一个 token 改变了它前面的输出：未来泄漏到了过去。",
                      f"{where_en}changing the last token of a chunk changed the outputs before it: the future "
                      "leaks into the past.")


def check_gqa_grad(GroupedQueryAttention, ModelArgs):
    """Gradients reach the input and every projection through a prompt pass written into a cache."""
    gqa = _gqa(GroupedQueryAttention, ModelArgs)
    x = _x(T=5).requires_grad_()
    y = _forward(gqa, x, _reference_cache(), 0)
    if not y.requires_grad:
        _fail("broken-grad", "输出不带梯度：前向传播中有一步切断了梯度。", "the output carries no gradient: a step of forward cut it.")
    _call(y.square().sum().backward)
    missing = [name for name in ("wq", "wk", "wv", "wo") if getattr(gqa, name).weight.grad is None]
    if missing == ["wo"] and x.grad is not None:
        _fail("missing-out-proj", "wo 没有得到梯度：输出没有经过 self.wo。", "wo got no gradient: the output never went through self.wo.")
    if x.grad is None or missing:
        _fail("broken-grad", f"梯度没有传到 {', '.join(missing) or '输入 x'}。",
              f"no gradient reached {', '.join(missing) or 'the input x'}.")


# --- the grading rules' allow-list: `make build` copies it here from grader/rules/table.py ---
# --- end of the grading rules' allow-list ---
SELFCHECK_MISTAKES["forbidden-import"] = (*SELFCHECK_MISTAKES["forbidden-import"][:2], allowed_imports("zh"),
                                         allowed_imports("en"))  # every module the table allows, as the grader says it

# --- the grading rules read in your code: `make build` copies it here from source/selfcheck/rules.py ---
# --- end of the grading rules read in your code ---


SELFCHECK_CHECKS = {
    "part1": (("shapes", check_repeat_shapes), ("head_order", check_repeat_head_order), ("grad", check_repeat_grad),
              ("rules", check_rules)),
    "part2": (("interface", check_cache_interface), ("write", check_cache_write), ("rules", check_rules)),
    "part3": (("interface", check_gqa_interface), ("shapes", check_gqa_shapes), ("values", check_gqa_values),
              ("decoding", check_gqa_decoding), ("causal", check_gqa_causal), ("grad", check_gqa_grad),
              ("rules", check_rules)),
}
"""part -> (check name, function); a part's functions take the graded names of that part (`check_rules`
takes the part and the namespace: it reads the code you ran, `In` in a notebook)."""
SELFCHECK_GRADED = {"part1": ("repeat_kv",), "part2": ("KVCache",), "part3": ("GroupedQueryAttention", "ModelArgs")}
SELFCHECK_TITLE = {"part1": "Part 1 · repeat_kv", "part2": "Part 2 · KVCache", "part3": "Part 3 · GroupedQueryAttention"}
"""part (its pytest marker) -> its title. This folder stands alone (no grader import), so the parts are
declared here again; a test holds them equal to the exercise's declaration."""


def before_part(part, namespace):
    """Nothing to read before a part's checks run: each check reads what it needs."""


def one_mistake_explains(results):
    """A module that ignores n_kv_heads (the interface check says so) cannot write its n_heads keys into a cache
    made for n_kv_heads: those errors are the same mistake, named once, not guesses of their own."""
    interface = results.get("interface")
    if interface is None or interface.mistake != "kv-heads-ignored":
        return results
    return {name: SelfCheckFailure("kv-heads-ignored", f.seen_zh, f.seen_en, raised=f.raised, error=f.error, line=f.line)
            if f and f.mistake in ("raised", "wrong-return") else f for name, f in results.items()}


SELFCHECK_LABEL = {"shapes": "形状", "head_order": "头的顺序", "grad": "梯度", "rules": "评分规则", "interface": "接口",
                   "write": "写入位置与返回长度", "values": "数值", "decoding": "带缓存解码 = 完整计算",
                   "causal": "因果：未来不影响过去"}
"""check name -> its Chinese label, printed before the name."""


# --- the self-check's runner and report: `make build` copies it here from source/selfcheck/runner.py ---
# --- end of the self-check's runner and report ---
