"""Can a submission earn points from measurements it forged, from the built-in attention under
another name, or from properties of code that computes no attention?

Each attack in tests/submissions/forgery/ names its honest twin (`# twin:`), the mistake it must be
reported with (`# expect:`) and the parts that must score 0 (`# affected:`); it may never score
more than its twin. The rules must also leave every honest style alone.
"""
import subprocess
import sys
import textwrap

import pytest

from support.hand_ins import header

from support.paths import REFERENCE, ROOT, STUBS, SUBMISSIONS
from grader import rules
from grader.exercises.attention import EXERCISE, PART
from grader.grade_all.text import class_summary
from grader.handin.source import load_submission, submission_from_cells

pytestmark = pytest.mark.sandbox

FORGERY = SUBMISSIONS / "forgery"
ATTACKS = sorted(p for p in FORGERY.glob("*.py") if header(p, "twin"))
HONEST_FILES = sorted(FORGERY.glob("honest_*.py")) + sorted((SUBMISSIONS / "correct").glob("*.py")) + [
    REFERENCE, REFERENCE.with_suffix(".ipynb"), ROOT / "release" / "attention" / "attention.ipynb", STUBS]

GRADED_PROLOGUE = "import math\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def rules_broken(code: str) -> list[rules.Violation]:
    """The violations in `code` as the worker would run it (extracted like a notebook cell)."""
    source = submission_from_cells([GRADED_PROLOGUE + textwrap.dedent(code)], "snippet.py", is_notebook=False).source
    return rules.violations(source, EXERCISE)


def sdpa_body(body: str, prelude: str = "") -> str:
    """A Part 1 function whose body is `body` (indented for it), after module-level `prelude`."""
    return prelude + "\ndef scaled_dot_product_attention(Q, K, V, is_causal=True):\n" + textwrap.indent(
        textwrap.dedent(body), "    ") + "\n    return Q, Q\n"


@pytest.mark.parametrize("path", HONEST_FILES, ids=[p.stem if p.suffix == ".py" else p.name for p in HONEST_FILES])
def test_rules_leave_every_honest_submission_alone(path):
    assert rules.violations(load_submission(path).source, EXERCISE) == []


HONEST_SNIPPETS = {
    "prints_and_fstrings": sdpa_body('print(f"Q {tuple(Q.shape)} on {Q.device}", Q.dtype)\nprint("weights:", Q.sum().item())'),
    "print_to_stderr": sdpa_body("print('T =', Q.size(-2), file=sys.stderr)\nsys.stdout.flush()", "import sys\n"),
    "asserts_and_finfo": sdpa_body("assert Q.size(-1) == K.size(-1), 'd_k differs'\nlow = torch.finfo(Q.dtype).min"),
    "typing_and_tensor_import": sdpa_body("x: Optional[Tensor] = None", "from typing import Optional, Tuple\nfrom torch import Tensor\n"),
    "future_annotations": sdpa_body("pass", "from __future__ import annotations\n"),
    "einops_and_einsum": sdpa_body("s = torch.einsum('...id,...jd->...ij', Q, K)\nw = rearrange(s, 'b h i j -> b h i j')",
                                   "from einops import rearrange, reduce\n"),
    "numpy_and_math": sdpa_body("scale = 1 / math.sqrt(Q.size(-1))\nn = np.sqrt(4.0)\nninf = float('-inf')", "import numpy as np\n"),
    "softmax_dtype_and_tril": sdpa_body("m = torch.tril(torch.ones(3, 3, device=Q.device))\n"
                                        "w = F.softmax(Q, dim=-1, dtype=torch.float32)"),
    "timing_and_warnings": sdpa_body("t0 = time.perf_counter()\nwarnings.warn('slow path')", "import time\nimport warnings\n"),
    "tf32_switch": sdpa_body("torch.backends.cuda.matmul.allow_tf32 = True"),
    "module_with_everything": """
        from dataclasses import dataclass, field

        @dataclass
        class ModelArgs:
            dim: int = 64
            n_heads: int = 4
            dropout: float = 0.0
            max_seq_len: int = 256

            def __post_init__(self):
                assert self.dim % self.n_heads == 0

        class MultiHeadAttention(nn.Module):
            def __init__(self, args, is_causal=False):
                nn.Module.__init__(self)
                self.heads = nn.ModuleList([nn.Linear(args.dim, args.dim, bias=False) for _ in range(2)])
                for name in ("wq", "wk", "wv", "wo"):
                    self.add_module(name, nn.Linear(args.dim, args.dim, bias=False))
                self.register_buffer("mask", torch.tril(torch.ones(args.max_seq_len, args.max_seq_len)))
                self.mask.requires_grad = False
                self._cache = None
                self.is_causal = is_causal

            def __repr__(self):
                return f"{self.__class__.__name__}(causal={self.is_causal})"

            def forward(self, input, k, v):
                projections = [getattr(self, name) for name in ("wq", "wk", "wv")]
                if hasattr(self, "mask") and self._cache is None:
                    self._cache = input.device
                return super().forward(input) if False else projections[0](input)
    """,
    "own_exception_and_autograd_function": """
        class ShapeError(ValueError):
            pass

        class Scale(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, grad):
                return grad * 2

        def scaled_dot_product_attention(Q, K, V, is_causal=True):
            if Q.dim() < 2:
                raise ShapeError("Q needs (..., T, d_k)")
            return Scale.apply(Q), Q
    """,
    # a notebook's plotting helper: no graded name uses it, so its import never matters
    "unused_plot_helper": sdpa_body("pass", "import matplotlib.pyplot as plt\n\ndef show(w):\n    plt.imshow(w)\n"),
}


