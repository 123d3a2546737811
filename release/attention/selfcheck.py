# @title 自检工具（已提供，运行即可）/ Self-check helpers (provided: just run this cell)
# 这个单元格只定义自检用的函数，不需要读懂，也不要修改。/ Defines the self-check functions; no need to read or edit.
import ast
import itertools
import math
import re
import sys
import traceback

import torch
import torch.nn as nn
import torch.nn.functional as F

# For maintainers: the public self-check, one source for both places it runs: the notebook's self-check cells
# (`make build` inlines this file into the provided cell `selfcheck`) and `python -m pytest`
# beside the notebook (`make build` copies it to release/attention/selfcheck.py).
# Only torch: it must run on Colab and on a student's machine without the course's grader.
# The references are PyTorch's own F.scaled_dot_product_attention and nn.MultiheadAttention.

SELFCHECK_MISTAKES = {
    "not-implemented": ("未完成实现", "Not implemented",
                        "把 TODO 处抛出 NotImplementedError 的那一行换成你的代码，并运行定义它的单元格。",
                        "Replace the TODO's NotImplementedError line with your code and run the cell that defines it."),
    "wrong-return": ("返回值不对", "Wrong return value",
                     "返回 (out, weights)：out (..., T, d_v)，weights (..., T, T)；MHA 返回 (B, T, dim)。",
                     "Return (out, weights): out (..., T, d_v), weights (..., T, T); MHA returns (B, T, dim)."),
    "missing-scale": ("没有除以 √d_k", "Missing √d_k scaling",
                      "分数要除以 √d_k；多头注意力里 d_k 就是 head_dim（TODO 1a / 2d）。",
                      "Divide the scores by √d_k; in multi-head attention d_k is head_dim (TODO 1a / 2d)."),
    "wrong-scale": ("缩放因子错误", "Wrong scaling factor",
                    "除以 √d_k，而不是 d_k；MHA 里除以 √head_dim，而不是 √dim（TODO 1a / 2d）。",
                    "Divide by √d_k, not d_k; in MHA by √head_dim, not √dim (TODO 1a / 2d)."),
    "mask-diagonal": ("对角线被遮蔽", "Diagonal masked too",
                      "掩码只遮住对角线上方：triu(..., diagonal=1)（TODO 1b / 2b）。",
                      "Mask strictly above the diagonal: triu(..., diagonal=1) (TODO 1b / 2b)."),
    "mask-direction": ("掩码方向反了", "Mask hides the past",
                       "遮住未来（j > i，对角线上方），不是过去：triu 而不是 tril（TODO 1b / 2b）。",
                       "Mask the future (j > i, above the diagonal), not the past: triu, not tril (TODO 1b / 2b)."),
    "mask-missing": ("没有因果掩码", "Causal mask missing",
                     "is_causal=True 时，在 softmax 之前给对角线上方加 -inf（TODO 1b / 2e）。",
                     "With is_causal=True add -inf above the diagonal before softmax (TODO 1b / 2e)."),
    "mask-multiplied": ("掩码被乘到了分数上", "Mask multiplied into scores",
                        "不要把 0/1 矩阵乘到分数上：softmax 之前用 masked_fill(..., -inf)（TODO 1b / 2e）。",
                        "Do not multiply a 0/1 mask into the scores: masked_fill(..., -inf) before softmax (TODO 1b / 2e)."),
    "mask-after-softmax": ("softmax 后才加掩码", "Mask applied after softmax",
                           "掩码要在 softmax 之前加到分数上，每行权重之和才是 1（TODO 1b / 2e）。",
                           "Apply the mask to the scores before softmax, so each row still sums to 1 (TODO 1b / 2e)."),
    "softmax-dim": ("softmax 维度错误", "Softmax over wrong dimension",
                    "沿最后一维（dim=-1）做 softmax：分数矩阵的每一行（同一个查询对所有键位置）归一化为和 1（TODO 1c / 2f）。",
                    "Softmax over the last dimension, dim=-1: each row of the scores (one query over all key positions) sums to 1 (TODO 1c / 2f)."),
    "head-split": ("拆分／合并多头的顺序错了", "Heads split in wrong order",
                   "先 view(B, T, H, d) 再 transpose(1, 2)；合并时先 transpose(1, 2) 再 view(B, T, C)（TODO 2c / 2g）。",
                   "view(B, T, H, d) then transpose(1, 2); merge with transpose(1, 2) then view(B, T, C) (TODO 2c / 2g)."),
    "missing-out-proj": ("缺少输出投影", "Output projection not applied",
                         "合并多头之后再经过 self.wo（然后 resid_dropout）（TODO 2g）。",
                         "Apply self.wo (then resid_dropout) after merging the heads (TODO 2g)."),
    "dropout-in-eval": ("eval() 模式下 dropout 仍在起作用", "Dropout active in eval mode",
                        "用 nn.Dropout 模块（self.attn_dropout、self.resid_dropout），eval() 时它自动关闭（TODO 2a / 2f）。",
                        "Use the nn.Dropout modules (self.attn_dropout, self.resid_dropout); eval() turns them off (TODO 2a / 2f)."),
    "dropout-hardcoded": ("dropout 概率写死了", "Dropout rate hard-coded",
                          "写 nn.Dropout(args.dropout)（TODO 2a）。", "Write nn.Dropout(args.dropout) (TODO 2a)."),
    "layers-in-forward": ("在 forward 里新建层", "Layers built in forward",
                          "在 __init__ 里创建所有层，forward 里只调用（TODO 2a）。",
                          "Create every layer in __init__; forward only calls them (TODO 2a)."),
    "dropout-lowercase": ("Dropout 大小写错误", "nn.dropout instead of nn.Dropout",
                          "是 nn.Dropout，D 大写（TODO 2a）。", "It is nn.Dropout, capital D (TODO 2a)."),
    "is-causal-typo": ("is_causal 拼写错误", "is_causal misspelled",
                       "保存为 self.is_causal（不是 is_casual），默认 False（TODO 2b）。",
                       "Store the flag as self.is_causal (not is_casual), default False (TODO 2b)."),
    "mask-not-sliced": ("掩码没有切到当前长度", "Mask not sliced to length",
                        "用 self.mask[:, :, :T, :T]（TODO 2e）。", "Use self.mask[:, :, :T, :T] (TODO 2e)."),
    "args-field-name": ("args 字段名错误", "Wrong ModelArgs field name",
                        "用 args.dim、args.n_heads、args.dropout、args.max_seq_len；Happy-LLM 笔记里的 n_embd 在这里是 "
                        "dim，n_head 是 n_heads（TODO 2a / 2b）。",
                        "Use args.dim, args.n_heads, args.dropout, args.max_seq_len; the Happy-LLM notes' n_embd is dim "
                        "here, n_head is n_heads (TODO 2a / 2b)."),
    "bare-matmul": ("matmul 前缺少 torch. 前缀", "matmul without the torch. prefix",
                    "写 torch.matmul(...) 或 @，不要写没有 torch. 前缀的 matmul(...)。",
                    "Write torch.matmul(...) or @, not a bare matmul(...)."),
    "misspelled-tensor": ("Tensor 拼写错误", "Misspelled torch.Tensor",
                          "类型注解写 torch.Tensor（TODO 2c）。", "Annotate with torch.Tensor (TODO 2c)."),
    "missing-contiguous": ("缺少 contiguous()", "Missing .contiguous() before view",
                           "transpose(1, 2) 之后先 .contiguous() 再 .view(B, T, C)，或用 .reshape（TODO 2g）。",
                           "After transpose(1, 2) call .contiguous() before .view(B, T, C), or use .reshape (TODO 2g)."),
    "is-causal-ignored": ("is_causal=False 时也加了掩码", "Mask applied even when is_causal=False",
                          "只在 is_causal 为 True 时加掩码：写 if is_causal:，模块里写 if self.is_causal:（TODO 1b / 2e）。",
                          "Mask only when is_causal is True: if is_causal:, in the module if self.is_causal: (TODO 1b / 2e)."),
    "float-head-dim": ("head_dim 用了 / 而不是 //", "A size computed with float division",
                       "用整除：self.head_dim = args.dim // args.n_heads（TODO 2a）。",
                       "Use integer division: self.head_dim = args.dim // args.n_heads (TODO 2a)."),
    "missing-super-init": ("没有调用 super().__init__()", "super().__init__() not called",
                           "把 super().__init__() 写成 __init__ 的第一行。", "Make super().__init__() the first line of __init__."),
    "mask-not-bool": ("掩码不是布尔类型", "Mask is not boolean",
                      "建掩码时写 dtype=torch.bool，或传入 mask.bool()（tril 的“保留”掩码写 mask == 0）。",
                      "Build the mask with dtype=torch.bool, or pass mask.bool() (for a tril keep-mask, mask == 0)."),
    "sqrt-of-int": ("对 Python 整数调用 torch.sqrt", "torch.sqrt on a Python int",
                    "对数字用 math.sqrt(d_k) 或 d_k ** 0.5（TODO 1a / 2d）。",
                    "Use math.sqrt(d_k) or d_k ** 0.5 on a number (TODO 1a / 2d)."),
    "syntax-error": ("语法错误", "Syntax error", "先修好这一行的语法。", "Fix the syntax of this line first."),
    "forbidden-api": ("调用了现成实现", "Built-in attention used",
                      "自己写出 softmax(Q Kᵀ / √d_k) V：用 @ 或 torch.matmul、masked_fill 和 softmax。",
                      "Compute softmax(Q Kᵀ / √d_k) V yourself with @ or torch.matmul, masked_fill and softmax."),
    "forbidden-import": ("导入了不允许的模块", "Module not allowed in graded code", None, None),  # fixes: the table's
    "introspection": ("用了 eval／globals 等动态查找", "Dynamic lookups or interpreter internals",
                      "直接写出属性和运算（self.wq、Q.size(-1)、torch.softmax），不要用 eval、globals 或特殊属性。",
                      "Name attributes and ops directly (self.wq, Q.size(-1), torch.softmax); no eval, globals or "
                      "special attributes."),
    "private-torch": ("使用了 torch 的私有或底层接口", "Private or low-level torch API",
                      "只用公开的张量运算：@ / torch.matmul、torch.softmax、masked_fill、torch.tril。",
                      "Use the public tensor ops: @ / torch.matmul, torch.softmax, masked_fill, torch.tril."),
    "device-probing": ("针对评分设备写了特殊分支", "Code that behaves differently while graded",
                       "在输入所在的设备上创建张量：torch.ones(T, T, device=Q.device)，或把掩码注册成 buffer。",
                       "Create tensors on the input's device: torch.ones(T, T, device=Q.device), or register the mask "
                       "as a buffer."),
    "tampering": ("篡改评分环境", "Tampering with grading",
                  "不要修改 torch 或其他模块、类；自己的状态放在 self 上。",
                  "Leave torch and other modules and classes as they are; keep your own state on self."),
    "mask-fill-finite": ("掩码填充值不够负（未来权重不是精确的 0）", "Mask fill not negative enough to hide the future",
                         "用 float('-inf') 填充未来位置（TODO 1b / 2b）。",
                         "Fill the future with float('-inf') (TODO 1b / 2b)."),
    "hardcoded-dims": ("维度写死成了某一种输入维数", "Dims hard-coded for one input rank",
                       "从后往前数维度：K.transpose(-2, -1)、softmax(dim=-1)、Q.size(-1)；掩码只建成 (T, T)（TODO 1a / 1b）。",
                       "Count dims from the back: K.transpose(-2, -1), softmax(dim=-1), Q.size(-1); build the mask as (T, T) "
                       "(TODO 1a / 1b)."),
    "hardcoded-device": ("设备写死", "Hard-coded device",
                         "不要写死 \"cuda\" / .cuda() / \"cpu\"：用输入所在的设备，device=Q.device（TODO 1b）。",
                         "Do not hard-code \"cuda\" / .cuda() / \"cpu\": use the input's device, device=Q.device (TODO 1b)."),
    "wrong-input": ("Q、K、V 用错了位置", "Wrong input read",
                    "分数是 Q·Kᵀ，输出是 weights @ V：每个输入都读它自己的（TODO 1a / 1c）。",
                    "Scores are Q·Kᵀ and the output is weights @ V: each input read in its own place (TODO 1a / 1c)."),
    "mask-nan": ("掩码乘以无穷大，得到 NaN", "Mask multiplied by infinity: NaN",
                 "不要用乘法：scores.masked_fill(future, float('-inf'))；0 × (−∞) 是 NaN，不是 0（TODO 1b / 2e）。",
                 "Do not multiply: scores.masked_fill(future, float('-inf')); 0 × (−∞) is NaN, not 0 (TODO 1b / 2e)."),
    "value-mismatch": ("结果与参考实现不一致", "Result differs from PyTorch's reference",
                       "逐步对照公式检查：打分与缩放、掩码、softmax 的维度、拆分／合并多头、wo。",
                       "Check each step against the formula: scores and scale, mask, softmax dim, head split/merge, wo."),
    "raised": ("运行时出错", "Your code raised an error",
               "按报错改正上面引用的那一行。若是 NameError，多半是名字拼错或还没赋值：Part 1 的结果要存进 `out` 和 "
               "`weights`，Part 2 的结果存进 `y`（模板最后一行的 return 用的就是这些名字）。",
               "Correct the quoted line. A NameError is usually a misspelt or unassigned name: Part 1 stores its results "
               "in `out` and `weights`, Part 2 in `y` (the names the template's last line returns)."),
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

_ERROR_MISTAKES = (  # (exception type, text in its message, mistake[, "module": in a module only]); the first
    # that matches names it
    ("NotImplementedError", "", "not-implemented"),
    ("NameError", "'matmul'", "bare-matmul"),
    ("AttributeError", "'dropout'", "dropout-lowercase"),
    ("AttributeError", "Tenser", "misspelled-tensor"),
    ("AttributeError", "is_causal", "is-causal-typo"),
    ("AttributeError", "'ModelArgs' object", "args-field-name"),
    ("TypeError", "ModelArgs", "args-field-name"),
    ("RuntimeError", "view size is not compatible", "missing-contiguous"),
    ("RuntimeError", "must match the size", "mask-not-sliced", "module"),  # Part 1 has no max_seq_len mask
    ("AssertionError", "not compiled with CUDA", "hardcoded-device"),
    ("RuntimeError", "NVIDIA driver", "hardcoded-device"),
    ("RuntimeError", "only supports boolean masks", "mask-not-bool"),
    ("RuntimeError", "expected condition to be a boolean tensor", "mask-not-bool"),
    ("TypeError", "must be Tensor, not int", "sqrt-of-int"),
    ("TypeError", "found element of type float", "float-head-dim"),
    ("TypeError", "'float' object cannot be interpreted as an integer", "float-head-dim"),
    ("TypeError", "tuple of ints,but got float", "float-head-dim"),  # view(B, T, H, d) with a float d
    ("TypeError", "tuple of ints, but got float", "float-head-dim"),
    ("AttributeError", "before Module.__init__() call", "missing-super-init"),
)


_MASK_TEXT = set()
"""What the text of the part being checked shows about its mask (_mask_text), set by run_part: `mask-nan` for a
product with an infinity, `mask-missing` for a fill of about 0 (-1e-9 for -1e9). The numbers of the second are a
0/1 mask multiplied in, and the NaN of the first match any variant that is NaN too: only the text tells them."""


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


# ---- Part 1 · scaled_dot_product_attention ------------------------------------------------------

def _sdpa_inputs():
    generator = torch.Generator().manual_seed(0)
    return tuple(torch.randn(2, 3, 5, d, generator=generator) for d in (8, 8, 4))


def _sdpa_inputs_it_accepts(sdpa):
    """(B, H, T, d) inputs, or the first lower rank the code runs on: code written for one rank (the shapes
    check names that) is checked at its own rank too, so a bug behind it (no mask, softmax over the
    queries) is named as well."""
    Q, K, V = _sdpa_inputs()
    for index in ((), 0, (0, 0)):
        try:
            _sdpa_result(sdpa, Q[index], K[index], V[index], True)
        except SelfCheckFailure:
            continue
        return Q[index], K[index], V[index]
    return Q, K, V


def _sdpa_result(sdpa, Q, K, V, is_causal):
    result = _call(sdpa, Q, K, V, is_causal)
    if not (isinstance(result, tuple) and len(result) == 2 and all(isinstance(t, torch.Tensor) for t in result)):
        _fail("wrong-return", "返回值不是二元组 (out, weights)。", "it did not return the tuple (out, weights).")
    out, weights = result
    T, d_v = Q.size(-2), V.size(-1)
    if weights.shape == (*Q.shape[:-2], T, T) and any(_close(out.detach(), weights.detach() @ X) for X in (Q, K)):
        _fail("wrong-input", "out 是 weights 乘 Q 或 K，不是乘 V。", "out is weights times Q or K, not times V.")
    if out.shape != (*Q.shape[:-2], T, d_v) or weights.shape != (*Q.shape[:-2], T, T):
        _fail("wrong-return", f"形状 out {tuple(out.shape)}、weights {tuple(weights.shape)}。",
              f"shapes out {tuple(out.shape)}, weights {tuple(weights.shape)}.")
    return out.detach(), weights.detach()


def _name_sdpa_values(Q, K, V, out, weights, is_causal):
    """Which classic mistake produced these numbers, tried against PyTorch computed that wrong way."""
    d_k = Q.size(-1)
    wrong_ways = [("missing-scale", dict(scale=1.0)), ("wrong-scale", dict(scale=1.0 / d_k))]
    wrong_ways.append(("mask-missing", dict(is_causal=False)) if is_causal else ("is-causal-ignored", dict(is_causal=True)))
    for mistake, how in wrong_ways:
        options = {"is_causal": is_causal, **how}
        if _close(out, F.scaled_dot_product_attention(Q, K, V, **options)):
            return mistake
    scale = _fitted_scale(Q, K, weights)
    if scale and _close(out, F.scaled_dot_product_attention(Q, K, V, is_causal=is_causal, scale=scale)):
        return "wrong-scale"  # another factor than 1/√d_k, 1 or 1/d_k: √T, 2·d_k, …
    for reads in ((Q, Q, V), (K, K, V), (Q, K, K), (Q, K, Q)):  # one letter slipped: Q @ Q.mT, weights @ K, …
        if _close(out, F.scaled_dot_product_attention(*reads, is_causal=is_causal)):
            return "wrong-input"
    T = Q.size(-2)
    if is_causal and torch.isneginf(weights[..., torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)]).all():
        return "mask-after-softmax"  # -inf written into the weights after softmax
    if "mask-nan" in _MASK_TEXT and not (torch.isfinite(weights).all() and torch.isfinite(out).all()):
        return "mask-nan"
    if is_causal and (not torch.isfinite(weights).all() or (weights.diagonal(dim1=-2, dim2=-1)[..., 1:] == 0).all()):
        return _diagonal_and_scale(Q, K, V, out) or "mask-diagonal"
    past = torch.ones(T, T, dtype=torch.bool).tril(diagonal=-1)
    if is_causal and _close(out, F.scaled_dot_product_attention(Q, K, V, attn_mask=~past)):
        return "mask-direction"
    if not torch.allclose(weights.sum(-1), torch.ones(()), atol=1e-4):
        return "softmax-dim" if torch.allclose(weights.sum(-2), torch.ones(()), atol=1e-4) else "mask-after-softmax"
    future = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)
    if is_causal and 0 < weights[..., future].max() < 1e-6 and _close(out, F.scaled_dot_product_attention(Q, K, V, is_causal=True)):
        return "mask-fill-finite"  # a finite fill (-1e4, say): the future's weights tiny, not 0
    if is_causal and not (weights.triu(diagonal=1) == 0).all():
        return _told_by_text("mask-multiplied")
    return "value-mismatch"


