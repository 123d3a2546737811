"""Does a test go red when a defended behaviour is broken? One mutation at a time, in a throwaway copy of HEAD.

Each mutation below replaces one exact piece of the grader (the replaced text must be there once: a
mutation that no longer applies is reported, never skipped) and runs the tests named for it; the
mutation is caught when they fail. Prints one row per mutation with the test that caught it and its
tier. Exit status 1 when a mutation survives or no longer applies.

    .venv/bin/python scripts/mutation_audit.py            # every mutation
    .venv/bin/python scripts/mutation_audit.py uid-drop   # the ones named
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Mutation:
    name: str
    file: str
    edits: tuple[tuple[str, str], ...]  # (text there exactly once, its replacement)
    tests: tuple[str, ...]  # pytest node ids (or files) that must go red
    tier: str


MUTATIONS = [
    Mutation("causal-exactness", "grader/checks/sdpa/behaviour.py",
             (("if (leaked != 0).any():", "if (leaked.abs() > 1e-6).any():"),),
             ("tests/test_graders.py::test_mutant_loses_points_and_is_diagnosed[mask-fill-finite]",), "sandbox"),
    # both halves: gradcheck alone already fails a wrong backward, and so does the comparison alone
    Mutation("gradient-comparison", "grader/checks/sdpa/numerics.py",
             (('problem = compare_gradients(list("QKV"), grads, expected, tolerance)', "problem = None"),
              ('if not gradcheck.get("passed"):', "if False:")),
             ("tests/test_graders.py::test_mutant_loses_points_and_is_diagnosed[wrong-backward]",), "sandbox"),
    # the comparison alone: float32-only code is checked without gradcheck, so nothing else finds its backward
    Mutation("gradient-reference-comparison", "grader/checks/sdpa/numerics.py",
             (('problem = compare_gradients(list("QKV"), grads, expected, tolerance)', "problem = None"),),
             ("tests/test_graders.py::test_mutant_loses_points_and_is_diagnosed[wrong-backward__2]",), "sandbox"),
    Mutation("report-claim", "grader/grade.py",
             (("    with report_cache.claimed(cache, cache_key):", "    if True:"),),
             ("tests/test_core_report_cache.py::test_two_graders_of_one_source_compute_its_report_once",), "unit"),
    Mutation("reference-scale", "grader/reference.py",
             (("T, d_k = Q.size(-2), Q.size(-1)", "T, d_k = Q.size(-2), V.size(-1)"),),
             ("tests/test_core_reference.py",), "unit"),
    Mutation("built-in-attention-refusal", "grader/sandbox/worker.py",
             (("self._denied_ops.impl(op, self._refusing(f\"aten.{op}\"), key)", "pass"),),
             ("tests/test_forgery.py::test_the_built_in_attention_is_refused_in_the_worker_however_named",), "sandbox"),
    Mutation("uid-drop", "grader/sandbox/confinement.py", (("os.setuid(limits.uid)", "pass"),),
             ("tests/test_confinement_hostile.py",), "sandbox"),
    Mutation("chroot", "grader/sandbox/confinement.py",
             (("        _enter_new_root(libc, limits.visible, cuda)", "        pass"),),
             ("tests/test_isolation.py",), "sandbox"),
    # issue 17: the meta stand-in reads as a GPU through its device object and its text too
    Mutation("stand-in-device", "grader/sandbox/guard.py",
             ((', "device": STAND_IN_DEVICE, "get_device": lambda: 0}', "}"),),
             ("tests/test_runtime_rules.py::test_a_bypass_of_the_static_rules_gains_nothing_at_run_time"
              "[n_meta_in_the_device_text]",), "sandbox"),
    Mutation("stand-in-text", "grader/sandbox/probes.py",
             (("            return _as_on_a_gpu(args[0])", "            return func(*args, **kwargs)"),),
             ("tests/test_runtime_rules.py::test_a_bypass_of_the_static_rules_gains_nothing_at_run_time"
              "[o_meta_in_the_tensor_text]",), "sandbox"),
    # issue 19: a CPU constant is not blamed on the mask
    Mutation("constant-device", "grader/diagnosis.py", (('        return "constant-device"', '        return "mask-device"'),),
             ("tests/test_graders.py::test_mutant_loses_points_and_is_diagnosed[constant-device]",), "sandbox"),
    # issue 20: requests' raw-byte tensors keep a view's values; a cached run starts no fork server
    Mutation("request-tensor-order", "grader/sandbox/request_tensors.py",
             (("    flat = tensor.detach().cpu().contiguous().reshape(-1)", "    flat = tensor.detach().cpu().reshape(-1)"),),
             ("tests/test_request_tensors.py",), "unit"),
    Mutation("fork-server-when-cached", "grader/sandbox/worker_process.py",
             (("    if report_cache is None:\n        start_fork_server()", "    start_fork_server()"),),
             ("tests/test_process_edge.py::test_a_run_the_report_cache_answers_starts_no_fork_server",), "sandbox"),
    Mutation("unused-fork-server-stop", "grader/sandbox/worker_process.py",
             (("            atexit.register(_stop_fork_server_if_unused)  # once, whoever starts the fork server\n", ""),),
             ("tests/test_process_edge.py::test_a_process_that_starts_no_worker_leaves_no_fork_server_behind",),
             "sandbox"),
    Mutation("probe-limit-env", "grader/grade.py",
             (("probe_seconds=probe_seconds_from_env() or Limits.probe_seconds", "probe_seconds=Limits.probe_seconds"),),
             ("tests/test_probe_limit.py",), "unit"),
    Mutation("answer-storage-size", "grader/sandbox/answers.py",
             (("                if len(data) != numel * dtype.itemsize:", "                if False:"),),
             ("tests/test_answer_decoder.py",), "unit"),
    # issue 21: a broken rule is placed as Colab shows cells
    Mutation("rules-gate-place", "grader/policy.py",
             (("        place = places.place(where, lang)", "        place = f\"line {where['line']}\""),),
             ("tests/test_core_source.py::test_a_broken_rule_in_a_notebook_is_placed_by_the_cell_that_defines_the_graded_name",),
             "unit"),
    Mutation("release-gate", "grader/release_solutions.py", (("if problems and not force:", "if False:"),),
             ("tests/test_nbgrader_release_solutions.py",), "e2e"),
    # issue 18: nothing leaks, a bounded trusted side, one reading of a notebook
    Mutation("environment-scrub", "grader/sandbox/fork_server.py",
             (("if name in KEPT_NAMES or name.startswith(KEPT_PREFIXES)}", "if True}"),),
             ("tests/test_no_secret_in_worker.py",), "sandbox"),
    Mutation("memfd-refused", "grader/sandbox/syscall_filter.py",
             (('    "memfd_create", "memfd_secret",\n', ""),),
             ("tests/test_confinement_hostile.py::test_system_calls_attention_code_never_needs_are_refused",),
             "sandbox"),
    Mutation("parent-cpu-budget", "grader/parent_budget.py", (("if spent > self.cpu_seconds:", "if False:"),),
             ("tests/test_parent_bounded.py::test_a_hand_in_over_the_parents_cpu_budget_gets_a_row_that_says_so",),
             "sandbox"),
    Mutation("lone-surrogates", "grader/clean_text.py", (('_SURROGATES = "\\ud800-\\udfff"', '_SURROGATES = ""'),),
             ("tests/test_output_survives_text.py",), "sandbox"),
    Mutation("reading-by-version", "grader/notebook_version.py", (("if major in (2, 3):", "if False:"),),
             ("tests/test_one_reading_of_a_notebook.py",), "unit"),
    Mutation("feedback-url-check", "grader/nbgrader/sanitize_feedback.py",
             (("if url and not SAFE_URL.match(url):", "if False:"),),
             ("tests/test_feedback_page_sanitizer.py",), "unit"),
    Mutation("cache-key", "grader/report_cache.py",
             (("check_ids, dataclasses.asdict(limits), cuda,", "check_ids, cuda,"),),
             ("tests/test_core_report_cache.py",), "unit"),
    # issue 28: points from the graph the parent re-runs on inputs the worker never saw
    Mutation("graph-decoys", "grader/adapter.py",
             (("_decoys(sent) if probe in GRAPHED else sent", "sent"),),
             ("tests/test_probe_answers_reused.py::test_a_message_sent_once_is_graded_again_on_each_requests_own_tensors",
              "tests/test_graph_integrity.py::test_a_recipe_gains_nothing_with_every_worker_rule_off"
              "[computed_outside_the_recorder]"), "sandbox"),
    Mutation("graph-forbidden-operators", "grader/graph/ops.py",
             (("    if forbidden(packet) or forbidden(rest):\n        return \"forbidden\"\n", ""),),
             ("tests/test_graph_checker.py::test_the_built_in_attention_is_forbidden_in_every_form",
              "tests/test_graph_integrity.py::test_a_recipe_gains_nothing_with_every_worker_rule_off"
              "[built_in_by_closure]"), "unit"),
    Mutation("graph-allow-list", "grader/graph/ops.py",
             (('return "allowed" if namespace == "aten" and packet in ALLOWED else "unsupported"', 'return "allowed"'),),
             ("tests/test_graph_checker.py::test_operators_off_the_list_are_not_run",), "unit"),
    Mutation("graph-size-bound", "grader/graph/run.py",
             (("        _bounded(node.target, args, kwargs)\n", ""),),
             ("tests/test_graph_checker.py::test_a_node_that_would_allocate_past_the_bound_is_refused_before_it_runs",),
             "unit"),
    Mutation("graph-uninitialised-zeroed", "grader/graph/run.py", (("        result.zero_()\n", "        pass\n"),),
             ("tests/test_graph_checker.py::test_uninitialised_memory_never_reaches_a_result",), "unit"),
    Mutation("graph-devices-followed", "grader/graph/run.py",
             (("            if strays and any(device != \"cpu\" for device, _ in operands):",
               "            if False:"),),
             ("tests/test_graph_checker.py::test_a_cpu_mask_meets_inputs_on_the_stand_in_and_fails_as_on_a_gpu",
              "tests/test_graders.py::test_mutant_loses_points_and_is_diagnosed[mask-device]"), "unit"),
    Mutation("graph-input-copies", "grader/graph/run.py",
             (("runner.run([t.clone() for t in inputs],", "runner.run(inputs,"),),
             ("tests/test_graph_checker.py::test_the_parents_inputs_are_never_edited_by_a_graph",), "unit"),
    Mutation("graph-budget-read", "grader/graph/run.py", (("            parent_budget.check()\n", "            pass\n"),),
             ("tests/test_graph_checker.py::test_a_long_graph_is_stopped_by_the_submissions_budget_while_it_runs",),
             "unit"),
    Mutation("graph-decoded-key", "grader/graph/answers.py",
             (("    key = (id(text), len(constants))", "    key = id(text)"),),
             ("tests/test_probe_answers_reused.py::test_a_decoded_graph_is_never_taken_for_an_answer_with_other_constants",),
             "unit"),
    Mutation("message-key-values", "grader/adapter.py",
             (("            return (type(value).__name__, repr(value))", "            return ()"),),
             ("tests/test_probe_answers_reused.py",), "unit"),
    Mutation("stand-in-cuda-queries", "grader/sandbox/probes.py",
             (("            function.__code__ = answer.__code__\n", "            pass\n"),),
             ("tests/test_stand_in.py",), "unit"),
    Mutation("stand-in-format-fields", "grader/sandbox/guard.py",
             (("            return _GuardedFormat(self, obj, name)", "            pass"),),
             ("tests/test_stand_in.py",), "unit"),
]


def copy_of_head(target: Path) -> None:
    """The committed tree, nothing else: a mutation never touches the working copy."""
    subprocess.run(["git", "worktree", "add", "--detach", "-q", str(target), "HEAD"], cwd=ROOT, check=True)


def run(mutation: Mutation, copy: Path) -> tuple[str, str]:
    path = copy / mutation.file
    original = mutated = path.read_text(encoding="utf-8")
    for old, new in mutation.edits:
        if mutated.count(old) != 1:
            return "does not apply", f"{old!r} found {mutated.count(old)} times in {mutation.file}"
        mutated = mutated.replace(old, new)
    path.write_text(mutated, encoding="utf-8")
    try:
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *mutation.tests],
                              cwd=copy, capture_output=True, text=True, errors="replace")
    finally:
        path.write_text(original, encoding="utf-8")
    last = (done.stdout.strip().splitlines() or [""])[-1]
    return ("caught" if done.returncode == 1 else "SURVIVED" if done.returncode == 0 else f"error {done.returncode}"), last


def main(names: list[str]) -> int:
    chosen = [m for m in MUTATIONS if not names or m.name in names]
    copy = Path(tempfile.mkdtemp(prefix="attention-kit-mutants-")) / "head"
    copy_of_head(copy)
    failed = 0
    try:
        print(f"{'mutation':<28}{'tier':<9}{'result':<16}{'seconds':>8}  tests (last line)")
        for mutation in chosen:
            started = time.monotonic()
            result, last = run(mutation, copy)
            failed += result != "caught"
            print(f"{mutation.name:<28}{mutation.tier:<9}{result:<16}{time.monotonic() - started:8.0f}  "
                  f"{' '.join(mutation.tests)} ({last})", flush=True)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(copy)], cwd=ROOT)
        shutil.rmtree(copy.parent, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
