"""The grading rules hold on what code does at run time, not on how it is spelled.

Honest idioms real people write (autocast, checkpointing, logging, nullcontext, __constants__, ...) earn
full marks with no mistake; the bypasses of a static reading (attributes of allowed modules that lead to
forbidden ones, getattr on a variable named self, names built from pieces, match keyword patterns, the
worker's block undone) are held by the worker itself, with the static pass switched off.
"""
import textwrap

import pytest

from support.hand_ins import header

from support.paths import REFERENCE, ROOT, SUBMISSIONS
from grader.exercises.attention import EXERCISE
from grader import rules
from grader.handin.source import load_submission

pytestmark = pytest.mark.sandbox

BASE = REFERENCE.read_text(encoding="utf-8")
SCORES = "import math\nfrom dataclasses import dataclass\n"
SDPA_SCORES = "    scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(d_k)  # (..., T, T)\n"
SDPA_SOFTMAX = "    weights = F.softmax(scores, dim=-1)  # (..., T, T)\n"
SDPA_MASK = "        future = torch.ones(T, T, dtype=torch.bool, device=Q.device).triu(diagonal=1)  # (T, T)\n"
MHA_SUPER = "        super().__init__()\n"
MHA_PROJ = "        self.wq = nn.Linear(args.dim, args.n_heads * self.head_dim, bias=False)\n"
MHA_CAUSAL = "        self.is_causal = is_causal\n"
MHA_SCORES = "        att = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)  # (B, H, T, T)\n"
MHA_SOFTMAX = "        att = self.attn_dropout(F.softmax(att, dim=-1))  # (B, H, T, T)\n"
MHA_SPLIT = "        q = self.wq(q).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, T, d)\n"
MHA_MERGE = "        y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C)\n"
MHA_CLASS = "class MultiHeadAttention(nn.Module):\n"
MHA_FORWARD = "    def forward("
MHA_ATTEND = "        y = torch.matmul(att, v)  # (B, H, T, d)\n"


def variant(*edits: tuple[str, str], imports: str = "", helpers: str = "") -> str:
    """The reference solution with lines replaced (each must be there), imports added and helpers before Part 1."""
    source = BASE
    for old, new in edits:
        assert old in source, old
        source = source.replace(old, textwrap.dedent(new) if not new.startswith(" ") else new, 1)
    source = source.replace(SCORES, SCORES + imports, 1)
    return source.replace("\n\ndef scaled_dot_product_attention(", "\n\n" + helpers + "\n\ndef scaled_dot_product_attention(", 1)


def lines(text: str, indent: int) -> str:
    return textwrap.indent(textwrap.dedent(text).strip("\n"), " " * indent) + "\n"


