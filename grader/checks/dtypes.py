"""Low precision: what a float16 or bfloat16 run that failed or changed dtype tells, as advice that costs no point
(the exercise is graded in float32), written once for both parts."""
from __future__ import annotations

import re

import torch

from grader.checks import Context, Outcome, diagnosis, passed

DTYPE_HANDLING = re.compile(r"without overflow|same dtype|expected scalar type|dtype", re.I)


def is_dtype_handling(error: dict | None) -> bool:
    return bool(error) and bool(DTYPE_HANDLING.search(error.get("message", "")))


def float32_run_passed(ctx: Context, part: str) -> bool:
    values = ctx.outcomes.get(f"{part}.values")
    return values is not None and values.passed


def dtype_handling_advice(ctx: Context, error: dict, dtype: str, part: str) -> tuple[str, str, list[str]] | None:
    """A low-precision run that failed on dtype handling alone (a -1e9 fill that overflows float16,
    a float32 mask promoting half scores): worth knowing for mixed precision, but the exercise is
    specified in float32, so it is advice, not a lost point. None for any other error. A dtype error no
    other id explains, where the float32 run passed, is a mask or constant that changed the dtype (`mask-dtype`)."""
    message = error.get("message", "")
    if not is_dtype_handling(error):
        return None
    mistakes = diagnosis.from_error(error, ctx.static)
    if not mistakes and float32_run_passed(ctx, part):
        mistakes = ["mask-dtype"]
    zh = f"{dtype} 输入时代码报错（{error.get('type')}: {message[:200]}）：本题按 float32 评分，不扣分，但混合精度训练时会出错。"
    en = (f"With {dtype} inputs the code raises ({error.get('type')}: {message[:200]}): graded in float32, so no points "
          "are lost, but mixed-precision training would break.")
    return zh, en, mistakes


UNPROMISED_DTYPES = (torch.bfloat16,)
"""Run, never charged: the exercise promises float32 and, through the notebook's float16 note, half precision; it
says nothing of bfloat16, which numpy cannot even name (`np.finfo` of it raises). Whatever fails only there is told
as advice (docs/reading-a-report.md, "Checks that need correct values")."""


def unpromised_dtype_note(ctx: Context, dtype: str, error: dict | None, problem: Outcome | None) -> tuple[str, str, list[str]]:
    """A bfloat16 run that raised (`error`) or gave other numbers (`problem`), as a note that costs nothing."""
    if error:
        seen_zh, seen_en = f"报错（{error.get('type')}: {error.get('message', '')[:200]}）", \
            f"raises ({error.get('type')}: {error.get('message', '')[:200]})"
        mistakes = diagnosis.from_error(error, ctx.static)
    else:
        seen_zh, seen_en = f"结果与参考不同（{problem.zh[:200]}）", f"gives other numbers ({problem.en[:200]})"
        mistakes = []
    return (f"{dtype} 输入时代码{seen_zh}：本题不要求 {dtype}，不扣分；若要在 {dtype} 下训练，请检查这一处。",
            f"With {dtype} inputs the code {seen_en}: the exercise does not ask for {dtype}, so no points are lost; "
            f"check it before training in {dtype}.", mistakes)


def promoted_dtype_note(ctx: Context, part: str, dtype: torch.dtype, results: dict[str, torch.Tensor | None]
                        ) -> tuple[str, str, list[str]] | None:
    """Results (name -> tensor) of a `dtype` run that came back in another dtype, where the float32 run passed: a
    float32 mask or constant promoted the computation (`mask-dtype`), told as advice. None when every dtype is kept."""
    changed_dtype = {name: x.dtype for name, x in results.items() if x is not None and x.dtype != dtype}
    if not changed_dtype or not float32_run_passed(ctx, part):
        return None
    name = str(dtype).replace("torch.", "")
    seen = ", ".join(f"{key} {str(kind).replace('torch.', '')}" for key, kind in changed_dtype.items())
    return (f"{name} 输入时返回的结果变了数据类型（{seen}）：掩码或常量把计算提升到了别的精度。"
            "本题按 float32 评分，不扣分。",
            f"With {name} inputs the results come back in another dtype ({seen}): a mask or a constant promoted the "
            "computation. Graded in float32, so no points are lost.", ["mask-dtype"])


def low_precision_passed(notes: list[tuple[str, str, list[str]]]) -> Outcome:
    if not notes:
        return passed("float16 与 bfloat16 输入的结果都在容差之内。", "float16 and bfloat16 results are within tolerance.")
    outcome = passed(" ".join(n[0] for n in notes), " ".join(n[1] for n in notes))
    outcome.advice = sorted({m for n in notes for m in n[2]})
    return outcome