@pytest.mark.parametrize("name", HONEST_SNIPPETS)
def test_rules_leave_honest_idioms_alone(name):
    assert rules_broken(HONEST_SNIPPETS[name]) == []


# (code, the mistake it must be reported with, the parts it must cost)
BREACHES = {
    "gc": (sdpa_body("import gc\ngc.collect()"), "forbidden-import", {"sdpa"}),
    "inspect": (sdpa_body("inspect.stack()", "import inspect\n"), "forbidden-import", {"sdpa"}),
    "ctypes": (sdpa_body("ctypes.pythonapi", "import ctypes\n"), "forbidden-import", {"sdpa"}),
    "importlib": (sdpa_body("importlib.import_module('gc')", "import importlib\n"), "forbidden-import", {"sdpa"}),
    "builtins": (sdpa_body("builtins.print", "import builtins\n"), "forbidden-import", {"sdpa"}),
    "grader": (sdpa_body("probes.PROBES.clear()", "from grader import probes\n"), "forbidden-import", {"sdpa"}),
    "relative_import": (sdpa_body("x", "from . import x\n"), "forbidden-import", {"sdpa"}),
    "sys_modules": (sdpa_body("sys.modules['grader.sandbox.worker']", "import sys\n"), "introspection", {"sdpa"}),
    "eval": (sdpa_body("eval('1')"), "introspection", {"sdpa"}),
    "exec": (sdpa_body("exec('x = 1')"), "introspection", {"sdpa"}),
    "compile": (sdpa_body("compile('1', 'f', 'eval')"), "introspection", {"sdpa"}),
    "globals": (sdpa_body("globals()['torch']"), "introspection", {"sdpa"}),
    "vars": (sdpa_body("vars(torch)"), "introspection", {"sdpa"}),
    "computed_getattr": (sdpa_body("name = '_' + 'C'\ngetattr(torch, name)"), "introspection", {"sdpa"}),
    "named_private_getattr": (sdpa_body("getattr(torch, '_C')"), "private-torch", {"sdpa"}),
    "shadowed_getattr": (sdpa_body("getattr(torch, 'x' + 'y')") + "\ndef other(getattr):\n    return getattr\n",
                         "introspection", {"sdpa"}),
    "dunder_dict": (sdpa_body("Q.__dict__"), "introspection", {"sdpa"}),
    "dunder_globals": (sdpa_body("scaled_dot_product_attention.__globals__"), "introspection", {"sdpa"}),
    "subclasses": (sdpa_body("().__class__.__base__.__subclasses__()"), "introspection", {"sdpa"}),
    "frames": (sdpa_body("g = (x for x in [1])\ng.gi_frame.f_back"), "introspection", {"sdpa"}),
    "module_as_value": (sdpa_body("t = torch\nt.allclose"), "introspection", {"sdpa"}),
    "type_three_args": (sdpa_body("type('X', (), {})"), "introspection", {"sdpa"}),
    "torch_C": (sdpa_body("torch._C._set_grad_enabled(True)"), "private-torch", {"sdpa"}),
    "torch_ops": (sdpa_body("torch.ops.aten.mm(Q, K)"), "private-torch", {"sdpa"}),
    "python_dispatch": (sdpa_body("from torch.utils._python_dispatch import _disable_current_modes"), "private-torch", {"sdpa"}),
    "torch_library": (sdpa_body("torch.library.Library('aten', 'IMPL')"), "private-torch", {"sdpa"}),
    "torch_overrides": (sdpa_body("torch.overrides.TorchFunctionMode"), "private-torch", {"sdpa"}),
    "torch_compile": (sdpa_body("torch.compile(F.softmax)"), "private-torch", {"sdpa"}),
    "is_meta": (sdpa_body("if Q.is_meta:\n    pass"), "device-probing", {"sdpa"}),
    "meta_string": (sdpa_body("if Q.device.type == 'meta':\n    pass"), "device-probing", {"sdpa"}),
    "fake_tensor": (sdpa_body("type(Q).__name__ == 'FakeTensor'"), "device-probing", {"sdpa"}),
    "data_ptr": (sdpa_body("Q.data_ptr() == 0"), "device-probing", {"sdpa"}),
    "patch_allclose": (sdpa_body("torch.allclose = lambda *a, **k: True"), "tampering", {"sdpa"}),
    "patch_eq": (sdpa_body("torch.Tensor.__eq__ = lambda a, b: True"), "tampering", {"sdpa"}),
    "patch_via_alias": (sdpa_body("from torch import Tensor as T\nT.add = None"), "tampering", {"sdpa"}),
    "setattr": (sdpa_body("setattr(torch, 'equal', None)"), "tampering", {"sdpa"}),
    "delete_attribute": (sdpa_body("del F.softmax"), "tampering", {"sdpa"}),
    "tensor_subclass": ("class Liar(torch.Tensor):\n    pass\n" + sdpa_body("Liar"), "tampering", {"sdpa", "mha"}),
    "dunder_method": (sdpa_body("class Box:\n    def __eq__(self, other):\n        return True"), "tampering", {"sdpa"}),
    "torch_function_method": (sdpa_body("class Box:\n    def __torch_function__(cls, *args):\n        return True"),
                              "tampering", {"sdpa"}),
    "operator_attrgetter": (sdpa_body("operator.attrgetter('_C')(torch)", "import operator\n"), "introspection", {"sdpa"}),
    "operator_methodcaller": (sdpa_body("methodcaller('mul', 2)(Q)", "from operator import methodcaller\n"),
                              "introspection", {"sdpa"}),
    "operator_getitem": (sdpa_body("operator.getitem(Q, 0)", "import operator\n"), "introspection", {"sdpa"}),
    "exit": (sdpa_body("exit()"), "tampering", {"sdpa"}),
    "os_exit": (sdpa_body("import os\nos._exit(0)"), "tampering", {"sdpa"}),
    "raise_system_exit": (sdpa_body("raise SystemExit(0)"), "tampering", {"sdpa"}),
    "sdpa_builtin": (sdpa_body("F.scaled_dot_product_attention(Q, K, V)"), "forbidden-api", {"sdpa"}),
    "sdpa_imported": (sdpa_body("f(Q, K, V)", "from torch.nn.functional import scaled_dot_product_attention as f\n"),
                      "forbidden-api", {"sdpa"}),
    "mha_builtin": (sdpa_body("nn.MultiheadAttention(8, 2)"), "forbidden-api", {"sdpa"}),
    "mha_forward_builtin": (sdpa_body("F.multi_head_attention_forward"), "forbidden-api", {"sdpa"}),
    "native_mha": (sdpa_body("torch._native_multi_head_attention"), "forbidden-api", {"sdpa"}),
}