def _told_by_text(mistake):
    """The mistake the numbers suggest, corrected where the text says which of two look-alikes it is."""
    return "mask-missing" if mistake == "mask-multiplied" and "mask-missing" in _MASK_TEXT else mistake


def _diagonal_and_scale(Q, K, V, out):
    """The diagonal masked too, and the scale behind it, from the rows after the first (row 0 of such a mask sees
    nothing: NaN, or whatever a band-aid put there): the mistakes, or None."""
    d_k, T = Q.size(-1), Q.size(-2)
    sees = ~torch.ones(T, T, dtype=torch.bool).triu(diagonal=0)
    for scale, extra in ((None, ()), (1.0, ("missing-scale",)), (1.0 / d_k, ("wrong-scale",))):
        wrong = F.scaled_dot_product_attention(Q, K, V, attn_mask=sees, scale=scale)
        if _close(out[..., 1:, :], wrong[..., 1:, :]):
            return ("mask-diagonal", *extra)
    return None


def _fitted_scale(Q, K, weights):
    """The factor s with weights = softmax(s · QKᵀ) on the positions each row sees, by least squares; None
    where the weights cannot say. In a row, log w_ij − log w_i0 = s (S_ij − S_i0), and every row sees key 0."""
    seen = weights > 0
    if not torch.isfinite(weights).all() or not seen[..., :1].all():
        return None
    logits, log_w = Q @ K.transpose(-2, -1), weights.clamp_min(1e-30).log()
    a, b = (log_w - log_w[..., :1])[seen], (logits - logits[..., :1])[seen]
    return float((a * b).sum() / (b * b).sum()) if (b * b).sum() > 0 else None


