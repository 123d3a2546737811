"""Does a test go red when a defended behaviour is broken? One mutation at a time, in a throwaway copy of HEAD.

Each mutation below replaces one exact piece of the grader (the replaced text must be there once: a
mutation that no longer applies is reported, never skipped) and runs the tests named for it; the
mutation is caught when they fail. Prints one row per mutation with the test that caught it and its
tier. Exit status 1 when a mutation survives or no longer applies.

    .venv/bin/python scripts/mutation_audit.py            # every mutation
    .venv/bin/python scripts/mutation_audit.py uid-drop   # the ones named
    .venv/bin/python scripts/mutation_audit.py --table    # the table docs/developing.md holds (runs nothing)
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


NEW_ROOT = "_enter_new_root(libc, limits.visible, cuda, read_only=\"read-only-binds\" in on, capped=\"tmpfs-caps\" in on)"
ALONE = "tests/sandbox/test_sandbox_layers_alone.py::test_the_"
RULES_OFF = "tests/graph/test_graph_integrity.py::test_a_recipe_gains_nothing_with_every_worker_rule_off"
KV_SELFCHECK = "tests/student/test_kv_cache_selfcheck.py::test_each_mistake_of_the_lab_is_named_by_its_own_id"
KV_REPEAT = "tests/checks/test_kv_cache_repeat.py::"
KV_DECODE = "tests/checks/test_kv_cache_decode.py::"
DECODE_CHAIN = "tests/graph/test_decode_chain.py::"
KV_CACHE = "tests/checks/test_kv_cache_cache.py::"
KV_CACHE_MUTANT = f"{KV_CACHE}test_a_part_two_mutant_loses_points_with_its_mistake_named_in_both_languages"
CACHE_TURN = "tests/graph/test_cache_answers.py::"
KV_GQA = "tests/checks/test_kv_cache_gqa.py::"
WRITES = "tests/rules/test_writes_to_a_parameter.py::"
KV_GQA_MUTANT = f"{KV_GQA}test_a_part_three_mutant_loses_points_with_its_mistake_named_in_both_languages"
MUTATIONS = [
    Mutation("causal-exactness", "grader/checks/sdpa/behaviour.py",
             (("if (leaked != 0).any():", "if (leaked.abs() > 1e-6).any():"),),
             ("tests/checks/test_graders.py::test_mutant_loses_points_and_is_diagnosed[mask-fill-finite]",), "sandbox"),
    # both halves: gradcheck alone already fails a wrong backward, and so does the comparison alone
    Mutation("gradient-comparison", "grader/checks/sdpa/numerics.py",
             (('problem = compare_gradients(list("QKV"), grads, expected, tolerance)', "problem = None"),
              ('if not gradcheck.get("passed"):', "if False:")),
             ("tests/checks/test_graders.py::test_mutant_loses_points_and_is_diagnosed[wrong-backward]",), "sandbox"),
    # the comparison alone: float32-only code is checked without gradcheck, so nothing else finds its backward
    Mutation("gradient-reference-comparison", "grader/checks/sdpa/numerics.py",
             (('problem = compare_gradients(list("QKV"), grads, expected, tolerance)', "problem = None"),),
             ("tests/checks/test_graders.py::test_mutant_loses_points_and_is_diagnosed[wrong-backward__2]",), "sandbox"),
    Mutation("report-claim", "grader/grade.py",
             (("        with report_cache.claimed(self.cache, cache_key):", "        if True:"),),
             ("tests/report/test_core_report_cache.py::test_two_graders_of_one_source_compute_its_report_once",), "unit"),
    Mutation("reference-scale", "grader/checks/reference.py",
             (("T, d_k = Q.size(-2), Q.size(-1)", "T, d_k = Q.size(-2), V.size(-1)"),),
             ("tests/checks/test_core_reference.py",), "unit"),
    # issue 45: the second lab's float64 reference, and the labels of its mutants proved against it
    Mutation("kv-reference-grouping", "grader/exercises/kv_cache/reference.py",
             (("grouped = x[:, :, None].expand(B, H_kv, n_rep, T, d)", "grouped = x[:, None].expand(B, n_rep, H_kv, T, d)"),),
             ("tests/exercises/test_kv_cache_reference.py",), "unit"),
    Mutation("kv-reference-mask-offset", "grader/exercises/kv_cache/reference.py",
             (("+ (start_pos if offset_mask else 0)", "+ 0"),),
             ("tests/exercises/test_kv_cache_reference.py",), "unit"),
    Mutation("kv-mutant-mislabelled", "tests/submissions/kv_cache/mutants/softmax-dim.py",
             (("# expect: softmax-dim", "# expect: head-split"),),
             ("tests/exercises/test_kv_cache_mutants.py::test_each_mutant_breaks_what_its_label_says_and_holds_the_rest"
              "[softmax-dim]",), "unit"),
    Mutation("built-in-attention-refusal", "grader/sandbox/worker.py",
             (("self._denied_ops.impl(op, self._refusing(f\"aten.{op}\"), key)", "pass"),),
             ("tests/rules/test_forgery.py::test_the_built_in_attention_is_refused_in_the_worker_however_named",), "sandbox"),
    Mutation("uid-drop", "grader/sandbox/confinement.py", (("os.setuid(limits.uid)", "pass"),),
             ("tests/sandbox/test_confinement_hostile.py",), "sandbox"),
    Mutation("chroot", "grader/sandbox/confinement.py",
             ((NEW_ROOT, "pass"),),
             ("tests/sandbox/test_isolation.py",), "sandbox"),
    # issue 17: the meta stand-in reads as a GPU through its device object and its text too
    # the meta stand-in's own answers, read directly: a recipe that reads them (test_runtime_rules' n_/o_meta_...)
    # now meets the mismatch on the second stand-in too, so it no longer shows one of them gone
    Mutation("stand-in-device", "grader/sandbox/guard.py",
             ((', "device": STAND_IN_DEVICES.read, "get_device": lambda: 0}', "}"),),
             ("tests/sandbox/test_stand_in.py::test_the_stand_in_answers_as_a_gpu[str(device)-meta, guarded]",), "unit"),
    Mutation("stand-in-text", "grader/sandbox/probes.py",
             (("            return _as_on_a_gpu(args[0])", "            return func(*args, **kwargs)"),),
             ("tests/sandbox/test_stand_in.py::test_the_stand_in_answers_as_a_gpu[repr(tensor)-meta, guarded]",), "unit"),
    # issue 19: a CPU constant is not blamed on the mask
    Mutation("constant-device", "grader/checks/diagnosis.py", (('        return "constant-device"', '        return "mask-device"'),),
             ("tests/checks/test_graders.py::test_mutant_loses_points_and_is_diagnosed[constant-device]",), "sandbox"),
    # issue 20: requests' raw-byte tensors keep a view's values; a cached run starts no fork server
    Mutation("request-tensor-order", "grader/sandbox/request_tensors.py",
             (("    flat = tensor.detach().cpu().contiguous().reshape(-1)", "    flat = tensor.detach().cpu().reshape(-1)"),),
             ("tests/sandbox/test_request_tensors.py",), "unit"),
    Mutation("fork-server-when-cached", "grader/sandbox/worker_process.py",
             (("    if report_cache is None:\n        start_fork_server()", "    start_fork_server()"),),
             ("tests/sandbox/test_process_edge.py::test_a_run_the_report_cache_answers_starts_no_fork_server",), "sandbox"),
    Mutation("unused-fork-server-stop", "grader/sandbox/worker_process.py",
             (("            atexit.register(_stop_fork_server_if_unused)  # once, whoever starts the fork server\n", ""),),
             ("tests/sandbox/test_process_edge.py::test_a_process_that_starts_no_worker_leaves_no_fork_server_behind",),
             "sandbox"),
    Mutation("probe-limit-env", "grader/grade.py",
             (("probe_seconds=probe_seconds_from_env() or Limits.probe_seconds", "probe_seconds=Limits.probe_seconds"),),
             ("tests/sandbox/test_probe_limit.py",), "unit"),
    Mutation("answer-storage-size", "grader/sandbox/answers.py",
             (("            if len(data) != numel * dtype.itemsize:", "            if False:"),),
             ("tests/graph/test_answer_decoder.py",), "unit"),
    # issue 21: a broken rule is placed as Colab shows cells
    Mutation("rules-gate-place", "grader/rules/__init__.py",
             (("        place = places.place(where, lang)", "        place = f\"line {where['line']}\""),),
             ("tests/handin/test_core_source.py::test_a_broken_rule_in_a_notebook_is_placed_by_the_cell_that_defines_the_graded_name",),
             "unit"),
    Mutation("release-gate", "grader/build/release_solutions.py", (("if problems and not force:", "if False:"),),
             ("tests/nbgrader_plugins/test_nbgrader_release_solutions.py",), "e2e"),
    # issue 44: `.venv/bin/nbgrader` on a new gradebook finds `alembic` without .venv/bin on PATH
    Mutation("nbgrader-tools-on-path", "nbgrader_config.py", (("\nput_nbgrader_tools_on_path()\n", "\n"),),
             ("tests/architecture/test_docs_commands.py::test_the_pages_commands_run_as_printed[lms.md]",), "e2e"),
    # issue 18: nothing leaks, a bounded trusted side, one reading of a notebook
    Mutation("environment-scrub", "grader/sandbox/fork_server.py",
             (("if name in KEPT_NAMES or name.startswith(KEPT_PREFIXES)}", "if True}"),),
             ("tests/sandbox/test_no_secret_in_worker.py",), "sandbox"),
    Mutation("memfd-refused", "grader/sandbox/syscall_filter.py",
             (('    "memfd_create", "memfd_secret",\n', ""),),
             ("tests/sandbox/test_confinement_hostile.py::test_system_calls_attention_code_never_needs_are_refused",),
             "sandbox"),
    Mutation("parent-cpu-budget", "grader/handin/parent_budget.py", (("if spent > self.cpu_seconds:", "if False:"),),
             ("tests/handin/test_parent_bounded.py::test_a_hand_in_over_the_parents_cpu_budget_gets_a_row_that_says_so",),
             "sandbox"),
    Mutation("lone-surrogates", "grader/handin/clean_text.py", (('_SURROGATES = "\\ud800-\\udfff"', '_SURROGATES = ""'),),
             ("tests/handin/test_output_survives_text.py",), "sandbox"),
    Mutation("reading-by-version", "grader/handin/notebook_version.py", (("if major in (2, 3):", "if False:"),),
             ("tests/handin/test_one_reading_of_a_notebook.py",), "unit"),
    Mutation("feedback-url-check", "grader/nbgrader/sanitize_feedback.py",
             (("if url and not SAFE_URL.match(url):", "if False:"),),
             ("tests/nbgrader_plugins/test_feedback_page_sanitizer.py",), "unit"),
    Mutation("cache-key", "grader/report/cache.py",
             (("check_ids, dataclasses.asdict(limits), cuda,", "check_ids, cuda,"),),
             ("tests/report/test_core_report_cache.py",), "unit"),
    # issue 28: points from the graph the parent re-runs on inputs the worker never saw
    Mutation("graph-decoys", "grader/checks/student_code.py",
             (("_decoys(sent, self._drawn_decoys) if probe in GRAPHED else sent", "sent"),),
             ("tests/sandbox/test_probe_answers_reused.py::test_a_message_sent_once_is_graded_again_on_each_requests_own_tensors",
              "tests/graph/test_graph_integrity.py::test_a_recipe_gains_nothing_with_every_worker_rule_off"
              "[computed_outside_the_recorder]"), "sandbox"),
    # issue 42: the decoys a grading drew are reused within that grading only
    Mutation("decoys-per-grading", "grader/checks/student_code.py",
             (("self._drawn_decoys: dict[tuple, list[torch.Tensor]] = {}",
               "self._drawn_decoys = _decoys.__dict__.setdefault('drawn', {})"),),
             ("tests/sandbox/test_probe_answers_reused.py::test_a_second_grading_draws_its_own_decoys",), "unit"),
    Mutation("graph-forbidden-operators", "grader/graph/ops.py",
             (("    if attention_kernel(operator_):\n        return \"forbidden\"\n", ""),),
             ("tests/graph/test_graph_checker.py::test_the_built_in_attention_is_forbidden_in_every_form",
              "tests/graph/test_graph_integrity.py::test_a_recipe_gains_nothing_with_every_worker_rule_off"
              "[built_in_by_closure]"), "unit"),
    # issue 43: operators by property, not by name
    Mutation("graph-attention-kernels-by-rule", "grader/graph/ops.py",
             (("    if any(roles <= names for roles in ATTENTION_OPERANDS) or names & HEAD_COUNTS:\n        return True\n",
               ""),),
             ("tests/graph/test_operator_rule.py::test_every_built_in_attention_kernel_torch_exposes_is_forbidden_by_the_rule",), "unit"),
    Mutation("graph-attention-safe-softmax-by-behaviour", "grader/graph/ops.py",
             (("    return _zeroes_masked_rows(operator_)", "    return False"),),
             ("tests/graph/test_operator_rule.py::test_every_built_in_attention_kernel_torch_exposes_is_forbidden_by_the_rule",), "unit"),
    Mutation("graph-value-sized-op-refused", "grader/graph/ops.py",
             (("if any(tag in tags for tag in VALUE_SIZED_TAGS) and packet not in bounds.BOUNDED_BY_VALUES:",
               "if False:"),),
             ("tests/graph/test_operator_rule.py::test_an_unbounded_operator_in_a_graph_is_refused_before_it_runs",), "unit"),
    Mutation("graph-no-meta-kernel-refused", "grader/graph/ops.py",
             (("    if not on_meta and packet not in bounds.DATA_DEPENDENT:", "    if False:"),),
             ("tests/graph/test_operator_rule.py::test_what_cannot_be_bounded_is_refused_with_its_reason",), "unit"),
    Mutation("graph-caller-strides-refused", "grader/graph/ops.py",
             (("any(r.alias_info is None for r in schema.returns)", "False"),),
             ("tests/graph/test_graph_checker.py::test_operators_off_the_list_are_not_run",), "unit"),
    Mutation("graph-allow-list", "grader/graph/ops.py",
             (('return "unsupported" if unbounded(operator_, target.split(".")[1]) else "allowed"', 'return "allowed"'),),
             ("tests/graph/test_graph_checker.py::test_operators_off_the_list_are_not_run",), "unit"),
    Mutation("graph-resize-zeroes-growth", "grader/graph/run.py",
             (("        _zero_past(args[0].untyped_storage(), grown)", "        pass"),),
             ("tests/graph/test_operator_rule.py::test_resize_grows_an_owned_tensor_within_the_bound_and_zeroes_what_it_adds",), "unit"),
    Mutation("graph-size-bound", "grader/graph/run.py",
             (("        planned = self.planned(node.target, args, kwargs)\n", "        planned = bounds.Plan((), 0.0, 0)\n"),),
             ("tests/graph/test_graph_checker.py::test_a_node_that_would_allocate_past_the_bound_is_refused_before_it_runs",),
             "unit"),
    Mutation("graph-stride-check", "grader/graph/bounds.py",
             (("    if elements and (low < 0 or high >= storage_elements):", "    if False:"),),
             ("tests/graph/test_graph_bounds.py::test_strides_past_the_storage_are_refused_before_a_view_is_made",
              "tests/graph/test_graph_bounds.py::test_every_view_lies_inside_the_storage_it_views"), "unit"),
    Mutation("graph-output-shape-bound", "grader/graph/bounds.py",
             (("    for made in planned.made:\n        if made is not None:\n            check_made(target, made)\n", ""),),
             ("tests/graph/test_graph_bounds.py::test_an_index_larger_than_the_broadcast_of_its_inputs_is_refused_before_it_runs",),
             "unit"),
    Mutation("graph-constant-bound", "grader/graph/bounds.py",
             (("        if math.prod(shape) > MAX_ELEMENTS or total > MAX_ELEMENTS:", "        if False:"),),
             ("tests/graph/test_graph_bounds.py::test_a_valueless_constant_of_any_shape_is_refused_before_zeros_are_made",
              "tests/graph/test_graph_bounds.py::test_module_state_without_values_is_refused_before_zeros_are_made"),
             "unit"),
    Mutation("graph-cost-bound", "grader/graph/run.py",
             (("        if self.operations > MAX_GRAPH_OPERATIONS:", "        if False:"),),
             ("tests/graph/test_graph_bounds.py::test_a_complex_product_over_the_graphs_cost_is_refused_before_it_runs",),
             "unit"),
    Mutation("graph-memory-bound", "grader/graph/run.py",
             (("        if self.allocated > MAX_GRAPH_BYTES:", "        if False:"),),
             ("tests/graph/test_graph_bounds.py::test_a_graph_whose_results_together_pass_its_memory_is_refused_before_the_node_that_would_cross_it",),
             "unit"),
    Mutation("budget-overrun-too-costly", "grader/grade.py",
             (("            except (SandboxUnavailable, parent_budget.OverBudget):", "            except SandboxUnavailable:"),),
             ("tests/graph/test_graph_bounds.py::test_a_hand_in_over_its_budget_inside_a_check_is_too_costly_not_an_internal_error",),
             "unit"),
    Mutation("graph-uninitialised-zeroed", "grader/graph/run.py",
             (("        result.untyped_storage().fill_(0)  # the whole storage: strides with gaps own bytes no element shows\n",
               "        pass\n"),),
             ("tests/graph/test_graph_checker.py::test_uninitialised_memory_never_reaches_a_result",), "unit"),
    Mutation("graph-devices-followed", "grader/graph/run.py",
             (("            if strays and any(device != \"cpu\" for device, _ in operands):",
               "            if False:"),),
             ("tests/graph/test_graph_checker.py::test_a_cpu_mask_meets_inputs_on_the_stand_in_and_fails_as_on_a_gpu",
              "tests/checks/test_graders.py::test_mutant_loses_points_and_is_diagnosed[mask-device]"), "unit"),
    Mutation("graph-input-copies", "grader/graph/run.py",
             (("runner.run([t.clone() for t in inputs],", "runner.run(inputs,"),),
             ("tests/graph/test_graph_checker.py::test_the_parents_inputs_are_never_edited_by_a_graph",), "unit"),
    Mutation("graph-budget-read", "grader/graph/run.py", (("            parent_budget.check()\n", "            pass\n"),),
             ("tests/graph/test_graph_checker.py::test_a_long_graph_is_stopped_by_the_submissions_budget_while_it_runs",),
             "unit"),
    Mutation("graph-decoded-key", "grader/graph/answers.py",
             (("    key = (id(text), len(constants))", "    key = id(text)"),),
             ("tests/sandbox/test_probe_answers_reused.py::test_a_decoded_graph_is_never_taken_for_an_answer_with_other_constants",),
             "unit"),
    Mutation("message-key-values", "grader/checks/student_code.py",
             (("            return (type(value).__name__, repr(value))", "            return ()"),),
             ("tests/sandbox/test_probe_answers_reused.py",), "unit"),
    Mutation("stand-in-cuda-queries", "grader/sandbox/stand_in_cuda.py",
             (("            return ANSWERED[key](*args, **kwargs)\n", "            return self.originals[key](*args, **kwargs)\n"),),
             ("tests/sandbox/test_stand_in.py",), "unit"),
    Mutation("stand-in-format-fields", "grader/sandbox/guard.py",
             (("            return _GuardedFormat(self, obj, name)", "            pass"),),
             ("tests/sandbox/test_stand_in.py",), "unit"),
    # issue 41: a device point only from evidence; code generated from the student's strings is the student's
    Mutation("inconclusive-is-not-a-pass", "grader/checks/common.py", (("    if unjudged:\n", "    if False:\n"),),
             ("tests/checks/test_graders.py::test_mutant_loses_points_and_is_diagnosed[device-not-judged]",
              "tests/graph/test_graph_integrity.py::test_a_recipe_gains_nothing_with_every_worker_rule_off"
              "[device_judged_nowhere_by_an_unused_masked_select]"), "sandbox"),
    # second red-team pass: an honest boolean-mask index, operators raising on a stand-in, a storage's own answers
    Mutation("bool-mask-index-bound", "grader/graph/bounds.py",
             (("    return _sized_by_a_mask(packet, args, planned)\n", "    return planned\n"),),
             ("tests/graph/test_graph_bounds.py::test_an_index_by_a_boolean_mask_runs_with_fewer_results_than_its_bound",),
             "unit"),
    Mutation("bool-mask-index-on-a-stand-in", "grader/sandbox/tracing.py",
             (("            result = self._indexed_by_a_mask(func, args, kwargs)\n", "            result = None\n"),),
             ("tests/checks/test_graders.py::test_correct_style_gets_full_marks[bool_mask_index_debug_value]",),
             "sandbox"),
    Mutation("stand-in-raised-is-not-a-pass", "grader/sandbox/graph_probes.py",
             (("    if recorder.raised is not None and device in STAND_INS:", "    if False:"),),
             ("tests/graph/test_graph_integrity.py::test_a_recipe_gains_nothing_with_the_worker_rules_in_place"
              "[stand_ins_told_by_an_operator_that_raises]",), "sandbox"),
    Mutation("storage-as-on-a-gpu", "grader/sandbox/guard.py",
             (("        if name in STORAGE_AS_ON_A_GPU and on_a_stand_in(obj):\n", "        if False:\n"),),
             ("tests/graph/test_graph_integrity.py::test_a_recipe_gains_nothing_with_the_worker_rules_in_place"
              "[stand_ins_told_by_is_shared]",), "sandbox"),
    Mutation("loop-count-falls", "grader/checks/common.py",
             (("if abs(n - counts[base]) >= LOOP_MARGIN]", "if n - counts[base] >= LOOP_MARGIN]"),),
             ("tests/graph/test_graph_integrity.py::test_a_recipe_gains_nothing_with_the_worker_rules_in_place"
              "[mha_head_loop_only_at_few_heads]",), "sandbox"),
    Mutation("local-scalar-root", "grader/sandbox/tracing.py",
             (("        read = self.leaving is not None and reads_values(func)\n", "        read = False\n"),),
             ("tests/sandbox/test_values_leaving_at_the_root.py",), "unit"),
    # a value read on a stand-in is answered as the graph so far gives it on the CPU copies of the inputs
    Mutation("stand-in-value-replay", "grader/sandbox/graph_probes.py",
             (("        answers = stand_in_values.StandInValues(known, STAND_INS[device], unknown)\n", "        answers = None\n"),),
             ("tests/rules/test_static_pass_agrees_with_run_time.py::test_the_static_pass_refuses_nothing_the_run_time_allows"
              "[forgery/honest_einops_typing_prints]",
              "tests/graph/test_graph_integrity.py::test_a_recipe_gains_nothing_with_every_worker_rule_off"
              "[mask_moved_by_a_value_read_on_the_stand_in]"), "sandbox"),
    Mutation("stand-in-value-without-values", "grader/sandbox/stand_in_values.py",
             (("        if any(whole[n][0] == \"constant\" and _valueless(", "        if False and any(whole[n][0] == \"constant\" and _valueless("),),
             ("tests/sandbox/test_values_leaving_at_the_root.py::test_a_value_resting_on_a_constant_without_values_is_not_answered",),
             "unit"),
    Mutation("stand-in-value-replays-bound", "grader/sandbox/stand_in_values.py",
             (("        if self.replays >= MAX_REPLAYS:\n", "        if False:\n"),),
             ("tests/sandbox/test_values_leaving_at_the_root.py::test_sixteen_reads_are_answered_and_the_seventeenth_leaves_the_graph",),
             "unit"),
    # a copy of a stand-in's tensor to the CPU is answered as a real CPU tensor, recorded as the move it is
    Mutation("stand-in-cpu-copy-moves", "grader/sandbox/tracing.py",
             (("                return answered\n            if not copy:",
               "                return args[0] if copy else answered\n            if not copy:"),),
             ("tests/sandbox/test_values_leaving_at_the_root.py::"
              "test_an_output_copied_to_the_cpu_is_on_the_cpu_where_the_parent_runs_the_graph",
              "tests/checks/test_graders.py::test_mutant_loses_points_and_is_diagnosed[hardcoded-device__4]"), "sandbox"),
    # checks held behind a values or shapes check that met an operator the grader cannot bound say the grader's limit
    Mutation("unsupported-op-held-wording", "grader/checks/common.py",
             (('    if "unsupported-op" in values.mistakes:', "    if False:"),
              ('    if shapes is not None and "unsupported-op" in shapes.mistakes:', "    if False:")),
             ("tests/checks/test_unsupported_op_cost.py::"
              "test_checks_held_behind_an_unsupported_operator_say_the_grader_is_the_limit",), "sandbox"),
    Mutation("stand-in-cuda-all", "grader/sandbox/stand_in_cuda.py",
             (("        if self.asked is not None:\n            return\n", "        return\n"),),
             ("tests/sandbox/test_stand_in.py::test_every_other_cuda_call_from_student_code_on_a_stand_in_is_refused_and_counted",),
             "unit"),
    # the call boundary: inside a probe's call into student code, whatever frame carries a request, it is the student's
    Mutation("audit-call-boundary", "grader/sandbox/audit.py",
             (("    return call_boundary.on_the_students_behalf()\n", "    return False\n"),),
             ("tests/sandbox/test_audit_call_boundary.py::"
              "test_a_file_read_by_a_pre_hook_of_c_callables_inside_the_students_call_is_refused",), "sandbox"),
    Mutation("audit-tree-only-parse", "grader/sandbox/audit.py",
             (('\n                                       or event == "compile" and caller.f_code.co_filename.endswith(TREE_ONLY))',
               ")"),),
             ("tests/sandbox/test_audit_call_boundary.py::test_a_logging_handlers_traceback_under_student_code_is_not_refused",),
             "sandbox"),
    # a relay that raises is also seen where its error passes a student's frame: the boundary alone holds one that does not
    Mutation("stand-in-trampoline", "grader/sandbox/stand_in_cuda.py",
             (("        return call_boundary.on_the_students_behalf() and not self.beside_a_gpu\n", "        return False\n"),),
             ("tests/sandbox/test_call_boundary.py::test_a_gpu_request_carried_for_the_student_is_refused_and_counted_on_a_stand_in"
              "[memory relayed by functools-meta]",), "unit"),
    Mutation("stand-in-cudnn-answered", "grader/sandbox/stand_in_cuda.py",
             (('    "torch.backends.cudnn.is_available": lambda: True,\n', ""),),
             ("tests/sandbox/test_stand_in.py::test_the_stand_in_answers_as_a_gpu[backends.cudnn.is_available-meta, guarded]",
              "tests/graph/test_graph_integrity.py::test_a_recipe_gains_nothing_with_every_worker_rule_off"
              "[stand_ins_told_by_cudnn]"), "sandbox"),
    Mutation("stand-in-generator-counted", "grader/sandbox/stand_in_cuda.py",
             (("                    sys.settrace(self._trace)\n", "                    pass\n"),),
             ("tests/sandbox/test_call_boundary.py::test_a_gpu_request_carried_for_the_student_is_refused_and_counted_on_a_stand_in"
              "[a generator on cuda-meta]",
              "tests/graph/test_graph_integrity.py::test_a_recipe_gains_nothing_with_every_worker_rule_off"
              "[stand_ins_told_by_a_cuda_generator]"), "sandbox"),
    Mutation("cpu-beside-a-gpu", "grader/checks/common.py",
             (("list(STAND_INS) + [CPU_BESIDE_A_GPU]:", "list(STAND_INS):"),),
             ("tests/graph/test_graph_integrity.py::test_a_recipe_gains_nothing_with_every_worker_rule_off"
              "[cuda_if_available_in_forward]",), "sandbox"),
    # issue 41: torch.cuda answers as on one GPU from the student's first line, not from the probe's call only
    Mutation("stand-in-world-at-load", "grader/sandbox/worker.py",
             (("    other_machines = OtherMachines(source, guard, answered_as_a_gpu=not use_cuda)\n",
               "    other_machines = OtherMachines(source, guard, answered_as_a_gpu=False)\n"),),
             ("tests/graph/test_graph_integrity.py::test_a_recipe_gains_nothing_with_every_worker_rule_off"
              "[mask_device_read_from_cuda_at_module_load]",
              "tests/graph/test_graph_integrity.py::test_a_recipe_gains_nothing_with_every_worker_rule_off"
              "[mask_device_read_from_cuda_in_a_default_argument]",
              "tests/sandbox/test_gpu_world_from_the_first_line.py"), "sandbox"),
    # issue 41: each world of another machine has its own load of the file, kept for its later calls, and what its
    # load is refused is charged to both parts
    Mutation("world-state-per-machine", "grader/sandbox/worker.py",
             (("            self.worlds[device] = World(self.source, self.guard, self.answered_as_a_gpu)\n"
               "        return self.worlds[device]\n",
               "            self.worlds[device] = next(iter(self.worlds.values()), None) or World(\n"
               "                self.source, self.guard, self.answered_as_a_gpu)\n"
               "        return self.worlds[device]\n"),),
             ("tests/sandbox/test_each_world_its_own_module_state.py::"
              "test_what_one_world_kept_at_module_level_no_other_world_meets",), "sandbox"),
    Mutation("world-load-kept", "grader/sandbox/worker.py",
             (("    if device in other_machines.worlds:\n        return other_machines.worlds[device], None\n", ""),
              ("        if device not in self.worlds:\n            self.worlds[device] = World(",
               "        if True:\n            self.worlds[device] = World(")),
             ("tests/sandbox/test_each_world_its_own_module_state.py::"
              "test_what_one_world_kept_at_module_level_no_other_world_meets",), "sandbox"),
    Mutation("world-load-charged-to-both-parts", "grader/checks/student_code.py",
             (('        self._attribute_refusals(self._parts, loaded.get("refused", []))\n', ""),),
             ("tests/sandbox/test_each_world_its_own_module_state.py::"
              "test_what_a_worlds_load_is_refused_costs_both_parts_as_the_plain_loads_does",), "sandbox"),
    Mutation("stand-in-world-at-build", "grader/sandbox/graph_probes.py",
             (("        with probes.answered_world(device, lines) as cuda:\n",
               "        with probes.answered_world(\"cpu\", lines) as cuda:\n"),),
             ("tests/graph/test_graph_integrity.py::test_a_recipe_gains_nothing_with_every_worker_rule_off"
              "[mha_mask_device_read_from_cuda_in_init]",), "sandbox"),
    Mutation("generated-code-is-student-code", "grader/sandbox/audit.py",
             (("            note_generated(args[0])\n", "            pass\n"),),
             ("tests/sandbox/test_generated_code_is_student_code.py",), "sandbox"),
    Mutation("generated-code-import", "grader/sandbox/guard.py",
             (("                self.refuse(\"introspection\", \"the name __import__\")  # as in the submission's own lines\n",
               "                pass\n"),),
             ("tests/sandbox/test_generated_code_is_student_code.py",), "sandbox"),
    # issue 41, red team 2: dataclasses' text through the rewrite, classes from data, library formats, C++ file opens
    Mutation("generated-code-rewrite", "grader/sandbox/generated_code.py",
             (("    dataclasses.exec = guarded_exec", "    pass"),),
             ("tests/sandbox/test_generated_code_is_student_code.py::"
              "test_code_generated_from_a_students_strings_is_refused_as_the_students_own[rewritten]",), "sandbox"),
    Mutation("class-from-data", "grader/sandbox/guard.py",
             ((", __build_class__=self.build_class, type=self.class_maker(type))", ", __build_class__=self.build_class)"),),
             ("tests/sandbox/test_generated_code_is_student_code.py",), "sandbox"),
    Mutation("library-format-fields", "grader/sandbox/library_formats.py",
             (("    logging.StrFormatStyle._format = logging_brace_style\n", ""),),
             ("tests/sandbox/test_library_formats.py::test_a_template_formatted_by_a_library_reads_through_the_guard",),
             "sandbox"),
    Mutation("torch-file-openers", "grader/sandbox/guard.py",
             (("        if name in FILE_OPENING_METHODS and _torch_object(obj):\n", "        if False:\n"),),
             ("tests/sandbox/test_files_torch_opens.py",), "sandbox"),
    Mutation("error-message-cap", "grader/sandbox/probes.py", (("MAX_MESSAGE = 600\n", "MAX_MESSAGE = 4000\n"),),
             ("tests/sandbox/test_files_torch_opens.py::test_an_error_message_carries_at_most_600_characters_into_the_report",),
             "sandbox"),
    # issue 29: documented values pinned as literals; the trusted parent on its own; CI's declared capabilities
    Mutation("float32-tolerance", "grader/checks/common.py",
             (("TOLERANCE = {torch.float32: (1e-5, 1e-4),", "TOLERANCE = {torch.float32: (1e-4, 1e-3),"),),
             ("tests/checks/test_core_reference.py::test_float32_errors_just_inside_pass_and_just_outside_fail[outside]",),
             "unit"),
    Mutation("float32-tolerance-graded", "grader/checks/common.py",
             (("TOLERANCE = {torch.float32: (1e-5, 1e-4),", "TOLERANCE = {torch.float32: (1e-4, 1e-3),"),),
             ("tests/checks/test_tolerance_edges.py"
              "::test_an_error_just_outside_the_float32_tolerance_loses_the_values_points",), "sandbox"),
    Mutation("answer-allow-list", "grader/sandbox/answers.py",
             (('        raise AnswerRefused(f"the global {module}.{name}")  # the scan refused it already',
               "        return super().find_class(module, name)"),),
             ("tests/graph/test_answer_decoder.py::test_the_decoder_alone_refuses_a_global_outside_its_allow_list",), "unit"),
    Mutation("answer-pickle-cap", "grader/sandbox/answers.py",
             (("MAX_PICKLE_BYTES = 16 << 10", "MAX_PICKLE_BYTES = 16 << 20"),),
             ("tests/graph/test_answer_decoder.py::test_the_decoder_alone_refuses_a_pickle_over_16_kib",), "unit"),
    Mutation("feedback-page-csp", "grader/nbgrader/feedback_page_policy.py",
             (("CONTENT_SECURITY_POLICY = (\"default-src 'none';", 'CONTENT_SECURITY_POLICY = ("default-src *;'),),
             ("tests/nbgrader_plugins/test_feedback_page_policy.py",), "unit"),
    Mutation("probe-5d-shape", "grader/checks/sdpa/probing.py",
             (("((4,), 1, 4, 4), ((2, 2, 3), 4, 6, 10), ", "((4,), 1, 4, 4), "),),
             ("tests/checks/test_probed_shapes.py",), "unit"),
    Mutation("course-error-exit-status", "grader/errors.py", (("    exit_code = 3", "    exit_code = 1"),),
             ("tests/sandbox/test_process_edge.py::test_each_failure_of_the_grader_exits_with_its_documented_status",), "unit"),
    Mutation("ci-expects", "tests/support/capabilities.py",
             (("    if capability in expected_capabilities():", "    if False:"),),
             ("tests/architecture/test_ci_expects.py",), "unit"),
    # issue 29: each isolation layer alone, and the numbers the README states for it
    Mutation("seccomp-clone-rule", "grader/sandbox/syscall_filter.py",
             (('    rules.add_rule(refuse, "clone", seccomp.Arg(0, seccomp.MASKED_EQ, CLONE_THREAD, 0))\n', ""),),
             ("tests/sandbox/test_sandbox_refuses_every_call.py::test_the_filter_alone_refuses_every_call_on_its_list",), "sandbox"),
    Mutation("seccomp-layer", "grader/sandbox/confinement.py", (("            syscall_filter.install()", "            pass"),),
             ("tests/sandbox/test_sandbox_refuses_every_call.py::test_the_filter_alone_refuses_every_call_on_its_list",), "sandbox"),
    Mutation("memory-cgroup-headroom", "grader/sandbox/memory_cgroup.py",
             (("OVERHEAD_BYTES = 512 << 20", "OVERHEAD_BYTES = 512 << 40"),),
             (ALONE + "memory_cgroup_alone_gives_a_hand_in_its_limit_and_512_mib_more",
              ALONE + "memory_cgroup_alone_stops_memory_no_other_limit_sees"), "sandbox"),
    Mutation("memory-cgroup-layer", "grader/sandbox/confinement.py", (("memory_cgroup.join(limits.cgroup)", "pass"),),
             (ALONE + "memory_cgroup_alone_stops_memory_no_other_limit_sees",), "sandbox"),
    Mutation("read-only-binds-writable", "grader/sandbox/confinement.py",
             (("MS_BIND | MS_REMOUNT | MS_RDONLY | MS_REC", "MS_BIND | MS_REMOUNT | MS_REC"),),
             (ALONE + "read_only_binds_alone_refuse_a_write_to_every_bound_folder",), "sandbox"),
    Mutation("net-namespace", "grader/sandbox/confinement.py", (('"net": CLONE_NEWNET', '"net": 0'),),
             (ALONE + "network_namespace_alone_keeps_the_host_unreachable",), "sandbox"),
    Mutation("pid-namespace", "grader/sandbox/confinement.py", (('"pid": CLONE_NEWPID', '"pid": 0'),),
             (ALONE + "pid_namespace_alone_leaves_host_processes_out_of_reach",), "sandbox"),
    Mutation("new-root", "grader/sandbox/confinement.py", ((NEW_ROOT, "pass"),),
             (ALONE + "new_root_alone_hides_the_repo_and_the_hosts_files",), "sandbox"),
    Mutation("ipc-namespace", "grader/sandbox/confinement.py", (('"ipc": CLONE_NEWIPC', '"ipc": 0'),),
             (ALONE + "ipc_namespace_alone_hides_the_hosts_message_queues",), "sandbox"),
    # the host name goes with the namespace: set without it, it would rename the machine running the audit
    Mutation("uts-namespace", "grader/sandbox/confinement.py",
             (('"uts": CLONE_NEWUTS', '"uts": 0'), ("libc.sethostname(HOSTNAME, len(HOSTNAME))", "pass")),
             (ALONE + "uts_namespace_alone_gives_the_worker_a_name_of_its_own",), "sandbox"),
    Mutation("uid-drop-alone", "grader/sandbox/confinement.py", (("os.setuid(limits.uid)", "pass"),),
             (ALONE + "uid_drop_alone_takes_roots_powers_away",), "sandbox"),
    Mutation("resource-limits", "grader/sandbox/confinement.py",
             (("resource.setrlimit(getattr(resource, name), (value, value))", "pass"),),
             (ALONE + "resource_limits_alone_cap_memory_file_size_and_open_files",), "sandbox"),
    Mutation("process-limit", "grader/sandbox/confinement.py",
             (('wanted.append(("RLIMIT_NPROC", limits.max_processes))', "pass"),),
             (ALONE + "process_limit_alone_stops_a_bomb_at_64",), "sandbox"),
    Mutation("process-limit-raised", "grader/sandbox/confinement.py",
             (("max_processes: int = 64", "max_processes: int = 128"),),
             (ALONE + "process_limit_alone_stops_a_bomb_at_64",), "sandbox"),
    Mutation("tmpfs-caps", "grader/sandbox/confinement.py",
             (('"size=64m,mode=1777" if capped else "mode=1777"', '"mode=1777"'),
              ('"size=16m,mode=1777" if capped else "mode=1777"', '"mode=1777"')),
             (ALONE + "tmpfs_caps_alone_stop_files_that_are_memory",), "sandbox"),
    Mutation("clean-environment", "grader/sandbox/confinement.py", (("        os.environ.clear()\n", ""),),
             (ALONE + "clean_environment_alone_shows_nothing_of_the_grading_process",), "sandbox"),
    Mutation("layer-switch-outside-suite", "grader/sandbox/worker_process.py",
             (('if layers_off and "pytest" not in sys.modules:', "if False:"),),
             ("tests/sandbox/test_sandbox_layers_alone.py::test_no_grading_outside_the_test_suite_can_switch_a_layer_off",),
             "sandbox"),
    # torch.save's first call imports it: without it, a worker whose uid cannot reach the venv cannot answer
    Mutation("worker-answers-without-venv", "grader/sandbox/worker_process.py",
             (('"torch.nn.functional", "torch.utils.serialization",', '"torch.nn.functional",'),),
             ("tests/sandbox/test_clone_anywhere.py::test_the_tests_run_as_another_uid_pass_in_a_clone_inside_a_private_folder",),
             "sandbox"),
    Mutation("job-uid-share", "grader/sandbox/worker_identity.py",
             (("in_share = (uid - BAND.start) % count == index", "in_share = True"),),
             ("tests/grade_all/test_parallel_jobs.py::test_a_share_hands_out_only_its_own_uids",), "unit"),
    Mutation("job-killed-keeps-rows", "grader/grade_all/parallel.py",
             (("if kills + 1 < KILLS_BEFORE_GIVING_UP:", "if False:"),),
             ("tests/grade_all/test_parallel_jobs.py::"
              "test_a_job_the_kernel_kills_loses_no_row_and_its_item_is_graded_again_in_a_fresh_job",), "unit"),
    # issue 41: a hand-in that ends a job process is never graded again in the command's own process
    Mutation("judge-crash-costs-one", "grader/grade_all/parallel.py",
             (("if kills + 1 < KILLS_BEFORE_GIVING_UP:", "if False:"),
              ("results[position] = killed(item)", "results[position] = work(item)")),
             ("tests/grade_all/test_parallel_jobs.py::test_an_item_that_ends_two_job_processes_gets_its_row_and_no_third_try",),
             "unit"),
    # issue 41: graphs run in the judge, not in the parent; the judge is confined
    Mutation("judge-runs-the-graphs", "grader/checks/student_code.py",
             (("judged_runs = self._ensure_judge().judge_many(probe.value, runs, left=self._remaining())",
               "judged_runs = [__import__('grader.judge.serve', fromlist=['Court']).Court().reply("
               "probe.value, {'traced': traced, 'answer_id': 0, 'fields': fields}) for traced, fields in runs]"),),
             ("tests/judge/test_a_graph_that_ends_the_judge.py",), "sandbox"),
    Mutation("judge-confinement", "grader/judge/serve.py",
             (("    missing = confine(limits, keep_fd=keep_fd, cuda=use_cuda, layers_off=layers_off)\n"
               "    return missing + confine_judge(cpu_seconds, judge_layers_off)", "    return []"),),
             ("tests/judge/test_judge_confinement.py",), "sandbox"),
    Mutation("judge-cpu-limit", "grader/judge/confinement.py",
             (("resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))", "pass"),),
             ("tests/judge/test_judge_confinement.py::test_a_graph_that_keeps_the_judge_computing_is_ended_by_its_cpu_limit",),
             "sandbox"),
    Mutation("judge-no-sockets", "grader/judge/confinement.py",
             (("            _refuse_sockets()", "            pass"),),
             ("tests/judge/test_judge_confinement.py::test_a_graph_in_the_judge_cannot_open_a_socket",), "sandbox"),
    Mutation("job-shared-fork-server", "grader/sandbox/worker_process.py",
             (("    server.ensure_running = ensure_running\n", ""),),
             ("tests/grade_all/test_parallel_jobs.py::test_every_job_forks_its_workers_from_the_commands_fork_server",),
             "unit"),
    # issue 44: grades on the LMS column's own scale; a roster filters every layout; a class download told by its members
    Mutation("lms-column-scale", "grader/lms/grade_sheets.py",
             (("        if self.lms_maximum is not None:\n            value = value *", "        if False:\n            value = value *"),),
             ("tests/lms/test_lms_grade_sheets.py::test_grades_are_written_on_the_lms_columns_own_scale",), "unit"),
    Mutation("roster-filter-student-id", "grader/nbgrader/lms_collector.py",
             (("            if student not in self.roster_table.by_student:", "            if False:"),),
             ("tests/lms/test_lms_collectors.py::test_a_student_id_file_the_roster_does_not_know_is_left_out_and_said",),
             "unit"),
    Mutation("class-download-by-members", "grader/nbgrader/safe_extractor.py",
             (("        elif owner is not None and (layout := self.class_download_by_members(path, stem)):",
               "        elif False:"),),
             ("tests/lms/test_lms_zip_collect.py::test_a_moodle_download_named_with_an_underscore_is_the_class_not_one_student",),
             "e2e"),
    # issue 44: a verified fix's code stays off feedback pages before the course's day; the plugin writes no cache
    Mutation("feedback-fix-code-withheld", "grader/nbgrader/withhold_fix_code.py",
             (("        if not self.until or datetime.date.today() >= datetime.date.fromisoformat(self.until):",
               "        if True:"),),
             ("tests/nbgrader_plugins/test_feedback_fix_code.py::"
              "test_before_the_day_the_page_gives_the_line_and_the_points_but_not_the_code",), "unit"),
    Mutation("plugin-cache-blocked", "grader/pytest_plugin.py",
             (("            early_config.pluginmanager.set_blocked(name)", "            pass"),),
             ("tests/student/test_pytest_plugin_leaves_folder.py",), "sandbox"),
    # issue 41: loops and dropout from the graph, secret inputs
    # the first dimension (Part 2's batch) is never grown
    Mutation("loop-grows-every-dim", "grader/checks/common.py",
             (("    return [[dict(start)], [{**start, name: small[name]} for name in names],\n"
               "            [{**start, name: next(drawn)} for name in names]]",
               "    return [[dict(start)], [{**start, name: small[name]} for name in names[1:]],\n"
               "            [{**start, name: next(drawn)} for name in names[1:]]]"),),
             ("tests/graph/test_graph_integrity.py::test_a_recipe_gains_nothing_with_every_worker_rule_off"
              "[mha_loop_over_samples]",), "sandbox"),
    Mutation("loop-grown-past-padding", "grader/checks/common.py", (("LOOP_GROWN = range(128, 144)\n", "LOOP_GROWN = range(8, 9)\n"),),
             ("tests/checks/test_checks_common.py::test_a_loop_padded_to_any_length_is_caught_whichever_dim_it_runs_over",
              "tests/graph/test_graph_integrity.py::test_a_recipe_gains_nothing_with_every_worker_rule_off"
              "[mha_head_loop_padded_to_eight]"), "sandbox"),
    Mutation("dropout-own-pattern", "grader/checks/mha/state.py",
             (("    if seen in LAYER_PATTERNS[layer]:\n", "    if True:\n"),),
             ("tests/graph/test_graph_integrity.py::test_a_recipe_gains_nothing_with_every_worker_rule_off"
              "[resid_dropout_faked_by_noise]",), "sandbox"),
    # issue 41 route 7: each layer's pattern read off a probe of its own again, at weights no other probe has
    # (wq = wk = 0, wv = wo = I), which tensor operations in the graph can recognise on the judge
    Mutation("dropout-pattern-from-the-graded-runs", "grader/checks/mha/state.py",
             (("        problem = _own_pattern(layer, trained[layer], plain_eval, x, weights, heads, ctx.seed(3))\n",
               "        own = {n: torch.eye(dim) if n in ('wv', 'wo') else torch.zeros(dim, dim) for n in PROJECTIONS}\n"
               "        other = next(name for name in DROPOUTS if name != layer)\n"
               "        runs, problem = run(ctx, model_args(dim, heads, max_len, dropout=0.5), [dict(x, mode='eval'), "
               "dict(x, mode='train', seed=ctx.seed(3))], True, doing, weights=own, dropout_p={layer: 0.5, other: 0.0})\n"
               "        problem = problem or _own_pattern(layer, out_tensor(runs[1]), out_tensor(runs[0]), x, own, heads, "
               "ctx.seed(3))\n"),),
             ("tests/graph/test_graph_integrity.py::test_a_recipe_gains_nothing_with_the_worker_rules_in_place"
              "[resid_dropout_applied_only_at_the_pattern_probes_weights]",
              "tests/graph/test_graph_integrity.py::test_a_recipe_gains_nothing_with_every_worker_rule_off"
              "[resid_dropout_applied_only_at_the_pattern_probes_weights]"), "sandbox"),
    # issue 41: plain values that tell a CPU-only build from a GPU build (torch.version.cuda, has_magma, ...) read as
    # this build's while code runs on a stand-in
    Mutation("stand-in-build-values", "grader/sandbox/stand_in_cuda.py",
             (("            with self.build_values.taken_out():\n", "            with contextlib.nullcontext():\n"),),
             ("tests/sandbox/test_stand_in_build.py",
              "tests/graph/test_graph_integrity.py::test_a_recipe_gains_nothing_with_the_worker_rules_in_place"
              "[stand_ins_told_by_torch_version_cuda]"), "sandbox"),
    # the same values read through the guard (every attribute student code names, while the rules are on) and at the
    # GPU-world load: the guard's frame taken for the reader, as if the grader read for itself
    Mutation("stand-in-build-values-through-the-guard", "grader/sandbox/stand_in_cuda.py",
             (("        while frame is not None and frame.f_code.co_filename.startswith(NOT_WATCHED[1]):\n"
               "            frame, relayed_by_the_grader = frame.f_back, True\n", ""),),
             ("tests/graph/test_graph_integrity.py::test_a_recipe_gains_nothing_with_the_worker_rules_in_place"
              "[stand_ins_told_by_cuda_default_generators]",), "sandbox"),
    # the grader's own reads inside a student's call answered as the student's (the stand-in's values leak into the
    # grader's bookkeeping)
    Mutation("stand-in-build-values-not-for-the-grader", "grader/sandbox/stand_in_cuda.py",
             (("or (not relayed_by_the_grader and self._in_the_boundary())", "or self._in_the_boundary()"),),
             ("tests/sandbox/test_stand_in_build.py::"
              "test_the_graders_own_code_keeps_this_builds_values_inside_a_students_call",), "unit"),
    # issue 41 route 9: the judge waits a probe's seconds per reply whatever the submission has left
    Mutation("judge-wait-within-the-submissions-budget", "grader/checks/student_code.py",
             (("judge_many(probe.value, runs, left=self._remaining())", "judge_many(probe.value, runs)"),),
             ("tests/judge/test_a_graph_that_ends_the_judge.py::test_the_judge_never_waits_past_what_the_submission_has_left",),
             "sandbox"),
    # issue 43: whether a module calls attn_dropout is a fact of its code, whether or not its values are right
    Mutation("dropout-use-judged-with-wrong-values", "grader/checks/mha/state.py",
             (('    return layer == DROPOUTS[0] and values is not None and not values.passed \\\n',
               '    return False and values is not None and not values.passed \\\n'),),
             ("tests/checks/test_compound_and_dtype_verdicts.py::test_each_reconstruction_gets_its_score_and_exactly_its_ids"
              "[mutants/wrong-input__7]",), "sandbox"),
    # issue 41, red team 3: a student's exception text quoted with its own line breaks writes lines of the report
    Mutation("student-error-quoted-on-one-line", "grader/checks/diagnosis.py",
             (('    return " ⏎ ".join(line for line in said.splitlines() if line.strip())[:limit]\n',
               "    return said[:limit]\n"),),
             ("tests/handin/test_untrusted_input.py::test_a_students_exception_text_cannot_write_a_line_of_the_report",),
             "sandbox"),
    # issue 41 route 9: every elementwise operator at one flat weight per element, whatever series it evaluates
    Mutation("elementwise-series-weights", "grader/graph/costs.py",
             ((' * _series_weight(packet.rstrip("_"), operands)\n', "\n"),),
             ("tests/graph/test_graph_bounds.py::"
              "test_a_chain_of_elementwise_series_within_the_old_flat_estimate_is_refused_before_it_runs",), "unit"),
    # red team 3 route 7: every regrade of the fix search on a clock of its own (95 s and 140 s for one hand-in)
    Mutation("fix-search-in-the-hand-ins-budget", "grader/grade.py",
             (("        if self.left() <= 0:\n            raise fixes.OutOfTime()\n", ""),
              ("            return self._cached_report(copy, None, remaining=self.left)\n",
               "            return self._cached_report(copy, None)\n"),
              ("self._cached_report(copy, None, remaining=self.left, checks=run)",
               "self._cached_report(copy, None, checks=run)")),
             ("tests/fixes/test_fix_search_budget.py",), "sandbox"),
    # a report read from the cache was free: the fix search after it got the whole budget, unlike the run it stands for
    Mutation("cached-report-charges-its-seconds", "grader/grade.py",
             (("        self.started -= seconds  # set by report() or, for a regrade, by its left()\n", ""),),
             ("tests/report/test_core_report_cache.py::test_a_cached_report_costs_the_budget_the_seconds_it_took",),
             "unit"),
    # issue 42: a fix's regrade runs only the parts its edit can reach, and keeps the original's verdicts for the others
    Mutation("regrade-runs-the-parts-an-edit-reaches", "grader/grade.py",
             (("        reached = edit_reach.parts_reached(self.submission.source, copy.source, self.submission.exercise.graded_name)\n",
               "        reached = set(self.submission.exercise.part_ids)\n"),),
             ("tests/fixes/test_regrade_reach.py::test_a_fixs_regrade_runs_the_part_it_edits_and_reports_what_a_full_"
              "regrade_reports",), "sandbox"),
    Mutation("edit-reach-follows-callers", "grader/fixes/reach.py",
             (("        pending.extend(uses[current])\n", ""),),
             ("tests/fixes/test_regrade_reach.py::test_an_edit_reaches_every_part_that_can_call_it",), "unit"),
    Mutation("edit-reach-code-run-at-load", "grader/fixes/reach.py",
             (("    if edited & at_load:\n        return every\n", ""),),
             ("tests/fixes/test_regrade_reach.py::test_an_edit_that_runs_at_load_or_cannot_be_read_reaches_every_part",),
             "unit"),
    # red team of issue 42: state one part writes into (a module-level dict) and the other reads, with no call between
    Mutation("edit-reach-shared-state", "grader/fixes/reach.py",
             (("        uses.setdefault(target, set()).update(name for name, read in reads.items() if target in read)\n",
               "        pass\n"),),
             ("tests/fixes/test_regrade_reach_shared_state.py",), "sandbox"),
    Mutation("regrade-splice-takes-the-fresh-part", "grader/report/json_report.py",
             (('checks.append(fresh.get(check["id"], check) if check["part"] in parts else check)',
               "checks.append(check)"),),
             ("tests/fixes/test_regrade_reach.py::test_a_fixs_regrade_runs_the_part_it_edits_and_reports_what_a_full_"
              "regrade_reports",), "sandbox"),
    # issue 42: each world's load of the same text compiled its guarded code again
    Mutation("worlds-compile-once", "grader/sandbox/worker.py",
             (("            code = _COMPILED.get(key) or _COMPILED.setdefault(key, compiled(statement, guard, flags, "
               "SUBMISSION_FILE))\n", "            code = compiled(statement, guard, flags, SUBMISSION_FILE)\n"),),
             ("tests/sandbox/test_worlds_compile_once.py",), "unit"),
    # red team 3 route 8: windows, convolutions and decompositions priced as the elements they touch
    Mutation("superlinear-operator-work", "grader/graph/costs.py",
             (("    work = _superlinear(packet, args, kwargs, operands, out)\n", "    work = None\n"),),
             ("tests/graph/test_graph_bounds.py::"
              "test_an_operator_whose_work_outgrows_its_elements_is_refused_before_it_runs[max_pool1d]",
              "tests/judge/test_a_graph_that_ends_the_judge.py::"
              "test_a_pooling_window_past_the_cost_bound_is_refused_before_the_judge_runs_it"), "sandbox"),
    Mutation("secret-seed", "grader/checks/__init__.py",
             (('manual_seed(grading_secret.seed(self.secret, "inputs", label))', "manual_seed(label)"),),
             ("tests/checks/test_secret_inputs.py::test_two_gradings_draw_other_inputs_and_one_grading_the_same_inputs_each_time",
              "tests/graph/test_graph_integrity.py::test_a_recipe_gains_nothing_with_every_worker_rule_off"
              "[lookup_table_of_the_parents_inputs]"), "sandbox"),
    # the device, op-count and dropout probes back at shapes written in the grader (the first of each range)
    Mutation("probe-shapes-secret", "grader/checks/__init__.py",
             (("return tuple(draw.choice(choice) for choice in choices)", "return tuple(choice[0] for choice in choices)"),),
             ("tests/checks/test_secret_inputs.py::test_the_probes_code_could_steer_by_shape_run_at_other_shapes_in_each_grading",),
             "sandbox"),
    Mutation("secret-seed-not-sent", "grader/checks/student_code.py",
             (('        sent["calls"] = [{**call, "seed": place}', '        sent["calls"] = [{**call, "seed": call["seed"]}'),),
             ("tests/checks/test_secret_inputs.py::test_the_worker_gets_each_calls_place_and_never_the_parents_dropout_seed",),
             "unit"),
    Mutation("scale-ignored-scores", "grader/checks/scale_factor.py",
             (("    if _close(w, uniform):", "    if False:"),),
             ("tests/checks/test_scale_factor.py::test_weights_that_ignore_the_scores_name_no_divisor",), "unit"),
    Mutation("secret-keyed-per-machine", "grader/checks/secret.py",
             (("key=_machine_key(), digest_size=8", "key=b\"attention-kit\", digest_size=8"),),
             ("tests/checks/test_secret_inputs.py::"
              "test_a_hand_in_meets_one_secret_on_a_machine_and_another_on_another_machine",), "unit"),
    Mutation("secret-fixed-outside-suite", "grader/checks/secret.py",
             (('        if "pytest" not in sys.modules:\n', "        if False:\n"),),
             ("tests/checks/test_secret_inputs.py::test_a_fixed_secret_is_refused_outside_the_test_suite",), "unit"),
    Mutation("mask-dtype-named", "grader/checks/dtypes.py",
             (('        mistakes = ["mask-dtype"]\n', "        pass\n"),),
             ("tests/checks/test_graders.py::test_mutant_loses_points_and_is_diagnosed[mask-dtype]",
              "tests/checks/test_graders.py::test_mutant_loses_points_and_is_diagnosed[mask-dtype__2]"), "sandbox"),
    Mutation("promoted-dtype-named", "grader/checks/dtypes.py",
             (("    if not changed_dtype or not float32_run_passed(ctx, part):", "    if True:"),),
             ("tests/checks/test_graders.py::test_mutant_loses_points_and_is_diagnosed[mask-dtype__3]",), "sandbox"),
    Mutation("gate-zeroed-message", "grader/report/json_report.py",
             (("        outcome = not_counted(outcome, list(gates))", "        pass"),),
             ("tests/report/test_core_report.py::test_a_check_a_failed_gate_zeroes_says_it_is_not_counted_and_why",),
             "unit"),
    Mutation("diagnosis-behind-a-crash", "grader/fixes/__init__.py",
             (("    checks, after_crashes = behind_errors(grading, report, fixed, found, not_tried)",
               "    checks, after_crashes = report[\"checks\"], []"),),
             ("tests/fixes/test_behind_a_crash.py::"
              "test_what_a_crash_hides_is_named_behind_it_and_the_score_stays[undefined_name_wrong_scale]",), "sandbox"),
    Mutation("passing-message-only-with-points", "grader/report/json_report.py",
             (('"passed": bool(outcome.passed) and not zeroed,', '"passed": bool(outcome.passed),'),),
             ("tests/report/test_passed_means_points.py::"
              "test_a_check_held_under_a_failed_gate_is_neither_passed_nor_worth_anything",), "unit"),
    Mutation("dropout-use-despite-nan", "grader/checks/mha/state.py",
             (("        if bool(torch.isfinite(train_1).any()) and not changed(train_1, train_2):",
               "        if bool(torch.isfinite(train_1).all()) and torch.equal(train_1, train_2):"),),
             ("tests/checks/test_named_bug_classes.py::test_each_bug_is_named_and_nothing_else[dropout-not-applied__3]",),
             "sandbox"),
    Mutation("constants-sent-once", "grader/sandbox/tracing.py",
             (("self.constants.append(self.copies.of(tensor))", "self.constants.append(value_for_the_parent(tensor))"),),
             ("tests/sandbox/test_constants_sent_once.py::"
              "test_a_constant_nine_calls_read_is_one_copy_in_one_frame_under_the_cap",), "unit"),
    Mutation("shared-constant-counted-once", "grader/sandbox/answers.py",
             (("                if id(value) in counted:", "                if False:"),),
             ("tests/sandbox/test_constants_sent_once.py::"
              "test_a_constant_nine_calls_read_is_one_copy_in_one_frame_under_the_cap",), "unit"),
    Mutation("constant-slice-sent", "grader/sandbox/tracing.py",
             (("        if func in SLICES and args", "        if False and args"),),
             ("tests/sandbox/test_constants_sent_once.py::test_a_slice_of_a_module_level_tensor_sends_only_the_slice",),
             "unit"),
    Mutation("answer-too-large-said", "grader/sandbox/worker.py",
             (("        if len(payload) > MAX_FRAME_BYTES:", "        if False:"),),
             ("tests/sandbox/test_answer_channel.py::"
              "test_honest_constants_too_large_to_check_are_too_costly_not_tampering",), "sandbox"),
    Mutation("repeat-interleave-counts-bound", "grader/graph/bounds.py",
             (("            total = _repeat_total(counts)", "            total = int(counts.sum()) if counts.numel() else 0"),),
             ("tests/graph/test_graph_bounds.py::"
              "test_repeat_counts_are_summed_without_wrapping_and_refused_before_they_run",), "unit"),
    # structural diagnosis (issue 43): the ids read from the graph reach the report, each rule of the reading holds
    Mutation("structural-diagnosis", "grader/checks/mha/probing.py",
             (("        mistakes = list(structural)\n", "        pass\n"),),
             ("tests/checks/test_compound_and_dtype_verdicts.py::test_each_reconstruction_gets_its_score_and_exactly_its_ids"
              "[mutants/wrong-input__7]",
              "tests/checks/test_compound_and_dtype_verdicts.py::test_each_reconstruction_gets_its_score_and_exactly_its_ids"
              "[mutants/head-split__6]"), "sandbox"),
    Mutation("structural-inputs-read", "grader/graph/structure.py",
             (("    if not SCORES_READ <= reading.reads[scores] or not VALUES_READ <= reading.reads[reading.output]:",
               "    if False:"),),
             ("tests/graph/test_graph_structure.py::test_each_bug_of_a_compound_is_named_from_the_graph",), "unit"),
    Mutation("structural-unread-wo", "grader/graph/structure.py",
             (('VALUES_READ = frozenset({"v", "wv"})', 'VALUES_READ = frozenset({"v", "wv", "wo"})'),),
             ("tests/graph/test_graph_structure.py::test_an_output_projection_built_in_forward_is_not_named_an_input_read_wrong",),
             "unit"),
    Mutation("structural-scale-direction", "grader/graph/structure.py",
             (("            factor *= number ** SCALINGS[node.target]", "            factor *= number"),),
             ("tests/graph/test_graph_structure.py::test_no_id_is_read_from_the_graph_of_honest_code",), "unit"),
    Mutation("structural-head-order", "grader/graph/structure.py",
             (("                    if any(self.is_weight(a, weights) for a in before.args):\n                        return True",
               "                    if any(self.is_weight(a, weights) for a in before.args):\n                        return False"),),
             ("tests/graph/test_graph_structure.py::test_each_bug_of_a_compound_is_named_from_the_graph",), "unit"),
    Mutation("structural-one-tensor", "grader/graph/structure.py",
             (("    if any(a.shape == b.shape and torch.equal(a, b) for a, b in ((q, k), (k, v), (q, v))):",
               "    if False:"),),
             ("tests/graph/test_graph_structure.py::test_one_tensor_for_q_k_and_v_tells_nothing_and_the_judge_reads_no_structure",),
             "unit"),
    # float16 probe: a mask or constant that changes float16's dtype costs the low-precision check
    Mutation("float16-dtype-charged", "grader/checks/dtypes.py",
             (('    if dtype != GRADED_HALF or note is None or note.mistakes != ["mask-dtype"]:', "    if True:"),),
             ("tests/checks/test_compound_and_dtype_verdicts.py::test_each_reconstruction_gets_its_score_and_exactly_its_ids"
              "[mutants/mask-dtype]",
              "tests/checks/test_compound_and_dtype_verdicts.py::test_each_reconstruction_gets_its_score_and_exactly_its_ids"
              "[mutants/mask-dtype__4]",
              "tests/checks/test_graders.py::test_mutant_loses_points_and_is_diagnosed[mask-dtype__3]"), "sandbox"),
    # issue 42: one judge exchange for several runs; each reply is its own run's, and a failed run ends the replies
    Mutation("judge-batch-in-order", "grader/checks/student_code.py",
             (("judged_runs = self._ensure_judge().judge_many(probe.value, runs, left=self._remaining())",
               "judged_runs = list(self._ensure_judge().judge_many(probe.value, runs, left=self._remaining()))[::-1]"),),
             ("tests/sandbox/test_probe_answers_reused.py::"
              "test_a_batch_of_runs_answers_each_request_on_its_own_tensors_in_its_own_place",), "unit"),
    Mutation("judge-batch-ends-at-failure", "grader/judge/serve.py",
             (("            if \"answer\" not in reply:\n                return", "            if False:\n                return"),),
             ("tests/sandbox/test_probe_answers_reused.py::test_a_run_that_fails_ends_the_judges_replies_to_its_batch",),
             "unit"),
    # red team 3: a stand-in's device is a fresh object per read, as a real tensor's; nothing says where memory is
    Mutation("stand-in-device-fresh", "grader/sandbox/stand_in_devices.py",
             (("            if sys.getrefcount(device) <= self._unheld and device == like:",
               "            if device == like:"),),
             ("tests/sandbox/test_stand_in.py::test_each_read_of_a_stand_ins_device_is_a_fresh_object_as_on_a_gpu"
              "[two reads, two objects-meta]",
              "tests/graph/test_graph_integrity.py::test_a_recipe_gains_nothing_with_the_worker_rules_in_place"
              "[stand_ins_told_by_a_device_read_twice]"), "sandbox"),
    Mutation("stand-in-device-address-reused", "grader/sandbox/stand_in_devices.py",
             (("            if sys.getrefcount(device) <= self._unheld and device == like:", "            if False:"),),
             ("tests/sandbox/test_stand_in.py::test_each_read_of_a_stand_ins_device_is_a_fresh_object_as_on_a_gpu"
              "[a read dropped, its address reused-meta]",), "unit"),
    Mutation("kv-heads-crash-named-everywhere", "grader/checks/gqa/probing.py",
             (("    return dataclasses.replace(problem, mistakes=[\"kv-heads-ignored\"])", "    return problem"),),
             (f"{KV_GQA}test_the_same_reshape_crash_is_named_by_the_values_and_the_decode_checks_too",), "sandbox"),
    # red team on the second lab: a module sets its own layers and buffers by name, as getattr reads them
    Mutation("parameter-writes-allowed", "grader/rules/reader.py",
             (("        if id(node) in self.parameter_writes:\n            return\n", ""),),
             (f"{WRITES}test_a_method_keeps_a_count_on_an_object_it_was_handed[a count on the cache]",
              f"{KV_DECODE}test_every_honest_module_decodes_as_the_full_causal_pass[length_kept_on_the_cache_by_the_model]"),
             "sandbox"),
    Mutation("parameter-writes-shared-names", "grader/rules/parameter_writes.py",
             (('    return not name.startswith("_") and name not in SHARED_NAMES', '    return not name.startswith("_")'),),
             (f"{WRITES}test_a_write_that_could_reach_a_shared_object_stays_refused[a torch function through a parameter]",),
             "unit"),
    Mutation("parameter-writes-constant-defaults", "grader/rules/parameter_writes.py",
             (("                  if a.arg not in defaults or isinstance(defaults[a.arg], ast.Constant)}", "                  }"),),
             (f"{WRITES}test_a_write_that_could_reach_a_shared_object_stays_refused[a parameter whose default is torch]",),
             "unit"),
    Mutation("parameter-writes-never-rebound", "grader/rules/parameter_writes.py",
             (("        handed -= {n.id for n in body if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}\n",
               ""),),
             (f"{WRITES}test_a_write_that_could_reach_a_shared_object_stays_refused[a parameter rebound to torch]",),
             "unit"),
    Mutation("parameter-writes-methods-only", "grader/rules/parameter_writes.py",
             (('        if not positional or positional[0].arg != "self":\n            continue\n', ""),),
             (f"{WRITES}test_a_plain_functions_parameter_stays_refused",), "unit"),
    Mutation("setattr-on-self-allowed", "grader/rules/reader.py",
             (("and (_named_getattr(n) or _on_self(n) or _on_self(n, \"setattr\"))}",
               "and (_named_getattr(n) or _on_self(n))}"),),
             ("tests/rules/test_setattr_on_self.py::test_a_module_sets_its_own_attributes_by_name[a computed name]",
              f"{KV_CACHE}test_every_honest_kv_cache_scores_the_full_six_points[setattr_buffers_and_projections_by_name]"),
             "unit"),
    # the GPU the input reads as being on, named by the code (`str(Q.device)`, `.cuda()`), is the meta stand-in's own
    Mutation("meta-stand-in-takes-the-gpus-name", "grader/sandbox/probes.py",
             (("    args = tuple(META if (func is torch.Tensor.to and _names_the_gpu(a)) else _meta_for_stand_in(a) "
               "for a in args)\n    kwargs = {k: META if k == \"device\" and _names_the_gpu(v) else "
               "_meta_for_stand_in(v) for k, v in kwargs.items()}",
               "    args = tuple(_meta_for_stand_in(a) for a in args)\n"
               "    kwargs = {k: _meta_for_stand_in(v) for k, v in kwargs.items()}"),),
             ("tests/sandbox/test_stand_in.py::test_the_gpu_the_input_is_on_named_by_the_code_is_the_stand_ins_own"
              "[the device's text-meta]",
              f"{KV_CACHE}test_every_honest_kv_cache_scores_the_full_six_points[device_as_text_cache_and_mask]"), "sandbox"),
    Mutation("meta-stand-in-takes-a-cpu-scalar-fill", "grader/sandbox/probes.py",
             (("        if len(args) > 2 and _a_cpu_scalar(args[2]):", "        if False:"),),
             ("tests/sandbox/test_stand_in.py::test_a_cpu_scalar_tensor_fills_a_stand_in_as_it_fills_a_gpu"
              "[masked_fill-meta]",
              f"{KV_CACHE}test_every_honest_kv_cache_scores_the_full_six_points[masked_fill_with_a_cpu_scalar_tensor]"),
             "unit"),
    Mutation("cache-set-storage-is-no-write", "grader/graph/cache_answers.py",
             (("                and node.target.split(\".\")[1] not in NOT_A_WRITE\n", "\n"),),
             (f"{KV_CACHE}test_buffers_given_new_storage_with_set__are_reallocated_too",), "sandbox"),
    Mutation("decode-cache-of-the-students-class", "grader/sandbox/decode_probes.py",
             (("    students = namespace.get(EXERCISE.graded_name[\"cache\"])\n", "    students = None\n"),),
             (f"{KV_DECODE}test_the_cache_the_decode_probe_hands_in_is_of_the_students_own_class[type is]",), "sandbox"),
    Mutation("decode-cache-keeps-the-students-sizes", "grader/sandbox/decode_probes.py",
             (("    vars(cache).update(_kept_by_the_students(students, sizes))\n", ""),),
             (f"{KV_DECODE}test_every_honest_module_decodes_as_the_full_causal_pass[cache_sizes_read_by_the_model]",),
             "sandbox"),
    Mutation("decode-cache-sizes-in-slots", "grader/sandbox/decode_probes.py",
             (('        found = {**_in_slots(built), **getattr(built, "__dict__", {})}', "        found = dict(vars(built))"),),
             (f"{KV_DECODE}test_every_honest_module_decodes_as_the_full_causal_pass"
              "[slotted_cache_sizes_read_by_the_model]",), "sandbox"),
    Mutation("gqa-decode-step-mistakes", "grader/checks/gqa/decoding.py",
             (("        for flags, mistake in STEP_MISTAKES:", "        for flags, mistake in STEP_MISTAKES[:1]:"),),
             (f"{KV_DECODE}test_a_mistake_of_the_cached_path_alone_is_named_as_that_mistake",), "sandbox"),
    Mutation("kv-selfcheck-cache-sizes", "release/kv_cache/selfcheck.py",
             (("        self.n_kv_heads, self.head_dim = ", "        self.n_kv_heads, self.head_dim_ = "),
              ("        self.max_batch_size, self.max_seq_len = ", "        self.max_batch_size, self.max_seq_len_ = ")),
             ("tests/student/test_kv_cache_selfcheck.py::"
              "test_every_honest_hand_in_the_grader_gives_full_marks_passes_the_self_check",), "unit"),
    Mutation("repeat-values-wide-model", "grader/checks/repeat/behaviour.py",
             (("    cases = [*VALUE_CASES, wide_model(ctx)]\n", "    cases = [*VALUE_CASES]\n"),),
             (f"{KV_REPEAT}test_the_tiled_order_taken_only_past_the_fixed_cases_sizes_is_found_on_a_wide_model",), "sandbox"),
    Mutation("cache-chain-half-precision", "grader/checks/cache/probing.py",
             ((",\n                                       (max_batch - 1, HALF_PRECISIONS[half], 340))]", ")]"),),
             (f"{KV_CACHE}test_a_cache_that_stores_a_half_precision_in_float32_fails_its_shapes",), "sandbox"),
    Mutation("cache-returned-dtype", "grader/checks/cache/probing.py",
             (("    if got == expected and item.get(\"dtype\") != dtype:", "    if False:"),),
             (f"{KV_CACHE}test_a_cache_that_returns_another_dtype_than_it_holds_fails_its_shapes",), "sandbox"),
    Mutation("cache-stand-in-reads", "grader/sandbox/cache_probes.py",
             (('lines, [None, None, step["k"], step["v"]],', "lines, [],"),),
             (f"{KV_CACHE}test_every_honest_kv_cache_scores_the_full_six_points[positions_tensor_read_back_with_item]",),
             "sandbox"),
    Mutation("stand-in-unknown-inputs", "grader/sandbox/stand_in_values.py",
             (('        if any(whole[n][0] == "input" and whole[n][1] in self.unknown for n in depends):',
               "        if False:"),),
             (f"{KV_CACHE}test_a_value_the_buffers_hold_is_never_answered_on_a_stand_in",), "sandbox"),
    Mutation("cache-every-row-returned", "grader/checks/cache/probing.py",
             (("and got[0] == plan.max_batch_size != plan.batch:", "and False:"),),
             (f"{KV_CACHE}test_every_row_of_the_cache_returned_is_named_a_read_past_what_was_written",), "sandbox"),
    Mutation("gqa-scale-kv-width", "grader/checks/gqa/variants.py",
             (('"wrong-scale-width", "wrong-scale-kv-width", "mask-diagonal"', '"wrong-scale-width", "mask-diagonal"'),),
             ("tests/checks/test_kv_cache_gqa.py::test_scores_divided_by_the_key_value_width_are_named_a_wrong_scale",),
             "sandbox"),
    Mutation("cache-dtype-named", "grader/checks/cache/probing.py",
             (('["cache-dtype" if only_the_dtype else "wrong-return"]', '["wrong-return"]'),),
             (f"{KV_CACHE}test_a_cache_that_stores_a_half_precision_in_float32_fails_its_shapes",
              f"{KV_CACHE}test_a_part_two_mutant_loses_points_with_its_mistake_named_in_both_languages[cache-dtype]"),
             "sandbox"),
    Mutation("stand-in-writes-through-views", "grader/sandbox/stand_in_values.py",
             (("        depends = _with_the_writes(whole, _needed(whole, len(whole) - 1))",
               "        depends = _needed(whole, len(whole) - 1)"),),
             (f"{KV_CACHE}test_a_read_on_a_stand_in_is_answered_as_a_gpu_computes_it_or_not_at_all[told_by_a_write_through_a_view]",), "sandbox"),
    Mutation("stand-in-draws-unanswered", "grader/sandbox/stand_in_values.py",
             (("        if any(_draws(whole[n]) or _uninitialised(whole[n]) for n in depends):",
               "        if any(_uninitialised(whole[n]) for n in depends):"),),
             (f"{KV_CACHE}test_a_read_on_a_stand_in_is_answered_as_a_gpu_computes_it_or_not_at_all[told_by_a_random_draw]",), "sandbox"),
    Mutation("stand-in-reads-through-a-copy", "grader/sandbox/values_leaving.py",
             (("            copy = self._answered_copy(func, args)", "            copy = None"),),
             (f"{KV_CACHE}test_every_honest_kv_cache_scores_the_full_six_points[positions_read_back_with_int_and_tolist]",),
             "sandbox"),
    Mutation("edit-reach-decorated-definitions", "grader/fixes/reach.py",
             (("            if _handed_over_at_load(node):", "            if False:"),),
             ("tests/fixes/test_regrade_reach.py::test_an_edit_that_runs_at_load_or_cannot_be_read_reaches_every_part"
              "[decorated]",
              "tests/fixes/test_fixes.py::test_a_fix_a_decorator_hands_to_the_other_part_is_judged_on_both_parts"),
             "sandbox"),
    Mutation("replay-at-other-magnitudes-and-patterns", "grader/sandbox/replay.py",
             (('REPLAYS = (1.0, 0.5, -1.0, 2.0, "later x5")', "REPLAYS = (1.0,)"),),
             ("tests/checks/test_reads_hold_on_the_parents_inputs.py::"
              "test_a_float_read_compared_in_python_is_replayed_where_the_parents_inputs_differ[.item()]",), "sandbox"),
    Mutation("replay-from-the-inputs-as-found", "grader/sandbox/graph_probes.py",
             (("not replay.faithful(answer, call, before + inputs[varied:],",
               "not replay.faithful(answer, call, inputs,"),),
             ("tests/checks/test_reads_hold_on_the_parents_inputs.py::"
              "test_a_replay_keeps_the_zeros_a_call_found_in_what_it_writes_into",), "unit"),
    Mutation("replay-keeps-zeros", "grader/sandbox/replay.py",
             (("              * (t != 0 if t.is_floating_point() else 1))", "              * 1)"),),
             ("tests/checks/test_reads_hold_on_the_parents_inputs.py::"
              "test_a_replay_keeps_the_zeros_a_call_found_in_what_it_writes_into",), "unit"),
    Mutation("decoys-at-the-inputs-magnitude", "grader/checks/decoys.py",
             (("        made = [(torch.randn(shape, generator=generator, dtype=torch.float64) * scale).to(dtype)",
               "        made = [torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype)"),),
             ("tests/checks/test_reads_hold_on_the_parents_inputs.py::"
              "test_a_path_chosen_by_the_inputs_magnitude_is_traced_at_their_magnitude",), "sandbox"),
    Mutation("decoys-keep-sameness", "grader/checks/decoys.py",
             (('                made[i] = made[same[1]] if same[0] == "is" else made[same[1]].clone()',
               "                pass"),),
             ("tests/checks/test_decoys_keep_sameness.py::test_a_self_attention_path_is_graded_where_self_attention_is_asked"
              "[is]",), "sandbox"),
    Mutation("recorder-decomposes-composites", "grader/sandbox/tracing.py",
             (("        if _composite(func):", "        if False:"),),
             ("tests/checks/test_graders.py::test_mutant_loses_points_and_is_diagnosed[broken-grad__3]",), "sandbox"),
    Mutation("judge-cpu-scalar-written", "grader/graph/run.py",
             (("            strays += [values[n] for n in written if", "            strays += [values[n] for n in () if"),),
             ("tests/graph/test_graph_checker.py::test_a_cpu_scalar_written_from_the_stand_in_fails_as_on_a_gpu",), "unit"),
    Mutation("judge-device-of-a-stand-in-scalar", "grader/graph/run.py",
             (('if device != "cpu" or t.dim() > 0),', 'if device != "cpu" and t.dim() > 0),'),),
             ("tests/graph/test_graph_checker.py::test_a_cpu_scalar_written_from_the_stand_in_fails_as_on_a_gpu",), "unit"),
    Mutation("stand-in-cpu-scalar-written", "grader/graph/devices.py",
             (("(t.dim() > 0 or any(t is w for w in written))", "t.dim() > 0"),),
             ("tests/graph/test_graph_checker.py::test_a_cpu_scalar_written_from_the_stand_in_fails_as_on_a_gpu",), "unit"),
    Mutation("decode-reads-of-x-answered", "grader/sandbox/decode_probes.py",
             (("            values = [x_value, *[None] * len(given)] if x_value is not None and device != \"cpu\" else []",
               "            values = []"),),
             (f"{KV_GQA}test_every_honest_module_scores_the_whole_prompts_six_points[module_refuses_an_input_that_is_not_finite]",),
             "sandbox"),
    Mutation("gqa-decode-chunk-to-the-end", "grader/checks/gqa/decoding.py",
             (("    rest = args[\"max_seq_len\"] - prompt - chunk - 1", "    rest = long"),),
             (f"{KV_DECODE}test_an_offset_left_out_only_for_long_chunks_is_met_by_the_longer_chunk[12]",), "sandbox"),
    Mutation("cache-chain-to-the-end", "grader/checks/cache/probing.py",
             (("    long = length - 2 - end", "    long = min(13, length - 2 - end)"),),
             (f"{KV_CACHE}test_a_read_one_past_only_late_in_the_cache_is_read_there",), "sandbox"),
    Mutation("cache-untraceable-step-ends-the-chain", "grader/sandbox/cache_probes.py",
             (("            if not left:  # the call stopped where values left a stand-in", "            if False:  #"),),
             (f"{KV_CACHE}test_a_read_on_a_stand_in_is_answered_as_a_gpu_computes_it_or_not_at_all[told_by_a_random_draw]",), "sandbox"),
    Mutation("values-left-replayed-at-one-seed", "grader/sandbox/replay.py",
             (("        _seed(REPLAY_SEED)  # a dropout", "        pass  # a dropout"),),
             ("tests/checks/test_graders.py::test_correct_style_gets_full_marks[int_bound_checks_in_both_parts]",),
             "sandbox"),
    Mutation("stand-in-conversions-out-of-range", "grader/sandbox/stand_in_values.py",
             (("        if not all(_converted_alike(source, target)", "        if not all(True or _converted_alike(source, target)"),),
             ("tests/graph/test_graph_integrity.py::test_a_recipe_gains_nothing_with_the_worker_rules_in_place"
              "[stand_ins_told_by_a_float_cast_out_of_range]",), "sandbox"),
    Mutation("stand-in-fresh-memory-unanswered", "grader/sandbox/stand_in_values.py",
             (("        if any(_draws(whole[n]) or _uninitialised(whole[n]) for n in depends):",
               "        if any(_draws(whole[n]) for n in depends):"),),
             ("tests/graph/test_graph_integrity.py::test_a_recipe_gains_nothing_with_the_worker_rules_in_place"
              "[stand_ins_told_by_fresh_memory]",), "sandbox"),
    Mutation("stand-in-integer-products-refused", "grader/graph/devices.py",
             (("            refused = refused_by_a_gpu(func.overloadpacket.__name__,", "            refused = None and (func.overloadpacket.__name__,"),),
             ("tests/graph/test_graph_checker.py::test_an_integer_product_on_the_stand_in_fails_as_on_a_gpu",
              f"{RULES_OFF}[stand_ins_told_by_an_integer_product]"), "sandbox"),
    Mutation("judge-integer-products-refused", "grader/graph/run.py",
             (("            refused = refused_by_a_gpu(packet, [(device, t.dtype) for device, t in operands])",
               "            refused = None"),),
             ("tests/graph/test_graph_checker.py::test_an_integer_product_on_the_stand_in_fails_as_on_a_gpu",), "unit"),
    Mutation("device-fails-on-the-cpu-too", "grader/checks/device_questions.py",
             (("    on_the_cpu = error_on_the_cpu() or {}\n", "    return None\n"),),
             ("tests/checks/test_checks_common.py::test_the_device_sweep_judges_devices_only",
              f"{KV_CACHE}test_a_write_that_fails_on_the_cpu_too_is_no_device_question",
              f"{KV_DECODE}test_heads_repeated_before_the_cache_fail_on_the_cpu_too_which_is_no_device_question"),
             "sandbox"),
    Mutation("device-cpu-no-cuda-unjudged", "grader/checks/device_questions.py",
             ((' or diagnosis.NO_CUDA.search(on_the_cpu.get("message", "")):', ":"),),
             ("tests/checks/test_checks_common.py::test_the_device_sweep_judges_devices_only",), "unit"),
    Mutation("cache-chain-rewinds", "grader/checks/cache/probing.py",
             (("(end + long, 1), (back, 1),\n", "(end + long, 1),\n"),),
             (f"{KV_CACHE}test_a_position_counted_by_the_cache_and_reset_at_zero_fails_where_a_token_is_generated_again",),
             "sandbox"),
    Mutation("gqa-values-long-prompt", "grader/checks/gqa/behaviour.py",
             (("enumerate([*VALUE_CONFIGS, long], start=320)", "enumerate([*VALUE_CONFIGS], start=320)"),),
             (f"{KV_GQA}test_a_mask_dropped_past_the_fixed_configurations_lengths_fails_on_a_long_prompt",), "sandbox"),
    Mutation("cache-loop-count-at-start-and-below-max", "grader/checks/cache/runtime.py",
             (("        plan = Plan(B + 1, T + 2, heads, width, B, torch.float32, ((0, T), (1, T)), 380)",
               "        plan = Plan(B, T + 2, heads, width, B, torch.float32, ((1, T),), 380)"),),
             (f"{KV_CACHE}test_a_loop_taken_only_at_some_positions_or_batches_is_a_python_loop[at start_pos 0 only]",
              f"{KV_CACHE}test_a_loop_taken_only_at_some_positions_or_batches_is_a_python_loop[below max_batch_size only]"),
             "sandbox"),
    Mutation("cache-chain-reaches-late-positions", "grader/checks/cache/probing.py",
             (("(prompt + 2, chunk), (end, long), (end + long, 1), (back, 1),", "(prompt + 2, chunk), (back, 1),"),),
             (f"{KV_CACHE}test_a_write_wrong_only_from_position_16_on_is_read_there",), "sandbox"),
    Mutation("gqa-loop-count-through-a-cache", "grader/checks/gqa/runtime.py",
             (("    cached = counted_loops(stages, count_decoding, label)\n", "    cached = whole_pass\n"),),
             (f"{KV_GQA_MUTANT}[python-loop__4]",),
             "sandbox"),
    Mutation("decode-longer-chunk", "grader/checks/gqa/decoding.py",
             (("[0, prompt + chunk, rest], [0, prompt + chunk + rest, 1]]", "[0, prompt + chunk, 1]]"),),
             (f"{KV_DECODE}test_an_offset_left_out_only_for_long_chunks_is_met_by_the_longer_chunk",), "sandbox"),
    Mutation("cache-update-device-mistake-named-there", "grader/checks/cache/runtime.py",
             (("                                         extra=(made_there,))", "                                         extra=())"),),
             (f"{KV_CACHE}test_an_index_made_on_the_cpu_in_update_is_named_as_a_constant_off_the_device",), "sandbox"),
    Mutation("fake-stand-in-slice-write", "grader/sandbox/fake_indexing.py",
             (("        torch.ops.aten.copy_.default(_basic(tensor, index), value)", "        _basic(tensor, index).copy_(value)"),),
             ("tests/sandbox/test_fake_gpu_stand_in.py::test_indexing_on_the_fake_gpu_computes_what_it_computes_on_the_cpu"
              "[a slice set from a tensor]",), "unit"),
    Mutation("fake-tensor-device-fresh", "grader/sandbox/guard.py",
             (("            value = FAKE_TENSOR_DEVICES.read(value)", "            pass"),),
             ("tests/sandbox/test_stand_in.py::test_each_read_of_a_stand_ins_device_is_a_fresh_object_as_on_a_gpu"
              "[two reads, two objects-fake-cuda]",), "unit"),
    Mutation("fake-tensor-device-its-own", "grader/sandbox/guard.py",
             (("            value = FAKE_TENSOR_DEVICES.read(value)", "            value = FAKE_TENSOR_DEVICES.read()"),),
             ("tests/sandbox/test_stand_in.py::"
              "test_a_tensor_made_on_the_cpu_beside_a_stand_in_reads_its_own_device_afresh[fake-cuda]",), "unit"),
    Mutation("array-interface-refused-alike", "grader/sandbox/guard.py",
             (('    def read(self, obj, name):\n',
               '    def read(self, obj, name):\n        if name == "__cuda_array_interface__" and on_a_stand_in(obj):\n'
               '            return {"data": (0, False)}\n'),),
             ("tests/sandbox/test_stand_in.py::test_what_says_where_a_tensors_memory_is_is_refused_on_every_device_alike"
              "[str.format field-meta]",
              "tests/graph/test_graph_integrity.py::test_a_recipe_gains_nothing_with_the_worker_rules_in_place"
              "[stand_ins_told_by_a_data_pointer_in_a_format_field]"), "sandbox"),
    Mutation("format-template-fields-read", "grader/rules/reader.py",
             (("                yield from self._format_fields(node)\n", ""),),
             ("tests/rules/test_strings_meeting_device_text.py::"
              "test_a_format_templates_fields_are_read_as_the_attributes_they_name[where a tensor's memory is]",), "unit"),
    Mutation("stand-in-word-only-in-device-text", "grader/rules/reader.py",
             (("isinstance(node, (ast.Constant, ast.BinOp, ast.JoinedStr)) and id(node) in device_text \\\n",
               "isinstance(node, (ast.Constant, ast.BinOp, ast.JoinedStr)) \\\n"),),
             ("tests/rules/test_strings_meeting_device_text.py::"
              "test_a_string_that_only_says_meta_is_text_and_the_static_reading_finds_nothing[an assert message]",
              "tests/checks/test_graders.py::test_correct_style_gets_full_marks[llama_layout_messages_name_meta]"), "sandbox"),
    Mutation("stand-in-word-in-a-comparison", "grader/rules/strings.py",
             (("            roots.update(id(operand) for operand in [node.left, *node.comparators])", "            pass"),),
             ("tests/rules/test_strings_meeting_device_text.py::"
              "test_the_word_where_it_can_meet_a_devices_text_is_read_as_probing_for_the_stand_in[compared]",), "unit"),
    Mutation("stand-in-word-held-in-a-name", "grader/rules/reader.py",
             (("                    self.stand_in_names.add(name)", "                    pass"),),
             ("tests/rules/test_strings_meeting_device_text.py::"
              "test_the_word_where_it_can_meet_a_devices_text_is_read_as_probing_for_the_stand_in"
              "[held in a name, then compared]",), "unit"),
    # issue 42: a run the judge made again in one grading is answered from its reply only when nothing differs
    Mutation("judge-run-reply-by-fields", "grader/judge/serve.py",
             (("{value.stride()}{value.storage_offset()}", ""),),
             ("tests/judge/test_repeated_runs.py::test_fields_that_differ_in_anything_a_graph_reads_have_other_fingerprints",),
             "unit"),
    Mutation("judge-run-reply-by-answer", "grader/judge/serve.py",
             (('        key = (probe, run["answer_id"], fingerprint(run["fields"]))',
               '        key = (probe, 0, fingerprint(run["fields"]))'),),
             ("tests/judge/test_repeated_runs.py::test_a_run_on_other_values_or_of_another_answer_is_made_afresh",), "unit"),
    Mutation("given-weights-not-sent-back", "grader/sandbox/graph_probes.py",
             (('    given = {f"{layer}.weight" for layer in weights or {}}', "    given = set()"),),
             ("tests/sandbox/test_given_weights_not_sent_back.py::"
              "test_the_weights_a_request_gives_are_not_sent_back_and_the_rest_of_the_state_is",), "unit"),
    # issue 41, red team 3: no plain property of a probe's inputs (requires_grad, is_leaf, grad mode, contiguity, the
    # parameters' requires_grad) tells it from real use (grader/checks/regimes.py)
    Mutation("training-inputs-not-leaves", "grader/sandbox/graph_probes.py",
             (("        tensors = alike(tensors, lambda tensor: tensor.detach().requires_grad_(True).clone())",
               "        tensors = alike(tensors, lambda tensor: tensor.detach().requires_grad_(True))"),),
             ("tests/sandbox/test_input_regimes.py::test_in_training_the_inputs_need_grad_and_are_made_by_an_operation",
              f"{RULES_OFF}[sdpa_scale_left_out_for_inputs_that_are_not_leaves]"), "sandbox"),
    Mutation("training-inputs-need-grad", "grader/sandbox/graph_probes.py",
             (('    if regime == "training":\n        tensors = alike(tensors, lambda tensor: tensor.detach().requires_grad_(True).clone())\n',
               ""),),
             (f"{RULES_OFF}[sdpa_scale_left_out_when_inputs_need_grad]",
              f"{RULES_OFF}[mha_head_loop_only_when_q_needs_grad]"), "sandbox"),
    Mutation("inference-without-grad", "grader/sandbox/graph_probes.py",
             (('            with _device_guard(device, lines) as cuda, torch.set_grad_enabled(regime == "training"):',
               "            with _device_guard(device, lines) as cuda, torch.set_grad_enabled(True):"),),
             (f"{RULES_OFF}[mha_head_loop_only_under_no_grad]",), "sandbox"),
    Mutation("parameters-need-grad", "grader/sandbox/graph_probes.py",
             (("t.detach().requires_grad_(position < n_parameters and", "t.detach().requires_grad_(False and"),),
             (f"{RULES_OFF}[mha_resid_dropout_applied_only_while_weights_need_no_grad]",), "sandbox"),
    Mutation("regimes-take-turns", "grader/checks/regimes.py",
             (("chosen.append(REGIMES[(starts[kind] + taken[kind]) % len(REGIMES)])", "chosen.append(REGIMES[starts[kind]])"),),
             ("tests/checks/test_regimes.py::test_two_calls_of_a_kind_meet_both_regimes",), "unit"),
    Mutation("heads-layout-spread", "grader/checks/regimes.py",
             (('SPREAD_LAYOUTS = ("heads", "contiguous")', 'SPREAD_LAYOUTS = ("contiguous",)'),),
             (f"{RULES_OFF}[sdpa_mask_on_the_cpu_unless_contiguous]",
              f"{RULES_OFF}[sdpa_position_loop_for_non_contiguous_inputs]"), "sandbox"),
    Mutation("layout-on-the-fake-stand-in", "grader/sandbox/graph_probes.py",
             (("    with fake_gpu.active() if any(fake_gpu.is_fake(t) for t in tensors) else contextlib.nullcontext():\n"
               "        return alike(tensors, lambda tensor: laid_out(tensor, layout))\n",
               "    return alike(tensors, lambda tensor: laid_out(tensor, layout))\n"),),
             ("tests/sandbox/test_input_regimes.py::"
              "test_every_layout_reaches_the_code_on_each_stand_in_with_the_cpus_strides[fake-cuda]",
              "tests/rules/test_runtime_rules.py::test_honest_idiom_earns_full_marks[functools_cached_mask]"), "sandbox"),
    Mutation("device-stand-in-in-training", "grader/checks/sdpa/runtime.py",
             (('device=where, layout=layout,\n                                                          regime="training")',
               'device=where, layout=layout,\n                                                          regime="inference")'),),
             (f"{RULES_OFF}[sdpa_mask_on_the_cpu_when_inputs_need_grad]",), "sandbox"),
    # issue 41 route r15: both layers read at args.dropout, from runs under one seed, whatever the code's layout
    Mutation("dropout-both-at-the-models-rate", "grader/checks/mha/state.py",
             (("    problem = None if unread else _both_layers(ctx, (B, T, dim, heads, max_len), weights, doing)\n",
               "    problem = None\n"),),
             ("tests/graph/test_graph_integrity.py::test_a_recipe_gains_nothing_with_the_worker_rules_in_place"
              "[mha_dropout_only_where_the_two_rates_differ]",
              f"{RULES_OFF}[mha_dropout_only_where_the_two_rates_differ]"), "sandbox"),
    Mutation("dropout-both-read-by-keeps-and-drops", "grader/checks/mha/dropout_patterns.py",
             (("    return bool(close and (keys_kept[weight_telling] == 0).any() and (keys_kept[weight_telling] == 1).any())",
               "    return bool(close)"),),
             ("tests/checks/test_both_dropouts_reading.py::test_a_module_that_drops_less_than_both_layers_is_not_read_as_both",),
             "unit"),
    Mutation("dropout-trained-in-training", "grader/checks/mha/state.py",
             (('        calls = [dict(x, mode="train", seed=ctx.seed(n), regime="training") for n in (3, 4)]',
               '        calls = [dict(x, mode="train", seed=ctx.seed(n)) for n in (3, 4)]'),),
             (f"{RULES_OFF}[mha_resid_dropout_applied_only_to_inputs_that_need_no_grad]",), "sandbox"),
    Mutation("gradient-probe-forward", "grader/checks/sdpa/numerics.py",
             (('        if not diagnosis.close(tensor(answer, "out"), expected_out, *tolerance):',
               "        if False:"),),
             ("tests/checks/test_gradient_probe_forward.py",), "sandbox"),
    # with two exercises declared, the worker reads the second's declaration after its confinement
    Mutation("exercises-loaded-with-the-package", "grader/exercises/__init__.py",
             (("    return _DECLARATIONS[name]", '    return importlib.import_module(f"{__name__}.{name}").EXERCISE'),
              ('_DECLARATIONS: dict[str, Exercise] = {name: importlib.import_module(f"{__name__}.{name}").EXERCISE '
               "for name in NAMES}", "_DECLARATIONS: dict[str, Exercise] = {}")),
             ("tests/exercises/test_declarations_loaded.py::"
              "test_every_declaration_is_read_without_importing_after_the_package_loaded",), "unit"),
    # the second exercise's public self-check (issue 45): each of its own mistakes named where it is taught
    Mutation("kv-selfcheck-head-order", "release/kv_cache/selfcheck.py",
             (("    if heads == [h % H_kv for h in range(H_kv * n_rep)]:", "    if False:"),),
             (f"{KV_SELFCHECK}[repeat-kv-order]",), "unit"),
    Mutation("kv-selfcheck-cache-device", "release/kv_cache/selfcheck.py",
             (('    if placed != {"meta"}:', "    if False:"),),
             (f"{KV_SELFCHECK}[cache-device]",), "unit"),
    Mutation("kv-selfcheck-mask-offset", "release/kv_cache/selfcheck.py",
             (('    for variant in (("cache-mask-offset",) if start else ()) + _VARIANTS:', "    for variant in _VARIANTS:"),),
             (f"{KV_SELFCHECK}[cache-mask-offset]",), "unit"),
    # issue 45: the kv_cache lab's Part 1 graders (grader/checks/repeat/) and the generic probe of a graded function
    Mutation("repeat-kv-order-named", "grader/checks/repeat/behaviour.py",
             (('failed(zh, en, ["repeat-kv-order"] if tiled else [])', "failed(zh, en, [])"),),
             (f"{KV_REPEAT}test_a_part_one_mutant_loses_points_with_its_mistake_named_in_both_languages[repeat-kv-order]",
              f"{KV_REPEAT}test_a_part_one_mutant_loses_points_with_its_mistake_named_in_both_languages[repeat-kv-order__2]"),
             "sandbox"),
    Mutation("repeat-values-compared", "grader/checks/repeat/behaviour.py",
             (("        problem = problem or compare(answer, x, n_rep, *label)\n", "        problem = problem\n"),),
             (f"{KV_REPEAT}test_the_tiled_order_says_which_heads_went_where",), "sandbox"),
    Mutation("repeat-gradient-comparison", "grader/checks/repeat/behaviour.py",
             (('problem = compare_gradients(["x"], answer.get("grads") or [None], expected, tolerance)', "problem = None"),),
             (f"{KV_REPEAT}test_a_part_one_mutant_loses_points_with_its_mistake_named_in_both_languages[broken-grad]",),
             "sandbox"),
    Mutation("repeat-shape-structure", "grader/checks/repeat/probing.py",
             (('    if tuple(item["shape"]) != tuple(expected):', "    if False:"),),
             (f"{KV_REPEAT}test_repeating_along_the_positions_is_the_wrong_shape_and_nothing_else_is_blamed_on_it",),
             "sandbox"),
    Mutation("repeat-loop-grown", "grader/checks/repeat/runtime.py",
             (("    return counted_loops(stages, count,", "    return counted_loops(stages[:1], count,"),),
             (f"{KV_REPEAT}test_a_part_one_mutant_loses_points_with_its_mistake_named_in_both_languages[python-loop__3]",),
             "sandbox"),
    Mutation("repeat-device-judged", "grader/checks/repeat/runtime.py",
             (("    return device_sweep(ctx, cases, run,", "    return Outcome(True) or device_sweep(ctx, cases, run,"),),
             (f"{KV_REPEAT}test_an_output_made_on_the_cpu_costs_the_device_points_alone",), "sandbox"),
    # every part's two gates (grader/checks/gates.register) read that part's own findings
    Mutation("part-forbidden-gate", "grader/checks/gates.py",
             (("(lambda ctx: forbidden_api_gate(ctx, part))", "(lambda ctx: forbidden_api_gate(ctx, \"sdpa\"))"),),
             (f"{KV_REPEAT}test_the_built_in_attention_in_repeat_kv_zeroes_the_part[only the judge]",
              f"{KV_CACHE}test_the_built_in_attention_in_update_zeroes_the_part[only the judge]",
              f"{KV_GQA}test_the_built_in_attention_seen_only_by_the_judge_zeroes_the_part"), "sandbox"),
    Mutation("part-rules-gate", "grader/checks/gates.py",
             (("(lambda ctx: rules_gate(ctx, part))", "(lambda ctx: rules_gate(ctx, \"sdpa\"))"),),
             (f"{KV_REPEAT}test_an_import_in_repeat_kv_breaks_the_rules_and_zeroes_the_part",
              f"{KV_CACHE}test_an_import_in_update_breaks_the_rules_and_zeroes_the_part",
              f"{KV_GQA}test_an_import_in_forward_breaks_the_rules_and_zeroes_the_part"), "sandbox"),
    Mutation("function-probe-own-part", "grader/sandbox/requests.py",
             (('    if getattr(request, "part", probe.part) != probe.part:', "    if False:"),),
             ("tests/sandbox/test_probe_requests.py::test_a_request_of_another_probe_or_no_probe_is_a_grader_error",),
             "unit"),
    Mutation("exercise-without-graders-refused", "grader/checks/__init__.py",
             (("    if missing and (part is None or part in missing):", "    if False:"),),
             ("tests/report/test_exercises_declared.py::"
              "test_an_exercise_whose_parts_lack_graders_is_refused_whole_naming_what_is_missing",
              f"{KV_REPEAT}test_an_exercise_with_a_part_without_graders_fails_loudly_and_a_part_alone_grades"), "unit"),
    # issue 45: the kv_cache lab's decode chain (grader/sandbox/decode_probes.py, grader/graph/decode_chain.py) and
    # Part 3's decode checks (grader/checks/gqa/decoding.py)
    Mutation("decode-shared-state-refused", "grader/sandbox/decode_probes.py",
             (("    if shared:  # the judge runs", "    if False:  # the judge runs"),),
             (f"{DECODE_CHAIN}test_a_cache_whose_keys_and_values_share_memory_is_refused_before_its_step_is_traced",
              f"{KV_DECODE}test_shared_memory_is_refused_at_the_step_after_it_was_made"), "sandbox"),
    Mutation("decode-module-state-threaded", "grader/graph/decode_chain.py",
             (("        caches[sequence], state = outputs[1:3], outputs[3:]", "        caches[sequence] = outputs[1:3]"),),
             (f"{DECODE_CHAIN}test_a_buffer_the_code_writes_is_fed_to_the_next_step",), "unit"),
    Mutation("decode-state-shape-kept", "grader/graph/decode_chain.py",
             (("o.shape != g.shape or o.dtype != g.dtype", "o.dtype != g.dtype"),),
             (f"{DECODE_CHAIN}test_a_step_that_gives_back_a_cache_of_another_shape_breaks_the_chain",), "unit"),
    Mutation("decode-sequences-interleaved", "grader/checks/gqa/decoding.py",
             (("                 [[0, 0, prompt], [1, 0, other], [0, prompt, 1], [1, other, 1], [0, prompt + 1, chunk]]]",
               "                 [[0, 0, prompt], [0, prompt, 1], [0, prompt + 1, chunk]]]"),),
             (f"{KV_DECODE}test_state_kept_where_the_judge_cannot_follow_it_earns_no_decode_points[positions counted in "
              f"Python]",), "sandbox"),
    Mutation("decode-chunk-named-mask-offset", "grader/checks/gqa/decoding.py",
             (("    if length > 1 and start_pos > 0 and tokens_right:", "    if False:"),),
             (f"{KV_DECODE}test_a_mask_not_offset_by_start_pos_loses_the_decode_points_named_in_both_languages"
              f"[cache-mask-offset__2]",), "sandbox"),
    Mutation("decode-offset-reference-named", "grader/checks/gqa/decoding.py",
             (('STEP_MISTAKES = (({"offset_mask": False}, "cache-mask-offset"), ', "STEP_MISTAKES = ("),),
             (f"{KV_DECODE}test_a_mask_not_offset_by_start_pos_loses_the_decode_points_named_in_both_languages"
              f"[cache-mask-offset]",), "sandbox"),
    Mutation("decode-causal-exact", "grader/checks/gqa/decoding.py",
             (("    differs = (a != b) & ~(torch.isnan(a) & torch.isnan(b))", "    differs = (a - b).abs() > 1e3"),),
             (f"{KV_DECODE}test_a_row_that_sees_a_later_position_loses_the_causal_point[cache-mask-offset__2]",),
             "sandbox"),
    # issue 45: the kv_cache lab's Part 2 graders (grader/checks/cache/), its probe and the judge's turn of it
    Mutation("cache-position-landing", "grader/checks/cache/behaviour.py",
             (("    if landed != wanted:", "    if False:"),),
             (f"{KV_CACHE_MUTANT}[cache-position]", f"{KV_CACHE_MUTANT}[cache-position__2]"), "sandbox"),
    Mutation("cache-values-compared", "grader/checks/cache/behaviour.py",
             (("                if got is None or not diagnosis.close(got, want, *TOLERANCE[plan.dtype]):",
               "                if got is None:"),),
             (f"{KV_CACHE}test_a_write_at_the_wrong_position_says_where_it_landed",), "sandbox"),
    Mutation("cache-read-length", "grader/checks/cache/probing.py",
             (("    if len(got) == 4 and got[:2] + got[3:] == expected[:2] + expected[3:]:", "    if False:"),),
             (f"{KV_CACHE}test_a_read_past_what_was_written_costs_the_shapes_and_values_alone",), "sandbox"),
    Mutation("cache-zeros-checked", "grader/checks/cache/behaviour.py",
             (("            if buffer is not None and bool((buffer != 0).any()):", "            if False:"),),
             (f"{KV_CACHE}test_buffers_that_start_other_than_zero_cost_the_shapes_point",), "sandbox"),
    Mutation("cache-in-place-structure", "grader/graph/cache_answers.py",
             (("    return len(last) == 2 and [written_input(ref) for ref in last] == [0, 1]", "    return True"),),
             (f"{KV_CACHE}test_a_cache_that_reallocates_at_every_update_loses_the_in_place_point_alone",
              f"{CACHE_TURN}test_an_operator_in_place_on_the_whole_buffer_is_a_write_in_place_and_a_new_tensor_is_not"),
             "sandbox"),
    # an in-place operator on the buffer itself returns the buffer: read as a new tensor, an honest index_copy_ fails
    Mutation("cache-in-place-operator", "grader/graph/cache_answers.py",
             (('node.target.split(".")[1].endswith("_")', 'node.target.split(".")[1].endswith("@")'),),
             (f"{CACHE_TURN}test_an_operator_in_place_on_the_whole_buffer_is_a_write_in_place_and_a_new_tensor_is_not",),
             "unit"),
    Mutation("cache-in-place-held", "grader/checks/cache/behaviour.py",
             (("                if held is None or held.shape != got.shape or not torch.equal(held, got):",
               "                if held is None:"),),
             (f"{KV_CACHE}test_keys_returned_by_concatenation_with_the_buffers_untouched_earn_neither_values_nor_in_place",),
             "sandbox"),
    Mutation("cache-from-the-constructors-graph", "grader/graph/cache_answers.py",
             (("    state = list(outputs)\n", "    state = [torch.zeros_like(t) for t in outputs]\n"),),
             (f"{CACHE_TURN}test_the_cache_starts_from_what_the_constructors_graph_gives_here",), "unit"),
    Mutation("cache-shared-memory-judge", "grader/graph/cache_answers.py",
             (("    shared = sharing_memory(outputs, CACHE_BUFFERS)\n", "    shared = None\n"),
              ("    shared = sharing_memory(after, CACHE_BUFFERS)\n", "    shared = None\n")),
             (f"{CACHE_TURN}test_the_judge_refuses_buffers_that_share_memory_as_its_graphs_give_them",), "unit"),
    Mutation("cache-shared-memory-worker", "grader/sandbox/cache_probes.py",
             (("            shared = sharing_memory(state, CACHE_BUFFERS)\n", "            shared = None\n"),),
             (f"{CACHE_TURN}test_the_worker_refuses_to_record_an_update_on_buffers_that_share_memory",), "unit"),
    Mutation("cache-device-judged", "grader/checks/cache/runtime.py",
             (('        if item.get("device") != asked:\n            stand_in_zh =',
               '        if False:\n            stand_in_zh ='),),
             (f"{KV_CACHE}test_buffers_made_without_device_cost_the_device_point_alone",), "sandbox"),
    Mutation("cache-loop-counted", "grader/checks/cache/runtime.py",
             (("    return counted_loops(stages, count,", "    return counted_loops(stages[:1], count,"),),
             (f"{KV_CACHE}test_a_write_one_position_at_a_time_is_a_python_loop",), "sandbox"),
    # issue 45: the kv_cache lab's Part 3 graders of the whole prompt (grader/checks/gqa/) and their probe
    Mutation("gqa-parameter-shapes", "grader/checks/gqa/probing.py",
             (("    problem = parameters_problem(args, answer.get(\"parameters\") or {})\n", "    problem = None\n"),),
             (f"{KV_GQA}test_wk_sized_for_n_heads_is_named_from_the_parameters_shape",
              f"{KV_GQA_MUTANT}[kv-heads-ignored]"), "sandbox"),
    Mutation("gqa-heads-split-by-n-heads", "grader/checks/gqa/probing.py",
             (("        ctx.probed[\"gqa\"] = split_by_n_heads(results)", "        ctx.probed[\"gqa\"] = results"),),
             (f"{KV_GQA_MUTANT}[kv-heads-ignored__2]",), "sandbox"),
    Mutation("gqa-judge-weights-fit", "grader/graph/gqa_answers.py",
             (("    if misfits:\n", "    if False:\n"),),
             (f"{KV_GQA}test_the_judge_runs_no_graph_with_weights_of_other_shapes_than_the_modules",), "unit"),
    Mutation("gqa-values-compared", "grader/checks/gqa/behaviour.py",
             (("            problem = problem or compare(out_tensor(answer), x, weights, config)\n",
               "            problem = problem\n"),),
             (f"{KV_GQA}test_a_mistake_in_the_numbers_is_named_by_the_values_check_and_the_gradients_wait_for_it"
              "[missing-scale]",), "sandbox"),
    Mutation("gqa-head-split-in-named", "grader/checks/gqa/variants.py",
             (('"head-split-in": "qkv", ', ""),),
             (f"{KV_GQA_MUTANT}[head-split]",), "unit"),
    Mutation("gqa-gradient-comparison", "grader/checks/gqa/behaviour.py",
             (("    problem = compare_gradients([names[i] for i in order],",
               "    problem = None and compare_gradients([names[i] for i in order],"),),
             (f"{KV_GQA_MUTANT}[broken-grad__2]",), "sandbox"),
    Mutation("gqa-gradient-cut-first", "grader/checks/gqa/behaviour.py",
             (("    order = sorted(range(len(names)), key=lambda i: not cut(grads.get(names[i]), expected[i]))",
               "    order = range(len(names))"),),
             (f"{KV_GQA_MUTANT}[broken-grad__2]",), "sandbox"),
    Mutation("gqa-loop-grown", "grader/checks/gqa/runtime.py",
             (("    whole_pass = counted_loops(stages, count,", "    whole_pass = counted_loops(stages[:1], count,"),
              ("    cached = counted_loops(stages, count_decoding,", "    cached = counted_loops(stages[:1], count_decoding,")),
             (f"{KV_GQA_MUTANT}[python-loop]", f"{KV_GQA_MUTANT}[python-loop__2]"), "sandbox"),
    Mutation("mha-device-after-use", "grader/sandbox/graph_probes.py",
             (('            if device != "cpu" and calls:\n', '            if False:\n'),),
             ("tests/checks/test_graders.py::test_mutant_loses_points_and_is_diagnosed[mask-not-buffer__3]",), "sandbox"),
    Mutation("fix-registers-a-mask-made-at-the-first-call", "grader/fixes/rewrites/masks.py",
             (("            elif isinstance(n.value, ast.Constant) and n.value.value is None",
               "            elif False and isinstance(n.value, ast.Constant) and n.value.value is None"),),
             ("tests/fixes/test_fixes.py::test_mutant_gets_its_fix_verified_and_shown_with_the_right_line"
              "[mask-not-buffer__3]",), "sandbox"),
    Mutation("device-mistake-after-use", "grader/checks/diagnosis.py",
             (("    left_behind = [name for name in made_by_a_call if", "    left_behind = [name for name in () if"),),
             ("tests/checks/test_graders.py::test_mutant_loses_points_and_is_diagnosed[mask-not-buffer__3]",
              f"{KV_GQA_MUTANT}[mask-not-buffer]", "tests/checks/test_core_diagnosis.py::"
              "test_a_plain_attribute_a_call_made_is_the_mistake_only_where_the_failing_line_reads_it[read-there]"),
             "sandbox"),
    Mutation("device-mistake-after-use-where-read", "grader/checks/diagnosis.py",
             (("    left_behind = [name for name in made_by_a_call if re.search(", "    left_behind = [name for name in made_by_a_call if 1 or re.search("),),
             ("tests/checks/test_core_diagnosis.py::test_a_plain_attribute_a_call_made_is_the_mistake_only_where_the_"
              "failing_line_reads_it[kept-for-display]",), "unit"),
    Mutation("gqa-device-after-use", "grader/sandbox/gqa_probes.py",
             (('            made = probes.used_before_the_move(module, x) if device != "cpu" else []',
               "            made = []"),),
             (f"{KV_GQA_MUTANT}[mask-not-buffer]",), "sandbox"),
    Mutation("gqa-heads-never-repeated-named", "grader/checks/gqa/probing.py",
             (("    if found and {int(found.group(1)), int(found.group(2))} == {n_heads, n_kv_heads}:",
               "    if False:"),),
             (f"{KV_GQA}test_key_value_heads_never_repeated_are_named_as_such_and_judged_on_devices_with_as_many",),
             "sandbox"),
    Mutation("gqa-runs-with-groups-beyond-one-head", "grader/checks/gqa/probing.py",
             (("    return next((config for config in ran if 1 < config[4] < config[3]),",
               "    return next((config for config in ran if config[4] < config[3]),"),),
             (f"{KV_GQA_MUTANT}[kv-heads-ignored__3]",), "sandbox"),
    Mutation("gqa-decode-goes-back", "grader/checks/gqa/decoding.py",
             (("[0, prompt + 2, 1], [0, prompt + 1, 1]],", "[0, prompt + 2, 1]],"),),
             (f"{KV_DECODE}test_a_position_counted_instead_of_start_pos_is_caught_where_a_position_is_decoded_again"
              "[positions counted per cache]",), "sandbox"),
    Mutation("gqa-decode-without-groups", "grader/checks/gqa/decoding.py",
             (("(args, steps) for steps in scenarios), (plain, ungrouped)]", "(args, steps) for steps in scenarios)]"),),
             (f"{KV_DECODE}test_a_module_that_leaves_the_cache_out_where_no_head_is_repeated_loses_the_decode_points",),
             "sandbox"),
    Mutation("gqa-decode-going-back-said", "grader/checks/gqa/decoding.py",
             (("            if _goes_back(steps, index):", "            if False:"),),
             (f"{KV_DECODE}test_a_position_counted_instead_of_start_pos_is_caught_where_a_position_is_decoded_again"
              "[positions counted in Python]",), "sandbox"),
    Mutation("gqa-device-through-a-cache", "grader/checks/gqa/runtime.py",
             (('    cases = [(label, None), (f"{label}, KV cache:', '    cases = [(label, None)] or [(f"{label}, KV cache:'),),
             (f"{KV_GQA_MUTANT}[mask-device__2]",), "sandbox"),
    Mutation("gqa-device-judged", "grader/checks/gqa/runtime.py",
             (("    return device_sweep(ctx, cases,", "    return Outcome(True) or device_sweep(ctx, cases,"),),
             (f"{KV_GQA}test_an_output_made_on_the_cpu_costs_the_device_point_alone",), "sandbox"),
    Mutation("gqa-device-mistake-from-the-module", "grader/checks/gqa/runtime.py",
             (('        static = {name: places for name, places in ctx.static.items() if name != "mask-not-buffer"}',
               "        static = ctx.static"),),
             (f"{KV_GQA_MUTANT}[mask-device]",), "sandbox"),
    Mutation("catalog-names-no-lab", "grader/mistakes.json",
             (("or the name this part grades (the function or class the task names) is missing",
               "or a graded name (`scaled_dot_product_attention` or `MultiHeadAttention`) is missing"),),
             ("tests/report/test_catalog_per_exercise.py::"
              "test_a_report_of_one_lab_quotes_no_name_of_the_other[kv_cache-not-implemented]",), "unit"),
    Mutation("assignment-name-no-student-id", "grader/nbgrader/collector.py",
             (('        if self.layout_name() == "student_id" and released and f"{notebook_stem(name)[0]}.ipynb" in released:',
               "        if False:"),),
             ("tests/nbgrader_plugins/test_nbgrader_collector.py::"
              "test_an_assignment_named_with_an_underscore_is_no_students_file[kv_cache.ipynb-LmsCollector]",), "unit"),
    Mutation("archive-named-after-the-assignment", "grader/nbgrader/safe_extractor.py",
             (('        if assignment is not None and (notebook_stem(name)[0] == assignment or '
               'name.startswith(f"{assignment}_")):', "        if False:"),),
             ("tests/nbgrader_plugins/test_archive_named_after_the_assignment.py::"
              "test_an_archive_named_after_the_assignment_delivers_every_students_notebook[kv_cache-kv_cache_all.zip]",
              "tests/nbgrader_plugins/test_archive_named_after_the_assignment.py::"
              "test_a_students_own_archive_delivers_their_notebook_named_after_the_assignment_and_no_one_elses"
              "[kv_cache.ipynb]"), "unit"),
    Mutation("grade-all-exercise-name-no-student", "grader/grade_all/discovery.py",
             (("    match = None if notebook_stem(name)[0] in NAMES else STUDENT_ID.match(name)",
               "    match = STUDENT_ID.match(name)"),),
             ("tests/grade_all/test_discovery_exercise_names.py::"
              "test_a_file_named_as_an_exercise_is_a_student_of_its_own_name",), "unit"),
    Mutation("dropout-weights-search-in-tolerance-units", "grader/checks/mha/dropout_patterns.py",
             (("            picked[:, h] = ((through_wo[:, h] - left.unsqueeze(2)) / room).abs().amax(-1).argmin(-1)",
               "            picked[:, h] = (through_wo[:, h] - left.unsqueeze(2)).square().sum(-1).argmin(-1)"),),
             ("tests/checks/test_dropout_pattern.py::"
              "test_attention_weights_dropped_are_read_through_an_error_just_inside_the_tolerance",), "unit"),
    Mutation("repeat-wide-model-past-the-fixed-cases", "grader/checks/repeat/behaviour.py",
             (('    return ctx.sizes("repeat.values wide", range(1, 3), range(5, 9),',
               '    return ctx.sizes("repeat.values wide", range(1, 3), range(4, 9),'),),
             ("tests/checks/test_kv_cache_repeat.py::"
              "test_the_wide_model_is_wider_than_every_fixed_case_under_every_secret",), "unit"),
    Mutation("mask-buffer-meets-self-attention", "grader/checks/mha/state.py",
             ((",\n                                                inputs(ctx, 1, max_len, dim, 145, self_attention=True)])", "])"),),
             ("tests/checks/test_decoys_keep_sameness.py::test_a_wrong_self_attention_path_scores_no_more_than_the_same_mistake_everywhere",), "sandbox"),
    Mutation("low-precision-meets-self-attention", "grader/checks/mha/state.py",
             (("[call, call, inputs(ctx, 2, 6, dim, 147, self_attention=True, dtype=dtype)]", "[call, call]"),),
             ("tests/checks/test_decoys_keep_sameness.py::test_a_wrong_self_attention_path_scores_no_more_than_the_same_mistake_everywhere",), "sandbox"),
    Mutation("gradients-meet-self-attention", "grader/checks/mha/gradients.py",
             ((", inputs(ctx, 2, T, dim, 163, True, torch.float64)]", "]"),),
             ("tests/checks/test_decoys_keep_sameness.py::test_a_wrong_self_attention_path_scores_no_more_than_the_same_mistake_everywhere",), "sandbox"),
    Mutation("gradients-of-one-input-given-thrice", "grader/checks/mha/gradients.py",
             (("    leaves = _each_once(call, lambda x: x.clone().requires_grad_(True))",
               "    leaves = {name: x.clone().requires_grad_(True) for name, x in call.items()}"),),
             ("tests/checks/test_decoys_keep_sameness.py::test_a_self_attention_path_is_graded_where_self_attention_is_asked",), "sandbox"),
    Mutation("replay-calls-with-one-input-one", "grader/sandbox/replay.py",
             (("call(*alike(other, lambda t: t.detach().clone()))", "call(*[t.detach().clone() for t in other])"),),
             ("tests/checks/test_decoys_keep_sameness.py::test_a_self_attention_path_is_graded_where_self_attention_is_asked",), "sandbox"),
    Mutation("replay-snapshot-keeps-one-input-one", "grader/sandbox/graph_probes.py",
             (("before = alike(inputs[:varied], lambda t: t.detach().clone())", "before = [t.detach().clone() for t in inputs[:varied]]"),),
             ("tests/checks/test_decoys_keep_sameness.py::test_a_self_attention_path_is_graded_where_self_attention_is_asked",), "sandbox"),
    Mutation("gradients-in-float32-keep-one-input-one", "grader/checks/mha/gradients.py",
             (("        calls = [_each_once(call, lambda x: x.float()) for call in calls]",
               "        calls = [{name: x.float() for name, x in call.items()} for call in calls]"),),
             ("tests/checks/test_decoys_keep_sameness.py::"
              "test_a_module_checked_in_float32_meets_its_self_attention_path_in_the_gradients_check",), "sandbox"),
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


def table() -> str:
    """The mutations as the Markdown table docs/developing.md holds (tests/architecture/test_mutation_table.py keeps them equal)."""
    rows = ["| mutation | file it edits | tests that must go red | tier |", "| --- | --- | --- | --- |"]
    rows += [f"| `{m.name}` | `{m.file}` | {', '.join(f'`{t}`' for t in m.tests)} | {m.tier} |" for m in MUTATIONS]
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    if sys.argv[1:] == ["--table"]:
        print(table(), end="")
        sys.exit(0)
    sys.exit(main(sys.argv[1:]))
