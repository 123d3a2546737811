"""Does the graph runner accept every operator honest attention code dispatches, by a rule, and refuse the built-in
attention by what its kernels are, not by their names?

The rule is `grader/graph/ops.py`. The coverage test traces every honest file of the suite (the correct styles, the
corpus, the reconstructions) as the worker records it, and holds the whole operator set to the rule; the widened
operators are those PyTorch's own attention code and common libraries use, each in an attention the parent runs on
inputs of its own and compares with torch's own attention.
"""
from __future__ import annotations

import ast
import importlib.util
import json
import math
import re
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from grader.graph import decode, ops, run
from grader.graph.decode import GraphRefused
from grader.sandbox import tracing

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
HONEST = sorted([*ROOT.glob("tests/submissions/correct/*.py"), *ROOT.glob("tests/corpus/*.py")])
NOT_HAND_INS = {"expected.py", "truth.py", "__init__.py"}


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"honest_{path.parent.name}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass of the file looks its module up
    spec.loader.exec_module(module)
    return module


def _dispatched(path: Path) -> set[str]:
    """The aten targets one file's two graded names dispatch, forward and backward, dropout on and off, causal
    and not, as the worker's recorder names them."""
    module = _load(path)
    found: set[str] = set()
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 5, 8, requires_grad=True) for _ in range(3))
    for is_causal in (True, False):
        sdpa = getattr(module, "scaled_dot_product_attention", None)
        if sdpa is not None:
            found |= _record(lambda q, k, v: [t for t in sdpa(q, k, v, is_causal) if isinstance(t, torch.Tensor)],
                             [q, k, v])
        if hasattr(module, "MultiHeadAttention") and hasattr(module, "ModelArgs"):
            args = module.ModelArgs()
            args.dropout = 0.25
            attention = module.MultiHeadAttention(args, is_causal)
            x = torch.randn(2, 7, args.dim, requires_grad=True)
            for training in (True, False):
                attention.train(training)
                found |= _record(lambda x: [attention(x, x, x)], [x])
    return found


def _record(function, inputs: list[torch.Tensor]) -> set[str]:
    """What the call dispatches up to its end, or up to the error a buggy corpus file raises on these inputs."""
    recorder = tracing.Recorder(inputs)
    with recorder:
        try:
            outputs = function(*inputs)
            torch.autograd.grad(sum(o.float().sum() for o in outputs), inputs, allow_unused=True)
        except Exception:  # noqa: BLE001 (a file of the corpus is buggy by design; what it reached counts)
            pass
    return {entry[1] for entry in recorder.nodes if entry[0] == "call"}


@pytest.fixture(scope="module")
def honest_operators() -> dict[str, set[str]]:
    """target -> the honest files that dispatch it."""
    by_target: dict[str, set[str]] = {}
    for path in HONEST:
        if path.name not in NOT_HAND_INS:
            for target in _dispatched(path):
                by_target.setdefault(target, set()).add(f"{path.parent.name}/{path.name}")
    return by_target


def test_every_operator_honest_code_dispatches_is_accepted_by_the_rule(honest_operators):
    refused = {t: sorted(files)[:3] for t, files in honest_operators.items() if ops.verdict(t) != "allowed"}
    assert not refused, refused
    files = {name for names in honest_operators.values() for name in names}
    assert len(files) == len([p for p in HONEST if p.name not in NOT_HAND_INS])  # every file was traced
    assert len(files) >= 75 and len(honest_operators) >= 70, sorted(honest_operators)  # 75 files, 70 overloads


def test_a_layer_norm_inside_a_hand_ins_module_is_among_the_operators_accepted(honest_operators):
    """The two corpus files whose module holds an nn.LayerNorm (a value mistake, not an operator the grader refuses)
    dispatch native_layer_norm, forward and backward, and the rule accepts both."""
    layer_norm = {"corpus/vit_pytorch_prenorm_layer_norm.py", "corpus/jadore_aiayn_residual_layer_norm.py"}
    for target in ("aten.native_layer_norm.default", "aten.native_layer_norm_backward.default"):
        assert layer_norm <= honest_operators.get(target, set()), target
        assert ops.verdict(target) == "allowed", ops.why_unsupported(target)


def _every_aten_overload() -> list[str]:
    return sorted({f"aten.{s.name[6:]}.{s.overload_name or 'default'}" for s in torch._C._jit_get_all_schemas()
                   if s.name.startswith("aten::")})