@pytest.mark.parametrize("name", BREACHES)
def test_rules_catch_each_escape_hatch(name):
    code, mistake, parts = BREACHES[name]
    found = rules_broken(code)
    assert mistake in {v.mistake for v in found}, [(v.mistake, v.en) for v in found]
    assert set().union(*(v.parts for v in found)) == parts, [(v.mistake, sorted(v.parts)) for v in found]


def test_a_violation_costs_the_parts_whose_code_runs_it():
    helper = "def _helper(x):\n    return torch._C\n\n"
    sdpa = "def scaled_dot_product_attention(Q, K, V, is_causal=True):\n    return {}\n\n"
    mha = "class MultiHeadAttention(nn.Module):\n    def forward(self, q, k, v):\n        return {}\n"

    def parts(code):
        return set().union(*(v.parts for v in rules_broken(code)))

    assert parts(helper + sdpa.format("_helper(Q)") + mha.format("q")) == {"sdpa"}
    assert parts(helper + sdpa.format("Q") + mha.format("_helper(q)")) == {"mha"}
    assert parts(helper + sdpa.format("Q") + mha.format("scaled_dot_product_attention(q, k, v)")) == set()
    assert parts(helper + sdpa.format("_helper(Q)") + mha.format("scaled_dot_product_attention(q, k, v)")) == {"sdpa", "mha"}
    assert parts(helper + sdpa.format("Q") + mha.format("q")) == set(), "a helper no graded code calls never runs"
    at_load = "@_helper\n" + sdpa.format("Q") + mha.format("q")
    assert parts(helper + at_load) == {"sdpa", "mha"}, "a decorator runs when the code loads"
    default = "def scaled_dot_product_attention(Q, K, V, is_causal=True, x=_helper(1)):\n    return Q\n"
    assert parts(helper + default + mha.format("q")) == {"sdpa", "mha"}, "a default value runs when the code loads"