def check_sdpa_shapes(sdpa):
    """Every promised rank: right for some and wrong for another is code written for one rank."""
    Q, K, V = _sdpa_inputs()
    ranks = {"(B, H, T, d)": (Q, K, V), "(B, T, d)": (Q[0], K[0], V[0]), "(T, d)": (Q[0, 0], K[0, 0], V[0, 0])}
    failures = {}
    for label, (q, k, v) in ranks.items():
        try:
            _sdpa_result(sdpa, q, k, v, True)
        except SelfCheckFailure as failure:
            failures[label] = failure
    if not failures:
        return
    label, failure = next(iter(failures.items()))
    works = [rank for rank in ranks if rank not in failures]
    if not works:
        raise failure
    _fail("hardcoded-dims", f"输入 {'、'.join(works)} 可以，输入 {label} 时{failure.seen_zh or '代码报错'}",
          f"inputs {', '.join(works)} work, but with {label} {failure.seen_en or 'the code raises'}", failure.error,
          failure.line)


def _right_rank(sdpa, Q, K, V, is_causal, is_right):
    """The input rank, (B, T, d) or (T, d), at which the code passes the failed check (`is_right(Q, K, V, out,
    weights)`), if any: wrong at (B, H, T, d) only is code written for one rank (softmax(dim=1), say)."""
    if Q.dim() != 4:
        return None
    for label, index in (("(B, T, d)", 0), ("(T, d)", (0, 0))):
        try:
            out, weights = _sdpa_result(sdpa, Q[index], K[index], V[index], is_causal)
        except SelfCheckFailure:
            continue
        if is_right(Q[index], K[index], V[index], out, weights):
            return label
    return None