def _built_in_attention_kernels() -> list[str]:
    """What torch exposes of its built-in attention, found here by name only to test that the rule, which reads no
    names, refuses each: scaled-dot-product and its flash, efficient, cudnn, math and fused variants, the fused
    multi-head layers, and the softmaxes only the built-in attention uses."""
    pattern = re.compile(r"attention|attn|multi_head|transformer_encoder|_qkv|masked_softmax|safe_softmax|_sdp_")
    return [t for t in _every_aten_overload() if pattern.search(t.split(".")[1])]


def test_every_built_in_attention_kernel_torch_exposes_is_forbidden_by_the_rule():
    kernels = _built_in_attention_kernels()
    assert len(kernels) >= 30, kernels  # 38 in torch 2.13, out= overloads included
    for expected in ("aten.scaled_dot_product_attention.default", "aten._scaled_dot_product_flash_attention.default",
                     "aten._scaled_dot_product_efficient_attention.default",
                     "aten._scaled_dot_product_cudnn_attention.default", "aten._scaled_dot_product_attention_math.default",
                     "aten._native_multi_head_attention.default", "aten._transformer_encoder_layer_fwd.default",
                     "aten._masked_softmax.default", "aten._safe_softmax.default"):
        assert expected in kernels
    assert {t: ops.verdict(t) for t in kernels if ops.verdict(t) != "forbidden"} == {}


def test_the_attention_rule_reads_what_a_kernel_takes_and_does_not_its_name():
    """A kernel renamed stays refused (the rule sees its schema), and a name that merely sounds like attention is
    judged as any operator."""
    names = re.compile(r"attention|attn|sdp|multi_head|transformer|safe_softmax|masked_softmax|flash|cudnn")
    assert not [text for text in _rule_strings() if names.search(text)]
    renamed = torch.library.Library("i43_renamed", "DEF")
    renamed.define("fused_op(Tensor query, Tensor key, Tensor value) -> Tensor")
    schema = torch.ops.i43_renamed.fused_op.default
    assert ops.attention_kernel(schema)
    assert not ops.attention_kernel(torch.ops.aten.softmax.int)
    assert not ops.attention_kernel(torch.ops.aten.masked_fill.Scalar)
    assert not ops.attention_kernel(torch.ops.aten.log_softmax.int)


def _rule_strings() -> list[str]:
    """Every string and name the attention rule's code holds (its docstrings aside)."""
    tree = ast.parse((ROOT / "grader/graph/ops.py").read_text(encoding="utf-8"))
    found = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in ("attention_kernel", "_zeroes_masked_rows"):
            node.body = node.body[1:]  # the docstring
            found += [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
            found += [n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(node)
                      if isinstance(n, (ast.Name, ast.Attribute))]
        elif isinstance(node, ast.Assign) and any(t.id in ("ATTENTION_OPERANDS", "HEAD_COUNTS")
                                                  for t in node.targets if isinstance(t, ast.Name)):
            found += [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    assert "query" in found and "mask" in found  # the rule's own words are read
    return found


@pytest.mark.parametrize("target, why", [
    ("aten.nonzero.default", "size depends on values"),
    ("aten.unique_consecutive.default", "size depends on values"),
    ("aten._print.default", "returns nothing"),
    ("aten.set_.source_Storage", "takes a Storage"),
    ("aten.from_file.default", "reads a file"),
    ("aten.add.out", "writes into an argument"),
    ("aten.as_strided_scatter.default", "strides of the caller's choosing"),
    ("aten.dropout.default", "no generator"),
    ("aten.native_norm.default", "no meta kernel"),
    ("aten.batch_norm_stats.default", "no meta kernel"),
])
def test_what_cannot_be_bounded_is_refused_with_its_reason(target, why):
    assert ops.verdict(target) == "unsupported"
    assert why in ops.why_unsupported(target)


def test_value_sized_operators_a_rule_bounds_are_accepted():
    """masked_select and `.item()` have no meta kernel: `bounds` plans them by their rule."""
    for target in ("aten.masked_select.default", "aten._local_scalar_dense.default", "aten.index.Tensor",
                   "aten.repeat_interleave.Tensor", "aten.equal.default"):
        assert ops.verdict(target) == "allowed", ops.why_unsupported(target)


@pytest.mark.parametrize("target, why", [("aten.unique_consecutive.default", "size depends on values"),
                                         ("aten.native_norm.default", "no meta kernel")])
def test_an_unbounded_operator_in_a_graph_is_refused_before_it_runs(target, why):
    with pytest.raises(GraphRefused, match=why):
        run.run(_graph_of([target]), [torch.randn(3)], [torch.zeros(1)])


def _graph_of(calls: list) -> decode.Graph:
    """A chain of calls on the graph's one input: each a target, or (target, its further arguments...)."""
    nodes = [["input", 0]]
    for position, call in enumerate(calls):
        target, *more = call if isinstance(call, tuple) else (call,)
        nodes.append(["call", target, [{"n": position}, *more], {"kwargs": {}}])
    nodes.append(["output", [{"n": len(calls)}]])
    text = json.dumps({"format": 1, "inputs": 1, "nodes": nodes}).encode()
    return decode.decode(text, 1)


# attentions written with the operators PyTorch's own attention code and common libraries use; each is exact
def _scores(q, k):
    return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])