HONEST = {
    "cuda_amp_autocast_upcast": variant(  # Hugging Face GPT-2's upcast path
        (SDPA_SCORES, lines("""
            with autocast(enabled=False):
                scores = torch.matmul(Q.float(), K.float().transpose(-2, -1)) / math.sqrt(d_k)
            scores = scores.to(Q.dtype)
        """, 4)), imports="from torch.cuda.amp import autocast\n"),
    "torch_autocast_on_the_input_device": variant(
        (MHA_SCORES, lines("""
            with torch.autocast(device_type=q.device.type, enabled=False):
                att = (q.float() @ k.float().transpose(-2, -1)) / math.sqrt(self.head_dim)
            att = att.to(q.dtype)
        """, 8))),
    "torch_amp_import": variant(
        (SDPA_SOFTMAX, lines("""
            with torch.amp.autocast("cpu", enabled=False):
                weights = F.softmax(scores.float(), dim=-1).to(scores.dtype)
        """, 4)), imports="import torch.amp\n"),
    "checkpoint_the_core": variant(
        (MHA_SCORES, "        att = checkpoint(self.scores, q, k, use_reentrant=False)\n"),
        (MHA_FORWARD, lines("""
            def scores(self, q, k):
                return torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)

            def forward(
        """, 4).rstrip("\n")), imports="from torch.utils.checkpoint import checkpoint\n"),
    "torch_utils_checkpoint_module": variant(
        (MHA_ATTEND, "        y = torch.utils.checkpoint.checkpoint(torch.matmul, att, v, use_reentrant=False)\n"),
        imports="import torch.utils.checkpoint\n"),
    "contextlib_nullcontext": variant(
        (SDPA_SCORES, lines("""
            guard = contextlib.nullcontext() if Q.dtype == torch.float32 else torch.autocast("cpu", enabled=False)
            with guard:
                scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(d_k)
        """, 4)), imports="import contextlib\n"),
    "logging_debug": variant(
        (SDPA_SOFTMAX, SDPA_SOFTMAX + "    logger.debug(\"weights %s\", tuple(weights.shape))\n"),
        imports="import logging\n", helpers="logger = logging.getLogger(__name__)\n"),
    "logging_inline_getlogger": variant(
        (MHA_MERGE, MHA_MERGE + "        logging.getLogger(__name__).debug(\"merged heads: %s\", y.shape)\n"),
        imports="import logging\n"),
    "torchscript_constants": variant(
        (MHA_CLASS, MHA_CLASS + "    __constants__ = [\"n_heads\", \"head_dim\", \"is_causal\"]\n\n")),
    "super_with_class_and_self": variant((MHA_SUPER, "        super(MultiHeadAttention, self).__init__()\n")),
    "nn_init_xavier": variant(
        (MHA_CAUSAL, MHA_CAUSAL + lines("""
            for layer in (self.wq, self.wk, self.wv, self.wo):
                nn.init.xavier_uniform_(layer.weight)
        """, 8))),
    "warnings_on_long_inputs": variant(
        (SDPA_SOFTMAX, SDPA_SOFTMAX + lines("""
            if T > 4096:
                warnings.warn("long sequence: attention is quadratic in T")
        """, 4)), imports="import warnings\n"),
    "prints_everywhere": variant(
        (SDPA_SOFTMAX, SDPA_SOFTMAX + "    print(f\"weights {tuple(weights.shape)} on {weights.device}\")\n"),
        (MHA_MERGE, MHA_MERGE + "        print(\"y\", y.shape, file=sys.stderr)\n"), imports="import sys\n"),
    # on the device probe's meta stand-in, `.device` reads as cuda:0 and a tensor's text as a GPU tensor's
    "mask_moved_where_its_device_differs": variant(
        (SDPA_MASK, "        future = torch.ones(T, T, dtype=torch.bool).triu(diagonal=1)  # (T, T)\n"
                    "        if future.device != Q.device or str(future.device) != str(Q.device):\n"
                    "            future = future.to(Q.device)\n"),
        (MHA_ATTEND, MHA_ATTEND + "        assert y.get_device() == q.get_device() and y.device.type == q.device.type\n")),
    "tensors_printed_while_debugging": variant(
        (SDPA_SOFTMAX, SDPA_SOFTMAX + "    print(f\"scores {scores}\", repr(weights)[:40], str(V.device))\n"),
        (MHA_ATTEND, MHA_ATTEND + "        print(\"att\", att, f\"{y.device}\")\n")),
    "functools_cached_mask": variant(
        (SDPA_MASK, "        future = causal_future(T, str(Q.device))\n"), imports="import functools\n",
        helpers=lines("""
            @functools.lru_cache(maxsize=8)
            def causal_future(T, device):
                return torch.ones(T, T, dtype=torch.bool, device=device).triu(diagonal=1)
        """, 0)),
    "functools_partial_softmax": variant(
        (SDPA_SOFTMAX, "    weights = row_softmax(scores)\n"), imports="import functools\n",
        helpers="row_softmax = functools.partial(F.softmax, dim=-1)\n"),
    "itertools_for_projections": variant(
        (MHA_MERGE, MHA_MERGE + lines("""
            for name, layer in itertools.chain([("wo", self.wo)], [("wq", self.wq)]):
                assert layer.in_features == C, name
        """, 8)), imports="import itertools\n"),
    "namedtuple_result": variant(
        ("    return out, weights\n", "    return Attended(out, weights)\n"), imports="import collections\n",
        helpers="Attended = collections.namedtuple(\"Attended\", [\"out\", \"weights\"])\n"),
    "typing_namedtuple_result": variant(
        ("    return out, weights\n", "    return Attended(out, weights)\n"), imports="from typing import NamedTuple\n",
        helpers=lines("""
            class Attended(NamedTuple):
                out: torch.Tensor
                weights: torch.Tensor
        """, 0)),
    "frozen_dataclass_with_field": variant(
        ("@dataclass\nclass ModelArgs:", "@dataclass(frozen=True)\nclass ModelArgs:"),
        ("    max_seq_len: int = 256", "    max_seq_len: int = field(default=256)"),
        imports="from dataclasses import field\n"),
    "future_annotations_and_optional": variant(
        (SDPA_MASK, "        future: Optional[torch.Tensor] = torch.ones(T, T, dtype=torch.bool, device=Q.device).triu(1)\n"),
        imports="from typing import Optional, Tuple\n"),
    "copy_deepcopy_projections": variant(
        (MHA_PROJ.replace("wq", "wk"), "        self.wk = copy.deepcopy(self.wq)\n"), imports="import copy\n"),
    "time_perf_counter": variant(
        (SDPA_SOFTMAX, SDPA_SOFTMAX + "    elapsed = time.perf_counter() - started\n"),
        (SDPA_SCORES, "    started = time.perf_counter()\n" + SDPA_SCORES), imports="import time\n"),
    "numbers_check": variant(
        (MHA_SUPER, MHA_SUPER + "        assert isinstance(args.dropout, numbers.Real) and isinstance(args.dim, numbers.Integral)\n"),
        imports="import numbers\n"),
    "enum_mask_kind": variant(
        ("    if is_causal:\n", "    kind = Mask.CAUSAL if is_causal else Mask.NONE\n    if kind is Mask.CAUSAL:\n"),
        imports="import enum\n", helpers=lines("""
            class Mask(enum.Enum):
                CAUSAL = "causal"
                NONE = "none"
        """, 0)),
    "abc_abstract_helper": variant(
        (MHA_CLASS, "class MultiHeadAttention(Scorer):\n"),
        (MHA_SCORES, "        att = self.score(q, k)\n"), imports="import abc\n",
        helpers=lines("""
            class Scorer(nn.Module):
                @abc.abstractmethod
                def dims(self):
                    ...

                def score(self, q, k):
                    return torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
        """, 0)),
    "einops_rearrange_heads": variant(
        (MHA_SPLIT, "        q = rearrange(self.wq(q), \"b t (h d) -> b h t d\", h=self.n_heads)\n"),
        (MHA_MERGE, "        y = rearrange(y, \"b h t d -> b t (h d)\")\n"), imports="from einops import rearrange\n"),
    "numpy_scale": variant(
        (SDPA_SCORES, "    scores = torch.matmul(Q, K.transpose(-2, -1)) * float(1 / np.sqrt(d_k))\n"),
        imports="import numpy as np\n"),
    "tf32_switch_at_module_level": variant(
        (SCORES, SCORES), helpers="torch.backends.cuda.matmul.allow_tf32 = True\ntorch.backends.cudnn.allow_tf32 = True\n"),
    "helper_split_and_merge": variant(
        (MHA_SPLIT, "        q = split_heads(self.wq(q), self.n_heads)\n"),
        (MHA_MERGE, "        y = merge_heads(y)\n"),
        helpers=lines("""
            def split_heads(x, n_heads):
                B, T, C = x.shape
                return x.view(B, T, n_heads, C // n_heads).transpose(1, 2)


            def merge_heads(y):
                B, H, T, d = y.shape
                return y.transpose(1, 2).reshape(B, T, H * d)
        """, 0)),
    "no_grad_mask_and_class_constant": variant(
        (MHA_CLASS, MHA_CLASS + "    NEG_INF = float(\"-inf\")\n\n"),
        ("        mask = torch.full((1, 1, args.max_seq_len, args.max_seq_len), float(\"-inf\"))\n",
         "        with torch.no_grad():\n"
         "            mask = torch.full((1, 1, args.max_seq_len, args.max_seq_len), self.NEG_INF)\n")),
    "getattr_over_own_layers": variant(
        (MHA_SPLIT, "        q = getattr(self, \"wq\")(q).view(B, T, self.n_heads, self.head_dim).transpose(1, 2)\n"),
        (MHA_SUPER, MHA_SUPER + "        assert not hasattr(self, \"wq\")\n")),
    "extra_repr_and_property": variant(
        (MHA_FORWARD, lines("""
            @property
            def width(self):
                return self.n_heads * self.head_dim

            def extra_repr(self):
                return f"n_heads={self.n_heads}, width={self.width}, is_causal={self.is_causal}"

            def forward(
        """, 4).rstrip("\n"))),
    "softmax_upcast_type_as": variant(
        (MHA_SOFTMAX, "        att = self.attn_dropout(F.softmax(att.float(), dim=-1).type_as(att))\n")),
}


