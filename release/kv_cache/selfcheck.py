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
# How a self-check check fails, the same for every exercise: the failure and the mistake it names, the student's
# code run with its exceptions read as mistakes (each exercise's _ERROR_MISTAKES says which), the student's own line
# quoted, and the self-check's own errors told apart from the student's. `make build` copies this text between the
# markers of each exercise's selfcheck.py (grader/build/inline_selfcheck.py), so each published self-check stands
# alone; _student_line and _own_error tell this file's frames by _call's file, which is that selfcheck.py.

class SelfCheckFailure(Exception):
    """One failed public check: the mistake that explains it, and what was seen. Where the student's code
    raised, `error` is the exception as one line and `line` the student's line it came from: a report quotes
    each error once, however many checks met it."""

    def __init__(self, mistake, seen_zh, seen_en, raised=False, also=(), error="", line=""):
        super().__init__(mistake)
        self.mistake, self.seen_zh, self.seen_en = mistake, seen_zh, seen_en
        self.mistakes = (mistake, *also)  # several bugs at once (no mask and no wo): each named
        self.raised = raised  # the student's code raised (rather than computed something wrong)
        self.error, self.line = error, line


def _fail(mistakes, seen_zh, seen_en, error="", line=""):
    """`mistakes`: one id, or a tuple of the ids that together explain what was seen."""
    first, *also = (mistakes,) if isinstance(mistakes, str) else mistakes
    raise SelfCheckFailure(first, seen_zh, seen_en, raised=bool(error), also=also, error=error, line=line)


def _call(function, *args, **kwargs):
    """Run the student's code; an exception becomes the mistake it usually means, or `raised`, quoting the
    student's line: never a wrong value, since there is no value."""
    return _called(function, args, kwargs, module=False)


def _call_module(function, *args, **kwargs):
    """_call for a module's constructor or forward: the errors _ERROR_MISTAKES marks "module" (a mask buffer
    sliced wrong needs a module to have one) are read as their mistake here alone."""
    return _called(function, args, kwargs, module=True)


def _called(function, args, kwargs, module):
    try:
        return function(*args, **kwargs)
    except SelfCheckFailure:
        raise
    except Exception as error:  # the student's own code: any exception is a finding, not a crash
        name, text = type(error).__name__, _error_text(error)
        mistake = next((row[2] for row in _ERROR_MISTAKES if row[0] == name and row[1] in text
                        and (module or "module" not in row[3:])), "raised")
        line = _student_line(error)
        seen_zh = seen_en = ""  # the error quoted says it
        unset = getattr(error, "name", None) if isinstance(error, NameError) else None
        if mistake == "raised" and unset and line.startswith("return"):
            seen_zh = f"`{line}` 用到的 `{unset}` 没有赋值：把结果存进 `{unset}`（模板最后一行返回的就是它）。"
            seen_en = f"`{unset}`, which `{line}` returns, was never assigned: store the result in `{unset}`."
        raise SelfCheckFailure(mistake, seen_zh, seen_en, raised=True, error=f"{name}: {text}".rstrip(": "),
                               line=line) from None


def _student_line(error):
    """The innermost line of the traceback outside this file and torch: the student's own line ("" if unknown)."""
    own = _call.__code__.co_filename
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        path = frame.filename.replace("\\", "/")
        if frame.filename != own and "/torch/" not in path:
            return (frame.line or "").strip()[:160]
    return ""


def _own_error(error):
    """A NameError or ImportError raised in this file's own code (a helper cell not run, a copy not built):
    the self-check is broken, which is never the student's mistake."""
    frames = traceback.extract_tb(error.__traceback__)
    return isinstance(error, (NameError, ImportError)) and bool(frames) \
        and frames[-1].filename == _call.__code__.co_filename


def _error_text(error):
    """The first line of an exception's message, short; "" when it has none or cannot say it."""
    try:
        return str(error).splitlines()[0][:160] if str(error) else ""
    except Exception:  # the student's own exception class
        return ""