def triu_indices(q, k, v):
    scores, t = _scores(q, k), q.shape[-2]
    rows, cols = torch.triu_indices(t, t, offset=1)
    scores[..., rows, cols] = float("-inf")
    return scores.softmax(-1) @ v


def tril_indices(q, k, v):
    t = q.shape[-2]
    keep = torch.zeros(t, t, dtype=torch.bool)
    rows, cols = torch.tril_indices(t, t)
    keep[rows, cols] = True
    return _scores(q, k).masked_fill(~keep, float("-inf")).softmax(-1) @ v


def index_put(q, k, v):
    t = q.shape[-2]
    bias = torch.zeros(t, t).index_put((*torch.triu_indices(t, t, 1),), torch.tensor(float("-inf")))
    return (_scores(q, k) + bias).softmax(-1) @ v


def scatter(q, k, v):
    t = q.shape[-2]
    later = torch.arange(t).unsqueeze(0).expand(t, t)
    bias = torch.zeros(t, t).scatter(1, later, torch.where(later > torch.arange(t)[:, None], float("-inf"), 0.0))
    return (_scores(q, k) + bias).softmax(-1) @ v


def masked_scatter(q, k, v):
    t = q.shape[-2]
    future = torch.ones(t, t, dtype=torch.bool).triu(1)
    scores = _scores(q, k)
    filler = torch.full_like(scores, float("-inf"))
    return scores.masked_scatter(future.expand_as(scores), filler).softmax(-1) @ v


def narrow(q, k, v):
    t = q.shape[-2]
    cached = torch.ones(16, 16, dtype=torch.bool).triu(1)
    future = cached.narrow(0, 0, t).narrow(1, 0, t)
    return _scores(q, k).masked_fill(future, float("-inf")).softmax(-1) @ v


def unflatten(q, k, v):
    lead, t, d = q.shape[:-2], q.shape[-2], q.shape[-1]
    flat = [x.reshape(-1, t, d) for x in (q, k, v)]
    out = causal(*flat)
    return out.unflatten(0, lead)


def logsumexp(q, k, v):
    scores = _scores(q, k).masked_fill(_future(q), float("-inf"))
    return torch.exp(scores - scores.logsumexp(-1, keepdim=True)) @ v


def amax(q, k, v):
    scores = _scores(q, k).masked_fill(_future(q), float("-inf"))
    weights = torch.exp(scores - scores.amax(-1, keepdim=True))
    return weights / weights.sum(-1, keepdim=True) @ v


def cumsum(q, k, v):
    t = q.shape[-2]
    future = torch.ones(t, t, dtype=torch.long).cumsum(-1) > torch.arange(1, t + 1)[:, None]
    return _scores(q, k).masked_fill(future, float("-inf")).softmax(-1) @ v


def resize_(q, k, v):
    t = q.shape[-2]
    cached = torch.empty(0)
    future = torch.triu(cached.resize_(t, t).fill_(float("-inf")), 1)
    return (_scores(q, k) + future).softmax(-1) @ v


def masked_fill_(q, k, v):
    scores = _scores(q, k)
    scores.masked_fill_(_future(q), float("-inf"))
    return scores.softmax(-1) @ v


def logical_or_(q, k, v):
    t = q.shape[-2]
    future = torch.ones(t, t, dtype=torch.bool).triu(1)
    padding = torch.zeros(t, t, dtype=torch.bool)
    future.logical_or_(padding)
    return _scores(q, k).masked_fill(future, float("-inf")).softmax(-1) @ v


def causal(q, k, v):
    return _scores(q, k).masked_fill(_future(q), float("-inf")).softmax(-1) @ v


def _future(q):
    t = q.shape[-2]
    return torch.ones(t, t, dtype=torch.bool).triu(1)


WIDENED = {  # the attention, and the packet its graph must hold
    "triu_indices": (triu_indices, "triu_indices"), "tril_indices": (tril_indices, "tril_indices"),
    "index_put": (index_put, "index_put"), "scatter": (scatter, "scatter"),
    "masked_scatter": (masked_scatter, "masked_scatter"), "narrow": (narrow, "slice"),
    "unflatten": (unflatten, "view"), "logsumexp": (logsumexp, "logsumexp"), "amax": (amax, "amax"),
    "cumsum": (cumsum, "cumsum"), "resize_": (resize_, "resize_"), "masked_fill_": (masked_fill_, "masked_fill_"),
    "logical_or_": (logical_or_, "logical_or_"),
}