def test_a_violation_quotes_the_students_line_and_says_what_to_write(graded):
    report = graded(SUBMISSIONS / "mutants" / "private-torch.py")
    breach = next(c for c in report["checks"] if c["id"] == "sdpa.rules")
    assert breach["where"]["text"] == "weights = torch._softmax(scores, -1, False)"
    assert "weights = torch._softmax(scores, -1, False)" in breach["message_en"]
    assert "torch.softmax" in breach["message_en"] and "torch.softmax" in breach["message_zh"]
    assert report["score"] == PART["mha"].points and "private-torch" in report["mistakes"]


@pytest.mark.parametrize("path", ATTACKS, ids=[p.stem for p in ATTACKS])
def test_attack_scores_no_more_than_its_honest_twin(graded, path):
    report, twin = graded(path), graded((path.parent / header(path, "twin")).resolve())
    assert report["score"] <= twin["score"], (report["score"], twin["score"], report["mistakes"])
    assert header(path, "expect") in report["mistakes"], report["mistakes"]
    parts = {"both": ["sdpa", "mha"]}.get(header(path, "affected"), [header(path, "affected")])
    for part in parts:
        earned = [c["id"] for c in report["checks"] if c["part"] == part and c["points"] > 0]
        assert not earned, f"{part} should score 0, got points for {earned}"


def test_no_implementation_scores_zero_whatever_it_does_at_definition_time(graded):
    report = graded(FORGERY / "h_definition_time_only.py")
    assert report["score"] == 0.0 and "tampering" in report["mistakes"]


