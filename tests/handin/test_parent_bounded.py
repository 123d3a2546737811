"""Is every pass the trusted parent makes over a hand-in's text bounded, at the worst the caps allow, and does a
hand-in over the parent's budget get a row that says so? (CPU time of this process, never wall time.)

The hand-ins (tests/support/worst_case_code.py) fill a cap with one statement kind each and are read by the graded code,
so reading, the grading rules, the static pass and the fix rewrites all read every byte of them.
"""
from __future__ import annotations

import time

import pytest

from support.measures import CpuTime

from support.paths import REFERENCE
from grader import rules, static_pass
from grader.handin import parent_budget
from grader.fixes.candidates import candidates
from grader.fixes.rewrites import REWRITES
from grader.grade import grade_submission
from grader.handin.source import submission_from_cells
from support.worst_case_code import WORST, attribute_chains, with_block
from grader.exercises.attention import EXERCISE

pytestmark = pytest.mark.unit

PASSES_CPU_SECONDS = parent_budget.CPU_SECONDS
"""All the text passes over one worst hand-in, together, within the parent's whole budget. When they were
quadratic, the binding line took minutes (112–174 s at 68 KiB) and the attribute chains 37 s at 506 KiB."""


@pytest.mark.sandbox  # the slow tier: the worst inputs at the caps take seconds of CPU each
@pytest.mark.parametrize("case", sorted(WORST))
def test_every_pass_over_the_worst_code_the_caps_allow_stays_within_the_budget(case):
    """Read, rules, static pass, fix rewrites: the CPU time they take on a capped worst case, every byte kept."""
    code = WORST[case]()
    started = time.process_time()
    submission = submission_from_cells([code], f"{case}.py", is_notebook=False)
    assert submission.refusal is None, submission.refusal
    assert len(submission.source) > 0.9 * len(code) or case == "statements"  # the hostile block was kept
    rules.violations(submission.source, EXERCISE)
    static_pass.analyse(submission.source)
    candidates(submission.source, list(REWRITES), {}, EXERCISE.graded_name)
    spent = time.process_time() - started
    assert spent < PASSES_CPU_SECONDS, f"{case}: {spent:.1f} s of CPU"


def cpu_of(text_pass, code: str) -> float:
    """The least CPU time of three passes, each with the collector paused (conftest.CpuTime)."""
    source = submission_from_cells([code], "case.py", is_notebook=False).source
    spent = []
    for _ in range(3):
        with CpuTime() as cpu:
            text_pass(source)
        spent.append(cpu.seconds)
    return min(spent)


def four_times_the_size_costs_about_four_times(text_pass, code_of, small: int) -> None:
    """Each step from n to 4n names costs about 4x the step before it when the pass is linear (4-6x measured), 16x
    when quadratic. Sizes large enough that the first step is far above the timer's noise: CI saw 8.5x with a first
    step of 17 ms.
    Steps, not totals: the graded code's fixed part (the reference around the hostile line) would dilute a ratio of
    totals until a pass quadratic in the names passed as linear."""
    base, middle, large = (cpu_of(text_pass, code_of(size)) for size in (small, 4 * small, 16 * small))
    assert large - middle < 10.0 * max(middle - base, 0.005), (base, middle, large)


def test_a_line_binding_n_names_costs_the_rules_linear_time():
    four_times_the_size_costs_about_four_times(lambda source: rules.violations(source, EXERCISE), binding_line_of, 1200)


def test_attribute_chains_cost_the_rules_linear_time():
    four_times_the_size_costs_about_four_times(
        lambda source: rules.violations(source, EXERCISE), lambda depth: with_block("X = torch" + ".a" * depth), 500)


def test_findings_on_every_line_cost_the_static_pass_linear_time():
    four_times_the_size_costs_about_four_times(
        static_pass.analyse, lambda count: with_block("def X():\n" + "    is_casuel = matmul(x)\n" * count), 2000)


def binding_line_of(count: int) -> str:
    names = ", ".join(f"a{i}" for i in range(count))
    return with_block(f"X, {names} = 0, {names}")


def test_a_hand_in_over_the_parents_cpu_budget_gets_a_row_that_says_so(tmp_path):
    path = tmp_path / "chains.py"
    path.write_text(attribute_chains(), encoding="utf-8")
    started = time.process_time()
    report = grade_submission(path, budget=parent_budget.ParentBudget(cpu_seconds=0.5))
    assert time.process_time() - started < 15
    assert report["score"] == 0.0 and report["mistakes"] == ["submission-too-costly"]
    assert report["refused"] == "submission-too-costly"
    assert "0.5 s of CPU time" in report["checks"][0]["message_en"] and "CPU 时间" in report["checks"][0]["message_zh"]


@pytest.mark.sandbox  # the slow tier: it fills the parent's memory budget
def test_a_hand_in_over_the_parents_memory_budget_gets_a_row_that_says_so(tmp_path):
    path = tmp_path / "chains.py"
    path.write_text(attribute_chains(), encoding="utf-8")
    report = grade_submission(path, budget=parent_budget.ParentBudget(memory_bytes=2**20))
    assert report["mistakes"] == ["submission-too-costly"]
    assert "MiB of memory, over its limit of 1 MiB" in report["checks"][0]["message_en"]


def test_an_honest_hand_in_reads_far_inside_the_budget():
    """The reference's reading passes: a small fraction of the budget, so the budget never touches an honest one."""
    code = REFERENCE.read_text(encoding="utf-8")
    started = time.process_time()
    submission = submission_from_cells([code], "honest.py", is_notebook=False)
    rules.violations(submission.source, EXERCISE)
    static_pass.analyse(submission.source)
    assert time.process_time() - started < PASSES_CPU_SECONDS / 30