def _fail_values(sdpa, Q, K, V, out, weights, is_causal, is_right, seen_zh, seen_en):
    """Wrong numbers for (B, H, T, d) inputs: named by the rank that is right, else by the way they are wrong."""
    if Q.dim() != 4:  # checked at the rank the code runs on (_sdpa_inputs_it_accepts)
        label = "(B, T, d)" if Q.dim() == 3 else "(T, d)"
        seen_zh, seen_en = f"输入 {label}（你的代码能运行的维数）时{seen_zh}", f"with {label} inputs (the rank your code runs on), {seen_en}"
    rank = _right_rank(sdpa, Q, K, V, is_causal, is_right)
    if rank:
        _fail("hardcoded-dims", f"输入 (B, H, T, d) 时{seen_zh}（输入 {rank} 时却是对的）",
              f"with (B, H, T, d) inputs {seen_en} (yet right with {rank} inputs)")
    _fail(_name_sdpa_values(Q, K, V, out, weights, is_causal), seen_zh, seen_en)


def _future_is_zero(Q, K, V, out, weights):
    return bool((weights.triu(diagonal=1) == 0).all() and (weights[..., 0, 0] == 1).all())


def check_sdpa_causal_mask(sdpa):
    Q, K, V = _sdpa_inputs_it_accepts(sdpa)
    out, weights = _sdpa_result(sdpa, Q, K, V, True)
    if torch.isfinite(weights).all() and not (weights.triu(diagonal=1) == 0).all():
        leak = weights.triu(diagonal=1).abs().max().item()
        _fail_values(sdpa, Q, K, V, out, weights, True, _future_is_zero,
                     f"对角线上方的权重不是精确的 0.0（最大 {leak:.2g}）。",
                     f"weights above the diagonal are not exactly 0.0 (max {leak:.2g}).")
    if not (weights[..., 0, 0] == 1).all():
        _fail_values(sdpa, Q, K, V, out, weights, True, _future_is_zero, "位置 0 只能看见自己，它的权重应为 1。",
                     "position 0 sees only itself, so its weight must be 1.")