def test_properties_without_attention_earn_nothing(graded):
    report = graded(FORGERY / "g_identity_weights_and_value_projection.py")
    assert report["score"] == 0.0
    gates = {c["id"]: c for c in report["checks"] if c["id"].endswith("computes_attention")}
    assert not gates["sdpa.computes_attention"]["passed"] and not gates["mha.computes_attention"]["passed"]
    assert "no-attention" in gates["mha.computes_attention"]["mistakes"]


@pytest.mark.parametrize("mutant", ["missing-scale", "softmax-dim", "mask-diagonal", "mask-direction", "head-split",
                                    "missing-out-proj", "mask-multiplied__2", "mask-not-sliced", "wrong-input",
                                    "wrong-input__2"])
def test_an_honest_wrong_attention_still_computes_attention(graded, mutant):
    path = SUBMISSIONS / "mutants" / f"{mutant}.py"
    report = graded(path)
    assert all(c["passed"] for c in report["checks"] if c["id"].endswith("computes_attention")), report["mistakes"]
    if mutant != "mask-not-sliced":  # (its module crashes on lengths other than max_seq_len: its shapes fail)
        shapes = next(c for c in report["checks"] if c["id"] == f"{header(path, 'part')}.shapes")
        assert shapes["points"] == shapes["max_points"], "a real attention keeps its property points"


def test_runtime_tampering_zeroes_the_part_it_happened_in(rules_bypassed):
    """Were a patch to slip past the rules (static and run-time guards), the worker still sees it, and only its part pays."""
    from grader.grade import grade_submission

    report = grade_submission(SUBMISSIONS / "mutants" / "tampering__2.py")  # right, but patches allclose
    by_part = {part: sum(c["points"] for c in report["checks"] if c["part"] == part) for part in ("sdpa", "mha")}
    assert by_part == {"sdpa": PART["sdpa"].points, "mha": 0.0}, report["mistakes"]
    rules = next(c for c in report["checks"] if c["id"] == "mha.rules")
    assert "patched torch.allclose" in rules["message_en"] and "tampering" in rules["mistakes"]


def test_built_in_attention_under_another_name_scores_zero_even_past_the_rules(rules_bypassed):
    """The dispatcher's raising kernels on their own: the static pass and the run-time guards off."""
    from grader.grade import grade_submission

    for name in ("b_aten_math_alias.py", "c_private_nn_modes_off.py"):
        report = grade_submission(FORGERY / name)
        assert sum(c["points"] for c in report["checks"] if c["part"] == "mha") == 0.0, (name, report["mistakes"])
        assert "forbidden-api" in report["mistakes"], (name, report["mistakes"])


WORKER_DENIAL = """
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils._python_dispatch import _disable_current_modes
from grader.sandbox.worker import Runtime

runtime = Runtime()
q = torch.randn(1, 2, 4, 8)
x = torch.randn(4, 1, 8)
attempts = {
    "F.scaled_dot_product_attention": lambda: F.scaled_dot_product_attention(q, q, q),
    "torch._C._nn": lambda: torch._C._nn.scaled_dot_product_attention(q, q, q),
    "aten math": lambda: torch.ops.aten._scaled_dot_product_attention_math(q, q, q),
    "aten flash for cpu": lambda: torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, q, q),
    "aten on meta": lambda: torch.ops.aten.scaled_dot_product_attention(q.to("meta"), q.to("meta"), q.to("meta")),
    "nn.MultiheadAttention": lambda: nn.MultiheadAttention(8, 2),
    "F.multi_head_attention_forward": lambda: F.multi_head_attention_forward(
        x, x, x, 8, 2, torch.randn(24, 8), torch.zeros(24), None, None, False, 0.0, torch.randn(8, 8), None),
    "native mha": lambda: torch._native_multi_head_attention(
        q[0], q[0], q[0], 8, 2, torch.randn(24, 8), torch.zeros(24), torch.randn(8, 8), torch.zeros(8)),
}
for name, attempt in attempts.items():
    try:
        with _disable_current_modes():
            attempt()
        print("REACHED", name)
    except RuntimeError as error:
        assert "grading sandbox" in str(error), (name, error)
print("recorded", len(runtime.forbidden_calls))
torch.softmax(q @ q.transpose(-2, -1), dim=-1) @ q  # honest ops still work
"""