@pytest.mark.parametrize("attention, packet", WIDENED.values(), ids=WIDENED.keys())
def test_an_attention_written_with_a_widened_operator_runs_exactly_on_the_parents_inputs(attention, packet):
    recorder = tracing.trace(lambda *t: [attention(*t)], [torch.randn(2, 3, 5, 8) for _ in range(3)])
    text, constants = tracing.encode(recorder)
    graph = decode.decode(bytes(text.numpy().tobytes()), len(constants))
    assert packet in {t.split(".")[1] for t in graph.targets() if "." in t}, sorted(graph.targets())
    assert not {t for t in graph.targets() if ops.verdict(t) != "allowed"}
    fresh = [torch.randn(2, 3, 5, 8) for _ in range(3)]
    (out,), _ = run.run(graph, fresh, constants)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(*fresh, is_causal=True))


def test_layer_norm_and_scale_norm_inside_a_module_run_exactly():
    """native_layer_norm (nn.LayerNorm) and linalg_vector_norm (ScaleNorm's `x.norm`) before the projections."""
    layer_norm = torch.nn.LayerNorm(8)

    def normed(x):
        scale = math.sqrt(8)
        scaled = scale * x / torch.linalg.vector_norm(x, dim=-1, keepdim=True).clamp(min=1e-5)
        return [layer_norm(x), scaled]
    recorder = tracing.trace(lambda x: normed(x), [torch.randn(2, 5, 8)])
    text, constants = tracing.encode(recorder)
    graph = decode.decode(bytes(text.numpy().tobytes()), len(constants))
    targets = graph.targets()
    assert "aten.native_layer_norm.default" in targets and "aten.linalg_vector_norm.default" in targets
    fresh = torch.randn(2, 5, 8)
    outputs, _ = run.run(graph, [fresh], constants)
    for got, want in zip(outputs, normed(fresh)):
        torch.testing.assert_close(got, want)


def test_resize_grows_an_owned_tensor_within_the_bound_and_zeroes_what_it_adds():
    """The bytes resize_ adds are the parent's memory: zeroed, never read into a result."""
    (out,), _ = run.run(_graph_of([("aten.resize_.default", [64, 64])]), [torch.ones(4)], [torch.zeros(1)])
    assert out.shape == (64, 64) and out.flatten()[:4].tolist() == [1.0] * 4 and not out.flatten()[4:].any()
    with pytest.raises(GraphRefused, match="above"):
        run.run(_graph_of([("aten.resize_.default", [1 << 14, 1 << 14])]), [torch.ones(4)], [torch.zeros(1)])


def test_a_random_operator_draws_from_the_runs_generator():
    """torch.rand without a generator: run as its packet's overload that takes one, the same draw for a seed."""
    nodes = [["input", 0], ["call", "aten.rand.default", [[3, 4]], {"kwargs": {}}], ["output", [{"n": 1}]]]
    graph = decode.decode(json.dumps({"format": 1, "inputs": 1, "nodes": nodes}).encode(), 1)
    first, _ = run.run(graph, [torch.ones(1)], [torch.zeros(1)], seed=5)
    again, _ = run.run(graph, [torch.ones(1)], [torch.zeros(1)], seed=5)
    other, _ = run.run(graph, [torch.ones(1)], [torch.zeros(1)], seed=6)
    assert torch.equal(first[0], again[0]) and not torch.equal(first[0], other[0])


def test_a_student_calling_the_built_in_attention_is_still_told_forbidden():
    """F.scaled_dot_product_attention reaches a fused kernel the rule refuses; nn.MultiheadAttention's composite is
    named by the tracer (`built_in`); either way the graph's verdict is `forbidden`, which the report names
    `forbidden-api`."""
    layer = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    calls = {"F.scaled_dot_product_attention": lambda q, k, v: [F.scaled_dot_product_attention(q, k, v)],
             "nn.MultiheadAttention": lambda q, k, v: [layer(q[0], k[0], v[0], need_weights=False)[0]]}
    for name, call in calls.items():
        recorder = tracing.trace(call, [torch.randn(2, 5, 8) for _ in range(3)], source_file=__file__)
        text, constants = tracing.encode(recorder)
        verdicts = decode.verdicts(decode.decode(bytes(text.numpy().tobytes()), len(constants)))
        assert verdicts["forbidden"] and not verdicts["unsupported"], (name, verdicts)