def check_sdpa_values(sdpa):
    Q, K, V = _sdpa_inputs_it_accepts(sdpa)
    for is_causal in (True, False):
        out, weights = _sdpa_result(sdpa, Q, K, V, is_causal)
        if not _close(out, F.scaled_dot_product_attention(Q, K, V, is_causal=is_causal)):
            def is_right(q, k, v, out, weights, is_causal=is_causal):
                return _close(out, F.scaled_dot_product_attention(q, k, v, is_causal=is_causal))
            _fail_values(sdpa, Q, K, V, out, weights, is_causal, is_right,
                         f"is_causal={is_causal} 时 out 与 F.scaled_dot_product_attention 不一致。",
                         f"with is_causal={is_causal}, out differs from F.scaled_dot_product_attention.")
    out, _ = _sdpa_result(sdpa, Q * 100, K, V, True)
    if not torch.isfinite(out).all():
        _fail("value-mismatch", "分数很大时输出 NaN/inf：用 F.softmax。", "large scores gave NaN/inf: use F.softmax.")


# ---- Part 2 · MultiHeadAttention ----------------------------------------------------------------

def _mha(MultiHeadAttention, ModelArgs, dropout=0.0, is_causal=True, n_heads=3):
    torch.manual_seed(0)
    args = ModelArgs(dim=12, n_heads=n_heads, dropout=dropout, max_seq_len=16)  # dim not a power of two, H != T
    return _call_module(MultiHeadAttention, args, is_causal)


def _reference(mha, scale_q=1.0, out_proj=True, n_heads=3):
    """nn.MultiheadAttention holding mha's weights; scale_q rescales the scores, out_proj=False leaves wo out."""
    reference = nn.MultiheadAttention(12, n_heads, bias=False, batch_first=True)
    with torch.no_grad():
        reference.in_proj_weight.copy_(torch.cat([mha.wq.weight * scale_q, mha.wk.weight, mha.wv.weight]))
        reference.out_proj.weight.copy_(mha.wo.weight if out_proj else torch.eye(12))
    return reference


def _forward(mha, x):
    y = _call_module(mha, x, x, x)
    if not isinstance(y, torch.Tensor) or y.shape != x.shape:
        shape = tuple(y.shape) if isinstance(y, torch.Tensor) else type(y).__name__
        _fail("wrong-return", f"输出应为 (B, T, dim) = {tuple(x.shape)}，实际 {shape}。",
              f"the output must be (B, T, dim) = {tuple(x.shape)}, got {shape}.")
    return y.detach()