@pytest.mark.parametrize("name", sorted(HONEST))
def test_honest_idiom_earns_full_marks(graded, tmp_path_factory, name):
    path = tmp_path_factory.mktemp("honest") / f"{name}.py"
    path.write_text(HONEST[name], encoding="utf-8")
    report = graded(path)
    failed = [(c["id"], c.get("message_en", "")[:300]) for c in report["checks"] if not c["passed"]]
    assert report["score"] == report["max_score"] and report["mistakes"] == [], failed or report["mistakes"]
    assert rules.violations(load_submission(path).source, EXERCISE) == [], "the static pass refuses what the run time allows"


def test_there_are_at_least_thirty_honest_idioms():
    assert len(HONEST) >= 30


FORGERY = SUBMISSIONS / "forgery"
# the bypasses of the static pass, then the earlier attacks it refused: the run time alone must hold each
BYPASSES = ["i_module_attribute_undoes_the_block", "j_getattr_on_a_module_named_self", "l_meta_from_string_pieces",
            "m_match_keyword_is_meta", "a_loop_with_dispatch_modes_off", "b_aten_math_alias", "c_private_nn_modes_off",
            "d_gc_blanks_the_record", "e_silenced_tampering_report", "f_mask_moved_only_on_meta",
            "n_meta_in_the_device_text", "o_meta_in_the_tensor_text", "p_field_name_code_in_a_class_from_type",
            "s_storage_from_file_in_an_error"]


