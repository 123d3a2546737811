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
                        "用 args.dim、args.n_heads、args.dropout、args.max_seq_len；COURSE_NOTES_ZH里的 n_embd 在这里是 "
                        "dim，n_head 是 n_heads（TODO 2a / 2b）。",
                        "Use args.dim, args.n_heads, args.dropout, args.max_seq_len; COURSE_NOTES_EN' n_embd is dim "
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
# --- end of the grading rules' allow-list ---
SELFCHECK_MISTAKES["forbidden-import"] = (*SELFCHECK_MISTAKES["forbidden-import"][:2], allowed_imports("zh"),
                                         allowed_imports("en"))  # every module the table allows, as the grader says it

# --- the grading rules read in your code: `make build` copies it here from source/selfcheck/rules.py ---
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
# --- end of the self-check's runner and report ---