def _x(T=5):
    return torch.randn(2, T, 12, generator=torch.Generator().manual_seed(1))


def check_mha_interface(MultiHeadAttention, ModelArgs):
    mha = _mha(MultiHeadAttention, ModelArgs)
    for name in ("wq", "wk", "wv", "wo"):
        layer = getattr(mha, name, None)
        if not (isinstance(layer, nn.Linear) and layer.bias is None):
            _fail("wrong-return", f"self.{name} 应是 nn.Linear(..., bias=False)。", f"self.{name} must be nn.Linear(..., bias=False).")
    for name in ("attn_dropout", "resid_dropout"):
        if not isinstance(getattr(mha, name, None), nn.Dropout):
            _fail("dropout-lowercase", f"self.{name} 应是 nn.Dropout。", f"self.{name} must be an nn.Dropout.")
        if getattr(mha, name).p != 0.0:  # built with args.dropout = 0
            _fail("dropout-hardcoded", f"args.dropout=0 时 self.{name}.p 却是 {getattr(mha, name).p}。",
                  f"with args.dropout = 0, self.{name}.p is {getattr(mha, name).p}.")
    if getattr(mha, "is_causal", None) is not True or getattr(_mha(MultiHeadAttention, ModelArgs, is_causal=False),
                                                             "is_causal", None) is not False:
        _fail("is-causal-typo", "self.is_causal 没有保存构造参数。", "self.is_causal does not hold the constructor's flag.")


def _diagonal_masked(y):
    """Position 0 NaN and every later one finite: row 0 of the scores was all -inf, the diagonal masked too."""
    return bool(torch.isnan(y[:, 0]).all() and torch.isfinite(y[:, 1:]).all())


def _module_variant(mha, x, variants, is_causal, n_heads=3):
    """mha's forward by hand from its weights, with one classic wrong way (a name) or several at once (a
    frozenset, one per step of _MODULE_STEPS); None when the module lacks what this reads."""
    variants = frozenset([variants]) if isinstance(variants, str) else variants
    B, T, C = x.shape
    d = C // n_heads
    try:
        def split(name):
            y = x @ getattr(mha, name).weight.T  # (B, T, C)
            if variants & {"head-split", "head-split-in"}:  # viewed straight to (B, H, T, d): positions and heads mix
                return y.reshape(B, n_heads, T, d)
            return y.view(B, T, n_heads, d).transpose(1, 2)  # (B, H, T, d)

        q, k, v = split("wq"), split("wk"), split("wv")
        scale = 1.0 if "missing-scale" in variants else math.sqrt(C) if "wrong-scale" in variants else math.sqrt(d)
        att = q @ k.transpose(-2, -1) / scale  # (B, H, T, T)
        future = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)
        after_softmax = {"mask-after-softmax", "mask-after-softmax-inf"} & variants
        if "mask-direction" in variants:
            att = att.masked_fill(future.T, float("-inf"))
        elif "mask-multiplied" in variants:
            att = att * ~future
        elif is_causal and not after_softmax and "mask-missing" not in variants:
            att = att.masked_fill(future, float("-inf"))
        weights = F.softmax(att, dim=-2 if "softmax-dim" in variants else 1 if "softmax-dim-heads" in variants else -1)
        if after_softmax:
            weights = weights.masked_fill(future, float("-inf") if "mask-after-softmax-inf" in variants else 0.0)
        y = weights @ (k if "wrong-input" in variants else v)  # (B, H, T, d)
        if variants & {"head-split", "head-split-out"}:  # merged without transposing back
            y = y.reshape(B, T, C)
        else:
            y = y.transpose(1, 2).reshape(B, T, C)  # (B, T, C)
        return y if "missing-out-proj" in variants else y @ mha.wo.weight.T
    except Exception:  # the student's module lacks what this reads: no variant to name
        return None


_MODULE_STEPS = {"scale": ("missing-scale", "wrong-scale"),
                 "mask": ("mask-missing", "mask-direction", "mask-multiplied", "mask-after-softmax",
                          "mask-after-softmax-inf"),
                 "softmax": ("softmax-dim", "softmax-dim-heads"),
                 "split": ("head-split", "head-split-in", "head-split-out"),
                 "input": ("wrong-input",),
                 "output": ("missing-out-proj",)}
"""The module's steps and the wrong ways of each: a module with several bugs has at most one per step."""
_MISTAKE_OF_VARIANT = {"mask-after-softmax-inf": "mask-after-softmax", "softmax-dim-heads": "softmax-dim",
                       "head-split-in": "head-split", "head-split-out": "head-split"}
_MODULE_VARIANTS = tuple((_MISTAKE_OF_VARIANT.get(variant, variant), variant) for step in ("mask", "softmax", "input")
                         for variant in _MODULE_STEPS[step] if variant != "mask-missing")
"""(mistake, variant of _module_variant): the module's mask and softmax mistakes, named one at a time from its
numbers (a missing mask is nn.MultiheadAttention's answer without one, in _name_mha_values), and the weights
multiplying the keys instead of the values."""


def _several_bugs(mha, x, y, is_causal):
    """The mistakes of the first pair or triple of wrong ways (each in another step) that reproduces y, or None."""
    steps = [step for name, step in _MODULE_STEPS.items() if is_causal or name != "mask"]
    for size in (2, 3):
        for chosen_steps in itertools.combinations(steps, size):
            for variants in itertools.product(*chosen_steps):
                if _close_or_none(y, _module_variant(mha, x, frozenset(variants), is_causal)):
                    return tuple(dict.fromkeys(_MISTAKE_OF_VARIANT.get(v, v) for v in variants))
    return None