def provided_cell_skipped(error, what_zh, what_en, task):
    """A provided cell that runs the student's code: one short hint in place of a traceback, so Run all goes on."""
    if isinstance(error, NotImplementedError):
        print(f"先完成任务 {task}，再运行这个单元格（{what_zh}）。/ Finish Task {task} first, then run this cell ({what_en}).")
        return
    raised = f"{type(error).__name__}: {_error_text(error)}".rstrip(": ")
    print(f"⚠️ 跳过{what_zh}：你的代码抛出 {raised}。上面 Part {task} 的自检说明了原因，改好后再运行这个单元格。\n"
          f"   Skipped {what_en}: your code raised {raised}. Part {task}'s self-check above says why; "
          "fix it and run this cell again.")


def _close(a, b):
    """a (the student's) equal to b within float32's tolerance; False where b could not be computed (None)."""
    return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape \
        and torch.allclose(a.double(), b.double(), atol=1e-5, rtol=1e-4)
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
import re

# standard library honest code uses; everything else of it reaches files, processes, the interpreter
ALLOWED_STDLIB = frozenset({
    "__future__", "math", "typing", "dataclasses", "functools", "itertools", "contextlib", "collections",
    "collections.abc", "warnings", "logging", "copy", "time", "numbers", "enum", "abc", "typing_extensions", "sys",
    "operator"})
# sys is there for printing (print(..., file=sys.stderr)); nothing else of it
ALLOWED_SYS = frozenset({"stdout", "stderr", "float_info", "maxsize"})
ALLOWED_PACKAGES = ("torch", "numpy", "einops")
# public namespaces of those packages that reach the dispatcher, the compiler stack, files or other processes
DENIED_MODULES = (
    "torch.library", "torch.overrides", "torch.jit", "torch.fx", "torch.compiler", "torch.export", "torch.package",
    "torch.hub", "torch.multiprocessing", "torch.distributed", "torch.onnx", "torch.testing", "torch.serialization",
    "torch.utils.cpp_extension", "torch.utils.data", "torch.utils.backend_registration", "torch.utils.benchmark",
    "torch.utils.tensorboard", "torch.utils.bottleneck", "torch.utils.hooks", "torch.profiler", "torch.autograd.profiler",
    "torch.cuda.tunable",
    "numpy.ctypeslib", "numpy.f2py", "numpy.distutils", "numpy.testing")
# names in allowed standard modules that reach what honest code never touches: copyreg's table of reducers is how
# the worker pickles its answers (a reducer registered there would rewrite them)
DENIED_STDLIB_NAMES = frozenset({"copy.dispatch_table"})
# names in allowed standard modules that read or write attributes and items by a name given as data, past the
# guards that see each `a.b` and `a[k]` the code spells (operator.matmul and the arithmetic stay allowed)
INDIRECT_ACCESS_NAMES = frozenset({"operator.attrgetter", "operator.methodcaller", "operator.itemgetter",
                                   "operator.getitem", "operator.setitem", "operator.delitem",
                                   "dataclasses.make_dataclass"})  # a class from data: bases and namespace unread
# public names on torch that are no module but lead to the same places; from_file and the archive readers open
# a file in C++, where no audit event sees it (grader/sandbox/audit.py)
DENIED_TORCH_NAMES = frozenset({"torch.ops", "torch.classes", "torch.compile", "torch.load", "torch.save",
                                "torch.set_default_device", "torch.from_file", "torch.PyTorchFileReader",
                                "torch.PyTorchFileWriter"})
# methods of torch's classes that open a file in C++ (UntypedStorage.from_file, FloatStorage.from_file, …)
FILE_OPENING_METHODS = frozenset({"from_file"})
# torch's built-in attention as Python names it (F.scaled_dot_product_attention, nn.MultiheadAttention, …) ...
FORBIDDEN_API = re.compile(r"^(scaled_dot_product\w*|multi_head_attention_forward|MultiheadAttention|"
                           r"_native_multi_head_attention|\w*flash_attention\w*|\w*efficient_attention\w*)$")
# ... and as the dispatcher names its operators (aten::_scaled_dot_product_flash_attention, _fused_sdp_choice, …)
FORBIDDEN_OPERATOR = re.compile(r"scaled_dot_product|multi_head_attention|flash_attention|efficient_attention|"
                                r"_fused_sdp|cudnn_attention")
# attributes that tell the grader's meta-device stand-in from a GPU
STAND_IN_ATTRIBUTES = frozenset({"is_meta", "is_fake", "data_ptr", "untyped_storage", "storage", "fake_mode",
                                 "share_memory_", "pin_memory"})  # the last two raise on a stand-in's meta storage