@pytest.mark.parametrize("name", BYPASSES)
def test_a_bypass_of_the_static_rules_gains_nothing_at_run_time(graded, static_rules_off, name):
    """Scored with the static pass off: the worker's guards alone hold it to its honest twin."""
    path = FORGERY / f"{name}.py"
    report = graded(path)
    twin = graded((path.parent / header(path, "twin")).resolve())
    assert report["score"] <= twin["score"], (report["score"], twin["score"], report["mistakes"])
    affected = {"both": ["sdpa", "mha"]}.get(header(path, "affected"), [header(path, "affected")])
    if "meta" not in name:  # on the meta stand-in the code takes a GPU's path: no refusal, the twin's score
        for part in affected:
            assert not [c["id"] for c in report["checks"] if c["part"] == part and c["points"] > 0], part


def _public_selfcheck():
    """The released self-check module (it stands alone: no grader import), loaded from release/."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("released_selfcheck", ROOT / "release" / "attention" / "selfcheck.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _selfcheck_rule_verdict(module, source: str, part: str) -> str | None:
    try:
        module.check_rules(part, {"__selfcheck_sources__": [source]})
    except module.SelfCheckFailure as failure:
        return failure.mistake
    return None


def test_the_public_selfcheck_gives_the_same_rule_verdict():
    """Before hand-in, from the same table the worker enforces: honest idioms pass, and every attack the
    static pass refuses is refused by the self-check too, under a rule mistake, for the part it costs."""
    module = _public_selfcheck()
    for name, source in HONEST.items():
        assert [_selfcheck_rule_verdict(module, source, p) for p in ("part1", "part2")] == [None, None], name
    attacks = sorted(p for p in FORGERY.glob("*.py") if header(p, "expect") in rules.RULE_MISTAKES + ("forbidden-api",)
                     and not (header(p, "static") or "").startswith("none"))  # `# static: none`: refused at run time only
    assert len(attacks) >= 8
    for path in attacks:
        source = path.read_text(encoding="utf-8")
        costs = {"sdpa": ["part1"], "mha": ["part2"], "both": ["part1", "part2"]}[header(path, "affected")]
        for part in costs:
            assert _selfcheck_rule_verdict(module, source, part) in rules.RULE_MISTAKES + ("forbidden-api",), (path.name, part)


GUARDED_PROCESS = r'''
import json, torch
from grader.sandbox import audit, worker
from grader.sandbox.guard import Guard

guard = Guard()
audit.install(guard.refuse)
source = open(REFERENCE).read() + """
import contextlib, copy, dataclasses, logging, operator, typing, warnings
from operator import attrgetter, matmul
import numpy as np
from torch.utils.checkpoint import checkpoint
from einops import rearrange


