"""The demo's classes: per assignment, who hands in what, what Colab did to the file, and what the grader should find.

The same students take both labs, as in a course; each lab's answers are hand-ins of tests/submissions/ (the
reference solution, honest styles, mutants, the untouched release).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Student:
    """One demo student's hand-in of one assignment."""

    id: str
    file_name: str  # as Colab named the download
    answers: str  # "reference", "<path under tests/submissions/ without .py>" or "untouched"
    colab: str = ""  # "" (saved by Jupyter), "saved" (Colab's format) or "stripped" (Colab's format, no nbgrader metadata)
    expect: str = ""  # the mistake the grader should diagnose; "" for a full score


ATTENTION: tuple[Student, ...] = (
    Student("ada", "attention.ipynb", "reference", expect=""),
    Student("bo.li", "Copy of attention.ipynb", "correct/nanogpt_float_bias_buffer", colab="saved"),
    Student("chen-wei", "attention.ipynb 的副本", "correct/einsum_where_torchsoftmax", colab="stripped"),
    Student("dara", "attention (1).ipynb", "correct/permute_reshape_mT_nnSoftmax", colab="saved"),
    Student("eli", "attention.ipynb", "mutants/mask-diagonal", expect="mask-diagonal"),
    Student("fatima", "attention.ipynb", "mutants/missing-scale", expect="missing-scale"),
    Student("gus", "Copy of attention (2).ipynb", "mutants/bare-matmul", colab="saved", expect="bare-matmul"),
    Student("hana", "attention.ipynb", "mutants/head-split", expect="head-split"),
    Student("ivan", "attention.ipynb", "mutants/dropout-lowercase", expect="dropout-lowercase"),
    Student("jun", "attention.ipynb", "mutants/mask-multiplied", expect="mask-multiplied"),
    Student("kofi", "attention.ipynb", "mutants/timeout", expect="timeout"),
    Student("lena", "attention.ipynb", "untouched", expect="not-implemented"),
)

KV_CACHE: tuple[Student, ...] = (
    Student("ada", "kv_cache.ipynb", "reference", expect=""),
    Student("bo.li", "Copy of kv_cache.ipynb", "kv_cache/correct/expand_reshape_dataclass_index_copy", colab="saved"),
    Student("chen-wei", "kv_cache.ipynb 的副本", "kv_cache/correct/head_map_module_buffers_narrow_einsum",
            colab="stripped"),
    Student("eli", "kv_cache.ipynb", "kv_cache/mutants/repeat-kv-order", expect="repeat-kv-order"),
    Student("fatima", "kv_cache (1).ipynb", "kv_cache/mutants/cache-mask-offset", colab="saved",
            expect="cache-mask-offset"),
    Student("gus", "Copy of kv_cache (2).ipynb", "kv_cache/mutants/cache-position", colab="saved",
            expect="cache-position"),
    Student("hana", "kv_cache.ipynb", "kv_cache/mutants/kv-heads-ignored", expect="kv-heads-ignored"),
    Student("ivan", "kv_cache.ipynb", "kv_cache/mutants/wrong-scale", expect="wrong-scale"),
    Student("lena", "kv_cache.ipynb", "untouched", expect="not-implemented"),
)

CLASSES: dict[str, tuple[Student, ...]] = {"attention": ATTENTION, "kv_cache": KV_CACHE}
"""Assignment name -> its demo class: every student gets a row in that assignment's table and a feedback page."""