# attributes of frames, generators, tracebacks and code objects: a way out to the grader's globals
INTERPRETER_ATTRIBUTE = re.compile(r"^(gi_\w+|cr_\w+|ag_\w+|f_(back|globals|locals|builtins|code|trace)|"
                                   r"tb_\w+|co_\w+|mro|cell_contents)$")
# special attributes honest code reads; the others lead to code, globals, the class graph or the interpreter
ALLOWED_DUNDERS = frozenset({
    "__init__", "__class__", "__name__", "__qualname__", "__doc__", "__module__", "__version__", "__constants__",
    "__call__", "__len__", "__iter__", "__next__", "__enter__", "__exit__", "__getitem__", "__setitem__",
    "__contains__", "__repr__", "__str__", "__post_init__", "__add__", "__sub__", "__mul__", "__matmul__",
    "__truediv__", "__floordiv__", "__neg__", "__pow__", "__radd__", "__rmul__", "__rtruediv__", "__rmatmul__"})
# special methods a class may not define: they take over torch's or numpy's dispatch, answer a comparison or a
# truth test whatever the values, reach attribute lookup and class creation, or run at pickling and deletion.
# Any other (`__call__`, `__len__`, `__getitem__`, a Protocol's methods) is an honest helper's.
DENIED_SPECIAL_METHODS = frozenset({
    "__torch_function__", "__torch_dispatch__", "__array_function__", "__array_ufunc__",
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__bool__", "__hash__",
    "__getattribute__", "__getattr__", "__setattr__", "__delattr__", "__get__", "__set__", "__delete__",
    "__set_name__", "__init_subclass__", "__class_getitem__", "__instancecheck__", "__subclasscheck__",
    "__mro_entries__", "__prepare__", "__new__", "__del__", "__reduce__", "__reduce_ex__", "__getstate__",
    "__setstate__", "__copy__", "__deepcopy__"})
# special names a class body may bind: TorchScript's __constants__, __slots__, a docstring, __match_args__
CLASS_DUNDERS = frozenset({"__constants__", "__slots__", "__doc__", "__match_args__"})
# modules whose attributes are switches honest code sets (TF32, cuDNN); the worker resets them before every probe
WRITABLE_MODULES = ("torch.backends",)


def allowed_imports(lang: str) -> str:
    """What graded code may import, every module the table allows, as a student reads it (lang "zh" or "en")."""
    stdlib = sorted(ALLOWED_STDLIB - {"sys"})
    if lang == "zh":
        return (f"只导入 {'、'.join(ALLOWED_PACKAGES)}（公开接口），以及 Python 标准库的 {'、'.join(stdlib)} 和 sys"
                f"（只用 {'、'.join(sorted(ALLOWED_SYS))}）。")
    return (f"import only {', '.join(ALLOWED_PACKAGES)} (their public API) and, of Python's standard library, "
            f"{', '.join(stdlib)} and sys (only {', '.join(sorted(ALLOWED_SYS))}).")


def module_allowed(name: str) -> bool:
    """Whether student code may import or reach the module called `name`."""
    if name in ALLOWED_STDLIB:
        return True
    parts = name.split(".")
    if parts[0] not in ALLOWED_PACKAGES or any(part.startswith("_") for part in parts):
        return False
    return not any(name == denied or name.startswith(denied + ".") for denied in DENIED_MODULES)


def denied_attribute_of_torch(owner: str, name: str) -> str | None:
    """What reading `owner.name` (owner a torch module) reaches, when it is denied; else None."""
    path = f"{owner}.{name}"
    if path in DENIED_TORCH_NAMES:
        return path
    return None
# --- end of the grading rules' allow-list ---
SELFCHECK_MISTAKES["forbidden-import"] = (*SELFCHECK_MISTAKES["forbidden-import"][:2], allowed_imports("zh"),
                                         allowed_imports("en"))  # every module the table allows, as the grader says it

# --- the grading rules read in your code: `make build` copies it here from source/selfcheck/rules.py ---
# The grading rules read in the student's code, the same for every exercise: the table the worker enforces
# (grader/rules/table.py, copied in above by `make build`) applied to the statements a part's graded definition runs.
# `make build` copies this text between the markers of each exercise's selfcheck.py.

