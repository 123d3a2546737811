"""Low precision: what a float16 or bfloat16 run that failed or changed dtype tells, written once for both parts. A
mask or constant that changes float16's dtype costs the check's points; every other finding here is advice that
costs none (the values are graded in float32)."""
from __future__ import annotations

import re
from typing import NamedTuple

import torch

from grader.checks import Context, Outcome, diagnosis, failed, passed

DTYPE_HANDLING = re.compile(r"without overflow|same dtype|expected scalar type|dtype", re.I)


class Note(NamedTuple):
    """What a low-precision run told: its text in each language, its ids, and what was seen (the text's first half)."""
    zh: str
    en: str
    mistakes: list[str]
    seen_zh: str = ""
    seen_en: str = ""


def is_dtype_handling(error: dict | None) -> bool:
    return bool(error) and bool(DTYPE_HANDLING.search(error.get("message", "")))


def float32_run_passed(ctx: Context, part: str) -> bool:
    values = ctx.outcomes.get(f"{part}.values")
    return values is not None and values.passed


def dtype_handling_advice(ctx: Context, error: dict, dtype: str, part: str) -> Note | None:
    """A low-precision run that failed on dtype handling alone (a -1e9 fill that overflows float16,
    a float32 mask promoting half scores), as a note. None for any other error. A dtype error no
    other id explains, where the float32 run passed, is a mask or constant that changed the dtype (`mask-dtype`):
    in float16 that costs the check (`changed_dtype_failure`); any other note is advice, not a lost point."""
    message = error.get("message", "")
    if not is_dtype_handling(error):
        return None
    mistakes = diagnosis.from_error(error, ctx.static)
    if not mistakes and float32_run_passed(ctx, part):
        mistakes = ["mask-dtype"]
    seen_zh = f"{dtype} 输入时代码报错（{error.get('type')}: {message[:200]}）"
    seen_en = f"With {dtype} inputs the code raises ({error.get('type')}: {message[:200]})"
    return Note(f"{seen_zh}：本题按 float32 评分，不扣分，但混合精度训练时会出错。",
                f"{seen_en}: graded in float32, so no points are lost, but mixed-precision training would break.",
                mistakes, seen_zh, seen_en)


GRADED_HALF = torch.float16
"""Graded: the notebook's own benchmark runs the student's attention in float16 on a GPU, so code whose mask or
constant changes the dtype there (`mask-dtype`) fails where the course uses it, and loses the check's points. A
`-1e9` fill that overflows float16 stays advice (`mask-value-overflow`): the contract names it so."""


def changed_dtype_failure(dtype: torch.dtype, note: Note | None) -> Outcome | None:
    """A float16 note naming `mask-dtype` (the run raised on mixed dtypes, or came back in another dtype, where the
    float32 run passed) as the check's failure; None for any other note or dtype."""
    if dtype != GRADED_HALF or note is None or note.mistakes != ["mask-dtype"]:
        return None
    seen_zh, seen_en = note.seen_zh, note.seen_en
    return failed(f"{seen_zh}：掩码或常量改变了计算的数据类型。float16 是评分的精度（笔记本的基准测试在 GPU 上以 float16 "
                  "运行你的代码），这样的代码在半精度下出错或离开了半精度。",
                  f"{seen_en}: a mask or a constant changes the computation's dtype. float16 is graded (the notebook's "
                  "benchmark runs your code in float16 on a GPU), and this code fails in half precision or leaves it.",
                  ["mask-dtype"])


UNPROMISED_DTYPES = (torch.bfloat16,)
"""Run, never charged: the exercise promises float32 and, through the notebook's float16 note, half precision; it
says nothing of bfloat16, which numpy cannot even name (`np.finfo` of it raises). Whatever fails only there is told
as advice (docs/reading-a-report.md, "Checks that need correct values")."""


def unpromised_dtype_note(ctx: Context, dtype: str, error: dict | None, problem: Outcome | None) -> tuple[str, str, list[str]]:
    """A bfloat16 run that raised (`error`) or gave other numbers (`problem`), as a note that costs nothing."""
    if error:
        seen_zh, seen_en = f"报错（{diagnosis.quoted(error, 250)}）", f"raises ({diagnosis.quoted(error, 250)})"
        mistakes = diagnosis.from_error(error, ctx.static)
    else:
        seen_zh, seen_en = f"结果与参考不同（{problem.zh[:200]}）", f"gives other numbers ({problem.en[:200]})"
        mistakes = []
    return (f"{dtype} 输入时代码{seen_zh}：本题不要求 {dtype}，不扣分；若要在 {dtype} 下训练，请检查这一处。",
            f"With {dtype} inputs the code {seen_en}: the exercise does not ask for {dtype}, so no points are lost; "
            f"check it before training in {dtype}.", mistakes)


def promoted_dtype_note(ctx: Context, part: str, dtype: torch.dtype, results: dict[str, torch.Tensor | None]
                        ) -> Note | None:
    """Results (name -> tensor) of a `dtype` run that came back in another dtype, where the float32 run passed: a
    float32 mask or constant promoted the computation (`mask-dtype`), told as advice. None when every dtype is kept."""
    changed_dtype = {name: x.dtype for name, x in results.items() if x is not None and x.dtype != dtype}
    if not changed_dtype or not float32_run_passed(ctx, part):
        return None
    name = str(dtype).replace("torch.", "")
    seen = ", ".join(f"{key} {str(kind).replace('torch.', '')}" for key, kind in changed_dtype.items())
    seen_zh, seen_en = f"{name} 输入时返回的结果变了数据类型（{seen}）", \
        f"With {name} inputs the results come back in another dtype ({seen})"
    return Note(f"{seen_zh}：掩码或常量把计算提升到了别的精度。本题按 float32 评分，不扣分。",
                f"{seen_en}: a mask or a constant promoted the computation. Graded in float32, so no points are lost.",
                ["mask-dtype"], seen_zh, seen_en)


def low_precision_passed(notes: list[tuple[str, str, list[str]]]) -> Outcome:
    if not notes:
        return passed("float16 与 bfloat16 输入的结果都在容差之内。", "float16 and bfloat16 results are within tolerance.")
    outcome = passed(" ".join(n[0] for n in notes), " ".join(n[1] for n in notes))
    outcome.advice = sorted({m for n in notes for m in n[2]})
    return outcome