def test_the_built_in_attention_is_refused_in_the_worker_however_named():
    result = subprocess.run([sys.executable, "-c", WORKER_DENIAL], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "REACHED" not in result.stdout, result.stdout
    assert "recorded" in result.stdout and int(result.stdout.split("recorded")[1]) >= 5, result.stdout


def test_class_summary_lists_tampering_under_its_own_heading():
    reports = [{"student": "alice", "score": 10.0, "max_score": 20.0, "checks": [], "mistakes": ["tampering"]},
               {"student": "bob", "score": 20.0, "max_score": 20.0, "checks": [], "mistakes": []},
               {"student": "carol", "score": 10.0, "max_score": 20.0, "checks": [], "mistakes": ["private-torch"]}]
    text = class_summary(reports, "en")
    heading = text.index("Tampering or broken grading rules (follow up) (2):")
    assert "alice: tampering" in text[heading:] and "carol: private-torch" in text[heading:] and "bob:" not in text
    assert "篡改或违反评分规则" in class_summary(reports, "zh")


NOT_ATTENTION_SDPA = {
    "zeros": "w = torch.zeros(*Q.shape[:-1], Q.size(-2))\n    return torch.zeros_like(V), w",
    "uniform_causal": ("T = Q.size(-2)\n    w = torch.ones(T, T).tril()\n    w = (w / w.sum(-1, keepdim=True)).expand(*Q.shape[:-2], T, T)\n"
                       "    return w @ V, w"),
    "returns_q": "T = Q.size(-2)\n    return Q[..., :V.size(-1)] * 1.0, torch.eye(T).expand(*Q.shape[:-2], T, T)",
}
NOT_ATTENTION_MHA = {
    "zeros": "return torch.zeros_like(self.wo(q))",
    "returns_q": "return self.wo(self.resid_dropout(self.attn_dropout(self.wq(q))))",
    "running_mean_of_v": ("x = self.wv(v)\n        T = x.size(1)\n        w = torch.ones(T, T).tril()\n"
                          "        return self.wo((w / w.sum(-1, keepdim=True)) @ x)"),
}


@pytest.mark.parametrize("kind", sorted(set(NOT_ATTENTION_SDPA) | set(NOT_ATTENTION_MHA)))
def test_other_outputs_without_attention_score_zero_on_their_part(graded, tmp_path, kind):
    """Zeros, uniform (causal) weights, a copy of the query, a running mean of V: the weights never follow Q and K,
    so shapes, masks and dropout earn nothing either."""
    source = (FORGERY / "g_identity_weights_and_value_projection.py").read_text(encoding="utf-8")
    sdpa_body = "T = Q.size(-2)\n    weights = torch.eye(T, device=Q.device).expand(*Q.shape[:-2], T, T)  # the future is exactly 0, rows sum to 1\n    return V + 0 * weights.sum(), weights"
    mha_body = "return self.wo(self.resid_dropout(self.attn_dropout(self.wv(v))))"
    assert sdpa_body in source and mha_body in source
    source = source.replace(sdpa_body, NOT_ATTENTION_SDPA.get(kind, sdpa_body)).replace(
        mha_body, NOT_ATTENTION_MHA.get(kind, mha_body))
    path = tmp_path / f"{kind}.py"
    path.write_text(source, encoding="utf-8")
    report = graded(path)
    for part in ("sdpa", "mha"):
        earned = [c["id"] for c in report["checks"] if c["part"] == part and c["points"] > 0]
        assert not earned, f"{kind}: {part} should score 0, got points for {earned}"
    assert "no-attention" in report["mistakes"], report["mistakes"]