_ESCAPES = {"eval": "introspection", "exec": "introspection", "compile": "introspection", "globals": "introspection",
            "locals": "introspection", "vars": "introspection", "breakpoint": "introspection",
            "__import__": "introspection", "__builtins__": "introspection", "open": "tampering", "exit": "tampering",
            "quit": "tampering"}
_TORCH_NAMES = {"torch", "nn", "F"}


def _folded(node):
    """A string made only of constants ("me" + "ta"), else None."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _folded(node.left), _folded(node.right)
        return None if left is None or right is None else left + right
    return None


def _breach(node, device_text=frozenset()):
    """(mistake, what) when this node breaks the grading rules the grader enforces when your code runs
    (`device_text`: the nodes where a string can meet a device's text, from `_device_text`)."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
        denied = [m for m in modules if not module_allowed(m)]
        if denied or getattr(node, "level", 0):
            return "forbidden-import", f"import {denied[0] if denied else '.'}"
        names = [a.name for a in node.names] if isinstance(node, ast.ImportFrom) else []
        if any(FORBIDDEN_API.match(n) for n in names):
            return "forbidden-api", f"from {node.module} import {', '.join(names)}"
        if any(n.startswith("_") for n in names):
            return "private-torch", f"from {node.module} import {', '.join(names)}"
    if isinstance(node, ast.Attribute):
        name, base = node.attr, node.value
        on_self = isinstance(base, ast.Name) and base.id == "self"
        on_torch = isinstance(base, ast.Name) and base.id in _TORCH_NAMES or isinstance(base, ast.Attribute)
        if FORBIDDEN_API.match(name) and not on_self:
            return "forbidden-api", f".{name}"
        if name in STAND_IN_ATTRIBUTES:
            return "device-probing", f".{name}"
        if INTERPRETER_ATTRIBUTE.match(name) or (name.startswith("__") and name.endswith("__")
                                                  and name not in ALLOWED_DUNDERS):
            return "introspection", f".{name}"
        if name.startswith("_") and not name.endswith("__") and not on_self:
            return ("private-torch" if on_torch else "introspection"), f".{name}"
        if isinstance(node.ctx, ast.Store) and isinstance(base, ast.Name) and base.id in _TORCH_NAMES:
            return "tampering", f"{base.id}.{name} ="
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr") \
            and len(node.args) >= 2 and _folded(node.args[1]) is not None:  # getattr(x, "name") reads x.name
        return _breach(ast.Attribute(node.args[0], _folded(node.args[1]), ast.Load()))
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in _ESCAPES:
        return _ESCAPES[node.id], f"{node.id}"
    if isinstance(node, ast.MatchClass) and set(node.kwd_attrs) & STAND_IN_ATTRIBUTES:
        return "device-probing", "case …(is_meta=…)"
    text = _folded(node) if isinstance(node, (ast.Constant, ast.BinOp)) and id(node) in device_text else None
    if text is not None and re.search(r"(?<![a-z])meta(?![a-z])|faketensor", text, re.I):
        return "device-probing", repr(text[:40])
    return None


_DEVICE_CALLS = {"device", "to", "type"}
_TEXT_MATCHING = {"startswith", "endswith", "find", "rfind", "index", "rindex", "count", "split", "rsplit",
                  "partition", "rpartition", "replace", "removeprefix", "removesuffix", "strip", "lstrip", "rstrip",
                  "__contains__", "__eq__", "__ne__", "search", "match", "fullmatch", "findall", "sub",
                  "contains", "eq", "ne"}


def _device_text(statement):
    """The nodes of a statement where a string can meet a device's text (a comparison, `device=`, `.to(...)`,
    text matching): only there does the word "meta" say the code looks for the stand-in (an assert message naming
    Meta's LLaMA does not)."""
    roots = set()
    for node in ast.walk(statement):
        if isinstance(node, ast.Compare):
            roots.update(id(n) for n in [node.left, *node.comparators])
        elif isinstance(node, ast.MatchValue):
            roots.add(id(node.value))
        elif isinstance(node, ast.Call):
            roots.update(id(k.value) for k in node.keywords if k.arg == "device")
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in _DEVICE_CALLS or name in _TEXT_MATCHING:
                roots.update(id(a) for a in [*node.args, *(k.value for k in node.keywords)])
                if isinstance(func, ast.Attribute):
                    roots.add(id(func.value))
    inside, pending = set(), [(statement, False)]
    while pending:
        node, within = pending.pop()
        within = within or id(node) in roots
        if within:
            inside.add(id(node))
        pending.extend((child, within) for child in ast.iter_child_nodes(node))
    return inside


def _graded_code(sources, graded):
    """The statements your graded definition runs: its last definition in the code you ran, the helpers
    it uses (their last definitions), and the imports of what they use; with each statement's lines."""
    definitions, imports, at_load = {}, [], []
    for text in sources:
        text = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in str(text).splitlines())
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for statement in tree.body:
            if isinstance(statement, (ast.FunctionDef, ast.ClassDef)):
                definitions[statement.name] = (statement, text.splitlines())
                # what runs when the code loads (decorators, base classes) counts for both parts
                loaded = statement.decorator_list + getattr(statement, "bases", [])
                at_load += [(ast.Module(body=[ast.Expr(node)], type_ignores=[]), text.splitlines()) for node in loaded]
            elif isinstance(statement, (ast.Import, ast.ImportFrom)):
                imports.append((statement, text.splitlines()))
    if graded not in definitions:
        return []
    reached = {}
    pending = [graded] + [n.id for tree, _ in at_load for n in ast.walk(tree) if isinstance(n, ast.Name)]
    while pending:
        name = pending.pop()
        if name in definitions and name not in reached:
            reached[name] = definitions[name]
            pending += [n.id for n in ast.walk(definitions[name][0]) if isinstance(n, ast.Name)]
    used = {n.id for tree, _ in [*at_load, *reached.values()] for n in ast.walk(tree) if isinstance(n, ast.Name)}
    # an import counts when the graded code uses what it binds (a plotting cell's imports are not graded code)
    imported = [(statement, lines) for statement, lines in imports
                if any((alias.asname or alias.name.split(".")[0]) in used for alias in statement.names)]
    return imported + at_load + list(reached.values())


