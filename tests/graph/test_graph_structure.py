"""Does the structural reading of a module's graph name each mistake a compound bug holds, and nothing on honest code?

grader/graph/structure.py holds the graph of one forward call against the reference's structure. Here the graphs
are recorded in this process (our own files only: every correct style, every honest corpus file, the
reconstructions of issue 43) with the tracer the worker uses, and read with no worker and no judge.
"""
import importlib.util
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from grader.graph import decode, structure
from grader.sandbox import tracing
from support.paths import CORPUS, REFERENCE, SUBMISSIONS

pytestmark = pytest.mark.unit

sys.path.insert(0, str(CORPUS))
from expected import ALL  # noqa: E402

B, T, DIM, HEADS = 2, 5, 32, 4  # T != HEADS, so a split in the wrong order shows in the view's sizes
HONEST = [REFERENCE, *sorted((SUBMISSIONS / "correct").glob("*.py")),
          *(CORPUS / f"{name}.py" for name, verdict in sorted(ALL.items())
            if not verdict["fails"] and not verdict["mistakes"])]
MUTANTS = SUBMISSIONS / "mutants"


def module_graph(path: Path, *, one_tensor: bool = False) -> tuple[decode.Graph, list[str], dict]:
    """One eval-mode forward of the file's MultiHeadAttention, recorded as the worker records it: q, k, v (or one
    tensor for all three), then the module's parameters and buffers as inputs. Also the answer the worker sends."""
    spec = importlib.util.spec_from_file_location(f"structure_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass with string annotations looks its module up there
    spec.loader.exec_module(module)
    args = SimpleNamespace(dim=DIM, n_heads=HEADS, dropout=0.0, max_seq_len=16)
    model = module.MultiHeadAttention(args, is_causal=True).eval()
    named = [*model.named_parameters(), *model.named_buffers()]
    names = [name for name, _ in named]

    def forward(q, k, v, *state):
        return [torch.func.functional_call(model, dict(zip(names, state)), (q, k, v))]

    generator = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(B, T, DIM, generator=generator) for _ in range(3))
    if one_tensor:
        k = v = q
    text, constants = tracing.encode(tracing.trace(forward, [q, k, v, *(t.detach() for _, t in named)]))
    graph = decode.decode(bytes(text.numpy().tobytes()), len(constants))
    return graph, names, {"graph": text, "constants": constants}


def mismatches(path: Path) -> list[str]:
    graph, names, _ = module_graph(path)
    return structure.module_mismatches(graph, names, B, T, DIM, HEADS)


@pytest.mark.parametrize("path", HONEST, ids=[f"{p.parent.name}/{p.stem}" for p in HONEST])
def test_no_id_is_read_from_the_graph_of_honest_code(path):
    assert mismatches(path) == []


def test_the_honest_files_cover_the_idioms_the_reading_must_leave_alone():
    """The reference, every correct style (einsum, baddbmm, fused projections, a scale folded into q, reshape or
    view, additive or filled masks) and the honest corpus: enough files that a rule too eager would meet one."""
    assert len(HONEST) >= 45


@pytest.mark.parametrize("name, ids", [
    ("wrong-input__7", ["wrong-input", "wrong-scale"]),  # k = self.wk(q) on the projected q; scores * sqrt(hs)
    ("head-split__6", ["wrong-input", "head-split"]),  # view(B, H, T, hs) straight; v = self.wk(v)
])
def test_each_bug_of_a_compound_is_named_from_the_graph(name, ids):
    assert mismatches(MUTANTS / f"{name}.py") == ids


def test_one_tensor_for_q_k_and_v_tells_nothing_and_the_judge_reads_no_structure():
    """Self-attention called with one tensor: the graph reads one input three times, so which input reached the
    scores cannot be told. The rule alone would name the reference (every role is then "v"); the judge reads no
    structure for such a call (structure.of_call)."""
    graph, names, _ = module_graph(REFERENCE, one_tensor=True)
    assert structure.module_mismatches(graph, names, B, T, DIM, HEADS) != []
    x = torch.randn(B, T, DIM)
    call = {"q": x, "k": x.clone(), "v": x.clone()}
    assert structure.of_call(graph, call, names, HEADS) == []


def test_a_scale_that_is_a_tensor_or_a_mask_multiplied_in_names_no_scale():
    """A factor that is not a number written in the graph (a 0/1 mask multiplied into the scores) is not read as
    a scale: the numbers name mask-multiplied, and the structure says nothing of the scale."""
    assert "wrong-scale" not in mismatches(MUTANTS / "mask-multiplied__2.py")
    assert "missing-scale" not in mismatches(MUTANTS / "mask-multiplied__2.py")


def test_an_output_projection_built_in_forward_is_not_named_an_input_read_wrong():
    """`nn.Linear(C, C)(y)` built in forward leaves wo unread: that is layers-in-forward, which the checks name; an
    unread wo is no input read wrong, so the reading names nothing."""
    assert mismatches(MUTANTS / "layers-in-forward.py") == []


def test_the_parent_keeps_only_the_ids_the_reading_can_name():
    from grader.checks.mha.probing import structural_ids
    assert structural_ids({"structural": ["wrong-input", "tampering", 3]}) == ["wrong-input"]
    assert structural_ids({"structural": json.loads('"wrong-input"')}) == []
    assert structural_ids({}) == []