def _name_mha_values(MultiHeadAttention, ModelArgs, mha, x, y, is_causal):
    """Which classic mistake produced the module's output y, tried against references computed that wrong way."""
    if "mask-nan" in _MASK_TEXT and not torch.isfinite(y).all():
        return "mask-nan"
    mask = torch.ones(x.size(1), x.size(1), dtype=torch.bool).triu(diagonal=1) if is_causal else None
    head_dim = 12 // 3
    wrong_ways = (("missing-scale", dict(scale_q=math.sqrt(head_dim))),
                  ("wrong-scale", dict(scale_q=math.sqrt(head_dim / 12))),
                  ("missing-out-proj", dict(out_proj=False)))
    for mistake, how in wrong_ways:
        if _close(y, _reference(mha, **how)(x, x, x, attn_mask=mask, need_weights=False)[0].detach()):
            return mistake
    # the other flag's answer: no mask where one belongs, or one where none does
    other_mask = None if is_causal else torch.ones(x.size(1), x.size(1), dtype=torch.bool).triu(diagonal=1)
    if _close(y, _reference(mha)(x, x, x, attn_mask=other_mask, need_weights=False)[0].detach()):
        return "mask-missing" if is_causal else "is-causal-ignored"
    for mistake, variant in _MODULE_VARIANTS:
        if (is_causal or not mistake.startswith("mask")) and _close_or_none(y, _module_variant(mha, x, variant, is_causal)):
            return _told_by_text(mistake)
    # with one head the split order cannot matter: right there, wrong here is the split
    one = _mha(MultiHeadAttention, ModelArgs, is_causal=is_causal, n_heads=1).eval()
    if _close(_forward(one, x), _reference(one, n_heads=1)(x, x, x, attn_mask=mask, need_weights=False)[0].detach()):
        return "head-split"
    return tuple(map(_told_by_text, _several_bugs(mha, x, y, is_causal) or ())) or "value-mismatch"


def _close_or_none(a, b):
    """A wrong way's output equal to the student's, NaN and inf where theirs are (a mask after softmax gives them)."""
    return b is not None and a.shape == b.shape and torch.allclose(a, b.detach(), atol=1e-5, rtol=1e-4, equal_nan=True)


def check_mha_values(MultiHeadAttention, ModelArgs):
    x = _x()
    for is_causal in (True, False):
        mha = _mha(MultiHeadAttention, ModelArgs, is_causal=is_causal).eval()
        _random_in_eval(MultiHeadAttention, ModelArgs, mha, x)  # random numbers compare with nothing
        y = _forward(mha, x)
        if is_causal and _diagonal_masked(y):
            _fail("mask-diagonal", "is_causal=True 时位置 0 的输出是 NaN：它连自己也看不见。",
                  "with is_causal=True the output at position 0 is NaN: it cannot see even itself.")
        mask = torch.ones(5, 5, dtype=torch.bool).triu(diagonal=1) if is_causal else None
        if not _close(y, _reference(mha)(x, x, x, attn_mask=mask, need_weights=False)[0].detach()):
            _fail(_name_mha_values(MultiHeadAttention, ModelArgs, mha, x, y, is_causal),
                  f"is_causal={is_causal} 时输出与 nn.MultiheadAttention（同样的权重）不一致。",
                  f"with is_causal={is_causal} the output differs from nn.MultiheadAttention with the same weights.")


def check_mha_causal(MultiHeadAttention, ModelArgs):
    mha = _mha(MultiHeadAttention, ModelArgs).eval()
    x = _x()
    future = x.clone()
    future[:, -1] += 10.0  # change only the last position
    _random_in_eval(MultiHeadAttention, ModelArgs, mha, x)  # a random output would look like a leak
    y = _forward(mha, x)
    if not torch.isfinite(y).all():  # NaN is not a leak: nothing can be compared
        _fail("mask-diagonal" if _diagonal_masked(y) else _name_mha_values(MultiHeadAttention, ModelArgs, mha, x, y, True),
              "因果模块的输出含 NaN，无法检验未来是否影响过去。",
              "the causal module's output contains NaN, so whether the future reaches the past cannot be measured.")
    if not torch.allclose(y[:, :-1], _forward(mha, future)[:, :-1], atol=1e-6):
        _fail(_name_mha_values(MultiHeadAttention, ModelArgs, mha, x, y, True),
              "改动最后一个位置改变了前面位置的输出：未来泄漏到了过去。",
              "changing the last position changed earlier outputs: the future leaks into the past.")
    for T in (1, 16):
        _forward(mha, _x(T))


def _dropout_rate_in_eval(MultiHeadAttention, ModelArgs):
    """The rate p of a dropout that drops in eval() at dropout 0, told by its pattern, else None. With wq = wk = 0
    every visible key weighs the same, and with wv = wo = I and inputs of ones every output is 1: a dropout leaves
    each value at 0 or at 1/(1-p) (position 0, which sees only itself, shows it whichever tensor drops), where
    layers with fresh random weights leave values of every size."""
    mha = _mha(MultiHeadAttention, ModelArgs).eval()
    try:
        with torch.no_grad():
            for name in ("wq", "wk", "wv", "wo"):
                getattr(mha, name).weight.copy_(torch.eye(12) if name in ("wv", "wo") else torch.zeros(12, 12))
    except (AttributeError, RuntimeError, TypeError):  # no such layers to set: nothing to tell the pattern by
        return None
    first = torch.cat([_forward(mha, torch.ones(2, 4, 12))[:, 0].flatten() for _ in range(2)])
    kept = first[first.abs() > 1e-6]
    if not torch.isfinite(first).all() or kept.numel() == 0 or float(kept[0]) <= 1 + 1e-4:
        return None
    return 1 - 1 / float(kept[0]) if torch.allclose(kept, kept[:1].expand_as(kept), rtol=1e-5, atol=0) else None