def annotated(x: "print('evaluated')"):
    pass


ATTEMPTS = {
    "eval through typing": lambda: typing.get_type_hints(annotated),
    "a file through numpy": lambda: np.load("/etc/hostname"),
    "a file through logging": lambda: logging.FileHandler("/tmp/written.log"),
    "builtins through dataclasses": lambda: dataclasses.builtins,
    "a frame through logging": lambda: logging.currentframe().f_back,
    "a closure": lambda: F.softmax.__closure__,
    "private torch": lambda: torch._C,
    "patching torch": lambda: setattr(torch, "allclose", None),
    "pickling of the answers through copy": lambda: copy.dispatch_table,
    "pickling of the answers through dataclasses": lambda: dataclasses.copy.dispatch_table,
    "an attribute named by data through operator": lambda: operator.attrgetter("_C")(torch),
    "an attribute named by data through an imported attrgetter": lambda: attrgetter("_C")(torch),
    "a method named by data through operator": lambda: operator.methodcaller("numpy")(torch.ones(1)),
}


def honest(x):
    with contextlib.nullcontext(), torch.autocast("cpu", enabled=False):
        logging.getLogger(__name__).debug("x %s", x.shape)
        warnings.warn("a warning")
        y = operator.matmul(x, matmul(x.transpose(-2, -1), x))
        return checkpoint(lambda y: rearrange(y, "b t d -> b d t").softmax(-1), y, use_reentrant=False)
"""
namespace, errors = worker.load_student(source, guard)
results = {"load_errors": errors}
for name, attempt in namespace["ATTEMPTS"].items():
    try:
        attempt()
        results[name] = "REACHED"
    except PermissionError:
        results[name] = "refused"
    except Exception as error:
        results[name] = type(error).__name__
x = torch.randn(2, 3, 4, requires_grad=True)
namespace["honest"](x).sum().backward()
results["honest"] = x.grad is not None
results["refused"] = guard.seen()
print(json.dumps(results))
'''


def test_each_statement_compiles_with_the_future_features_before_it():
    """The worker compiles statement by statement: `from __future__ import annotations` on the first line must
    still postpone an annotation naming a class not yet defined, and a name only the type checker imports."""
    from grader.sandbox import worker
    from grader.sandbox.guard import Guard

    source = ("from __future__ import annotations\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
              "    from torch import Tensor\n\nclass A:\n    def make(self, x: Tensor) -> A:\n        return A()\n")
    namespace, errors = worker.load_student(source, Guard())
    assert errors == [] and isinstance(namespace["A"]().make(None), namespace["A"])
    _, errors = worker.load_student(source.replace("from __future__ import annotations", "x = 1"), Guard())
    assert errors and "NameError" in str(errors[0]), "without the feature the same code must fail"


def test_the_worker_refuses_what_the_spelling_hides_and_runs_honest_library_code():
    """Guards and audit hook together, in a process of their own (an audit hook cannot be removed): each
    way out is refused whatever its path (typing's eval, numpy's and logging's files, frames, closures),
    while checkpointing, autocast, logging and einops still work when called from student code."""
    import json
    import subprocess
    import sys

    script = GUARDED_PROCESS.replace("open(REFERENCE)", f"open({str(REFERENCE)!r})")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.splitlines()[-1])
    assert results.pop("load_errors") == [] and results.pop("honest") is True, results
    refused = results.pop("refused")
    assert set(results.values()) == {"refused"}, results
    assert any("compile" in r for r in refused) and any("operation open" in r for r in refused), refused