def check_rules(part, namespace):
    """The grading rules, read in the code of this part's graded definition (the same table the grader holds
    to your code when it runs): the first breach, quoted with its line."""
    sources = namespace.get("__selfcheck_sources__") or namespace.get("In") or []
    for statement, lines in _graded_code(sources, SELFCHECK_GRADED[part][0]):
        device_text = _device_text(statement)
        for node in ast.walk(statement):
            breach = _breach(node, device_text)
            if breach:
                line = lines[node.lineno - 1].strip() if 0 < node.lineno <= len(lines) else ""
                _fail(breach[0], f"`{line[:120]}`：{breach[1]}。", f"`{line[:120]}`: {breach[1]}.")
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
# The self-check's runner and report, the same for every exercise: each exercise's selfcheck.py declares its
# checks (SELFCHECK_CHECKS, SELFCHECK_GRADED, SELFCHECK_TITLE, SELFCHECK_LABEL, SELFCHECK_MISTAKES), how a failure
# is raised (SelfCheckFailure, _fail, _own_error, _error_text, check_rules) and two hooks: before_part(part,
# namespace), run before a part's checks, and one_mistake_explains(results), which names once the mistake that
# broke several checks. `make build` copies this text between the markers of each exercise's selfcheck.py
# (grader/build/inline_selfcheck.py), so each published self-check stands alone.

def run_part(part, namespace):
    """{check name: None if it passed, else the SelfCheckFailure}, every check of the part run once."""
    missing = [name for name in SELFCHECK_GRADED[part] if name not in namespace]
    before_part(part, namespace)
    results = {}
    for name, check in SELFCHECK_CHECKS[part]:
        try:
            if missing:
                _fail("not-implemented", f"找不到 {', '.join(missing)}：定义它的单元格运行了吗？",
                      f"{', '.join(missing)} is not defined: did its cell run?")
            if check is check_rules:
                check_rules(part, namespace)
            else:
                check(*(namespace[n] for n in SELFCHECK_GRADED[part]))
            results[name] = None
        except SelfCheckFailure as failure:
            results[name] = failure
        except Exception as error:  # the student's object lacks what the check reads (no wq, not a module, …)
            said = f"{type(error).__name__}: {_error_text(error)}"
            if _own_error(error):
                results[name] = SelfCheckFailure("selfcheck-error", f"自检程序出错：{said}。",
                                                 f"the self-check's own code failed: {said}.")
            else:
                results[name] = SelfCheckFailure("wrong-return", said, said)
    return one_mistake_explains(results)