def _random_in_eval(MultiHeadAttention, ModelArgs, mha, x):
    """Fails when two eval() passes at dropout 0 differ, naming the randomness: dropout's, or fresh layers'."""
    if torch.equal(_forward(mha, x).nan_to_num(), _forward(mha, x).nan_to_num()):
        return
    rate = _dropout_rate_in_eval(MultiHeadAttention, ModelArgs)
    if rate is not None:
        _fail("dropout-in-eval", f"dropout=0 的 eval() 模式下输出仍然随机，而且是 dropout 的样子：部分值为 0，其余放大为 "
              f"1/(1-p) 倍（p ≈ {rate:.2f}）。有一处 dropout 写死了概率或 training=True，评估时也在丢弃。",
              f"with dropout 0 in eval() the output is still random, in dropout's pattern: some values 0, the rest "
              f"scaled by 1/(1-p) (p ≈ {rate:.2f}). A dropout with a hard-coded rate or training=True drops in eval() too.")
    _fail("layers-in-forward", "dropout=0 的 eval() 模式下两次前向结果不同。", "two eval() passes differ at dropout 0.")


def check_mha_dropout(MultiHeadAttention, ModelArgs):
    x, plain = _x(), _mha(MultiHeadAttention, ModelArgs).eval()
    _random_in_eval(MultiHeadAttention, ModelArgs, plain, x)  # random without dropout
    mha = _mha(MultiHeadAttention, ModelArgs, dropout=0.5).eval()
    if not torch.equal(_forward(mha, x).nan_to_num(), _forward(mha, x).nan_to_num()):
        _fail("dropout-in-eval", "eval() 模式下两次前向结果不同。", "two forward passes in eval() differ.")


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


def _is_infinity(node):
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _is_infinity(node.operand)
    if isinstance(node, ast.Attribute):
        return node.attr.lower() in ("inf", "infinity")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "float" and node.args:
        text = node.args[0]
        return isinstance(text, ast.Constant) and isinstance(text.value, str) \
            and text.value.strip().lstrip("+-").lower() in ("inf", "infinity")
    return isinstance(node, ast.Constant) and isinstance(node.value, float) and abs(node.value) == float("inf")


def _near_zero(node):
    """A nonzero numeric literal of magnitude below 1e-3 (-1e-9, a typo for -1e9)."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float) and 0 < abs(node.value) < 1e-3


def _mask_text(part, namespace):
    """_MASK_TEXT for this part: what its graded code's text shows about the mask (the grader reads it the same way)."""
    sources = namespace.get("__selfcheck_sources__") or namespace.get("In") or []
    found = set()
    for statement, _ in _graded_code(sources, SELFCHECK_GRADED[part][0]):
        for node in ast.walk(statement):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult) \
                    and (_is_infinity(node.left) or _is_infinity(node.right)):
                found.add("mask-nan")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in ("masked_fill", "masked_fill_", "where", "fill_"):
                values = list(node.args[1:]) + [k.value for k in node.keywords if k.arg in ("value", "input", "other")]
                if any(_near_zero(value) for value in values):
                    found.add("mask-missing")
    return found


SELFCHECK_CHECKS = {
    "part1": (("shapes", check_sdpa_shapes), ("causal_mask", check_sdpa_causal_mask), ("values", check_sdpa_values),
              ("rules", check_rules)),
    "part2": (("interface", check_mha_interface), ("values", check_mha_values), ("causal", check_mha_causal),
              ("dropout_eval", check_mha_dropout), ("rules", check_rules)),
}
"""part -> (check name, function); a part's functions take the graded names of that part (`check_rules`
takes the part and the namespace: it reads the code you ran, `In` in a notebook)."""
SELFCHECK_GRADED = {"part1": ("scaled_dot_product_attention",), "part2": ("MultiHeadAttention", "ModelArgs")}
SELFCHECK_TITLE = {"part1": "Part 1 · scaled_dot_product_attention", "part2": "Part 2 · MultiHeadAttention"}
"""part (its pytest marker) -> its title. This folder stands alone (no grader import), so the parts are
declared here again; tests/student/test_public_selfcheck.py holds them equal to grader.exercises.attention."""


def before_part(part, namespace):
    """Read what the part's code text shows about its mask (_MASK_TEXT) before its checks run."""
    _MASK_TEXT.clear()
    _MASK_TEXT.update(_mask_text(part, namespace))


def one_mistake_explains(results):
    """Code written for one input rank (the shapes check says hardcoded-dims) raises in the other checks too,
    which run on another rank: those errors are the same mistake, named once, not guesses of their own."""
    shapes = results.get("shapes")
    if shapes is None or shapes.mistake != "hardcoded-dims":
        return results
    return {name: SelfCheckFailure("hardcoded-dims", f.seen_zh, f.seen_en, raised=True, error=f.error, line=f.line)
            if f and f.raised else f for name, f in results.items()}


SELFCHECK_LABEL = {"shapes": "形状", "causal_mask": "因果掩码", "values": "数值", "rules": "评分规则", "interface": "接口",
                   "causal": "因果：未来不影响过去", "dropout_eval": "eval() 模式下的 dropout"}
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