_TODO_REFERENCE = re.compile(r"[（(]TODO ([0-9a-z /]+)[）)]")


def _todos_of_part(text, part):
    """A fix's "（TODO 1b / 2e）" cut to the TODOs of the part that failed (dropped when none is this part's)."""
    def keep(found):
        own = [todo for todo in found.group(1).split(" / ") if part is None or todo.startswith(part[-1])]
        opening, closing = ("（", "）") if found.group(0).startswith("（") else (" (", ")")
        return f"{opening}TODO {' / '.join(own)}{closing}" if own else ""

    return re.sub(r" ?" + _TODO_REFERENCE.pattern, keep, text)


def _sentence(text, zh):
    """`text` ended as a sentence, so the fix after it reads as the next one."""
    text = text.rstrip()
    return text if not text or text[-1] in "。.！!？?）)" else text + ("。" if zh else ".")


def explain_failure(failure, explained, part=None):
    """A few lines, Chinese first: what was seen and, for each of its mistakes not yet in `explained` (which
    this adds them to), its title and fix (the TODOs of `part` only). An error `explained` already holds is
    not quoted again: a later check it broke says "the same error" and nothing more."""
    ids = " ".join(f"[{mistake}]" for mistake in failure.mistakes)
    error = ("error", part, failure.error, failure.line)  # one error: one message, one line, one part
    if failure.error and error in explained:
        return f"{ids} 同一个错误（见上）/ the same error (see above)"
    quoted = []
    if failure.error:
        explained.add(error)
        quoted.append(f"  报错 / error: {failure.error}")
        quoted += [f"  出错的代码 / your line: `{failure.line}`"] if failure.line else []
    seen_zh, seen_en = _sentence(failure.seen_zh, True), _sentence(failure.seen_en, False)
    new = [mistake for mistake in failure.mistakes if mistake not in explained]
    explained.update(failure.mistakes)
    if not new:
        seen = f" {seen_zh} / {seen_en}" if seen_zh else ""
        return "\n".join([f"{ids}{seen}（改法同上 / fix: see above）", *quoted])
    several = len(failure.mistakes) > 1
    lines = [f"{ids} {seen_zh} / {seen_en}", *quoted] if several else []
    for mistake in new:
        title_zh, title_en, fix_zh, fix_en = SELFCHECK_MISTAKES[mistake]
        lines.append(f"[{mistake}] {title_zh} · {title_en}")
        if not several:
            lines += quoted
        said_zh, said_en = ("", "") if several else (seen_zh, seen_en + " " if seen_en else "")
        lines.append(f"  {said_zh}改法：{_todos_of_part(fix_zh, part)}\n  {said_en}Fix: {_todos_of_part(fix_en, part)}")
    return "\n".join(lines)


def part_summary(part, results):
    """The whole part's verdict as text: every check, passed or failed, each error and mistake explained once."""
    failed = {name: f for name, f in results.items() if f is not None}
    label = SELFCHECK_TITLE[part]
    if not failed:
        listed = " · ".join(f"{SELFCHECK_LABEL[name]} {name}" for name in results)
        return f"✅ {label}：自检通过 / self-check passed ({len(results)}/{len(results)})：{listed}"
    lines = [f"❌ {label}：{len(results)} 项自检中 {len(failed)} 项未通过 / {len(failed)} of {len(results)} "
             "self-checks failed"]
    explained = set()
    for name, failure in results.items():
        head = f"{SELFCHECK_LABEL[name]} {name}"
        lines.append(f"✓ {head}" if failure is None else f"✗ {head}: " + explain_failure(failure, explained, part))
    return "\n".join(lines)


def selfcheck_notebook(part, namespace):
    """The notebook's self-check cell: print the verdict and never raise, so Run all reaches the later parts.

    A failure goes to stderr: Colab shows it in red, and `nbgrader validate` counts the cell as failed."""
    text = part_summary(part, run_part(part, namespace))
    print(text, file=sys.stderr if text.startswith("❌") else sys.stdout)
# --- end of the self-check's runner and report ---
