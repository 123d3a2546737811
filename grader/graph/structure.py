"""What a module's graph does, read from its structure alone: which inputs reach the scores and the output, what
multiplies the scores on their way to softmax, whether a projection is viewed straight into heads. Each is held
against what the reference's graph has, so that a mistake is named from the code even where several combine and no
wrong variant's numbers reproduce the student's (grader/checks/diagnosis.py does that by values).

Nothing here runs: the graph is hostile data, read as the decoder checked it. Every rule answers only where the
graph shows one softmax and says nothing (no id) where it cannot tell, so honest code in an idiom it does not know
is never named.
"""
from __future__ import annotations

import math

import torch

from grader.exercises.attention import PROJECTIONS
from grader.graph.decode import Graph, Ref

SOFTMAX = frozenset({"aten._softmax.default", "aten.softmax.int", "aten._safe_softmax.default"})
# results that keep an input's shape but none of its values: no data flows through them
SHAPE_ONLY = frozenset({"aten.ones_like.default", "aten.zeros_like.default", "aten.empty_like.default",
                        "aten.full_like.default", "aten.new_ones.default", "aten.new_zeros.default",
                        "aten.new_empty.default", "aten.new_full.default", "aten.sym_size.int"})
# +1: the scores are multiplied by the number; -1: divided by it
SCALINGS = {"aten.mul.Tensor": 1, "aten.mul.Scalar": 1, "aten.mul_.Tensor": 1, "aten.mul_.Scalar": 1,
            "aten.div.Tensor": -1, "aten.div.Scalar": -1, "aten.div_.Tensor": -1, "aten.div_.Scalar": -1}
# a product's own scale: baddbmm's and addmm's alpha
SCALED_PRODUCTS = frozenset({"aten.baddbmm.default", "aten.addmm.default", "aten.addbmm.default"})
VIEWS = frozenset({"aten.view.default", "aten._unsafe_view.default", "aten.reshape.default"})
# steps that keep a tensor's values and memory order: a split viewed after them splits what came before
SAME_ORDER = VIEWS | {"aten.clone.default", "aten._to_copy.default", "aten.alias.default", "aten.detach.default",
                      "aten.contiguous.default", "aten.lift_fresh.default"}
PROJECTION_PRODUCTS = frozenset({"aten.mm.default", "aten.addmm.default", "aten.matmul.default",
                                 "aten.linear.default", "aten.bmm.default"})
# how a weight reaches its product: transposed, viewed, cast
WEIGHT_STEPS = SAME_ORDER | {"aten.t.default", "aten.transpose.int", "aten.permute.default", "aten.expand.default",
                             "aten.numpy_T.default"}

INPUTS = ("q", "k", "v")
SCORES_READ = frozenset({"q", "k", "wq", "wk"})
VALUES_READ = frozenset({"v", "wv"})  # wo missing is missing-out-proj, which the numbers name
FOUND = ("wrong-input", "missing-scale", "wrong-scale", "head-split")
"""Every id this module can name (the parent keeps only these from the judge's answer)."""


class _Reading:
    def __init__(self, graph: Graph, roles: dict[int, str]) -> None:
        self.graph = graph
        self.reads: list[frozenset[str]] = []  # per node: the roles (q, wk, ...) whose values flow into it
        for node, references in zip(graph.nodes, graph.references):
            if node.kind == "input":
                self.reads.append(frozenset([roles[node.index]]) if node.index in roles else frozenset())
            elif node.kind == "call" and node.target not in SHAPE_ONLY:
                self.reads.append(frozenset().union(*(self.reads[r] for r in references)))
            else:
                self.reads.append(frozenset())
        self.output = next((r for r in graph.references[-1][:1]), None) if graph.nodes else None

    def ancestors(self, start: int) -> set[int]:
        seen, stack = set(), [start]
        while stack:
            position = stack.pop()
            if position in seen:
                continue
            seen.add(position)
            node = self.graph.nodes[position]
            if node.kind == "call" and node.target not in SHAPE_ONLY:
                stack.extend(self.graph.references[position])
        return seen

    def scale(self, scores: int) -> float | None:
        """The number the scores are multiplied by between the projections and softmax; None where a factor is not
        a number written in the graph (a tensor, which a 0/1 mask multiplied in would be too)."""
        factor = 1.0
        for position in self.ancestors(scores):
            node = self.graph.nodes[position]
            if node.kind != "call" or not self.reads[position] & {"q", "k"}:
                continue
            if node.target in SCALED_PRODUCTS:
                alpha = node.kwargs.get("alpha", 1)
                if not _number(alpha):
                    return None
                factor *= alpha
            if node.target not in SCALINGS or len(node.args) != 2:
                continue
            number = node.args[1] if SCALINGS[node.target] < 0 else next((a for a in node.args if _number(a)), None)
            if not _number(number) or number == 0 or sum(isinstance(a, Ref) for a in node.args) != 1:
                return None
            factor *= number ** SCALINGS[node.target]
        return factor

    def is_weight(self, value, weights: frozenset[int]) -> bool:
        while isinstance(value, Ref):
            node = self.graph.nodes[value.node]
            if node.kind == "input":
                return value.node in weights
            if node.kind != "call" or node.target not in WEIGHT_STEPS or not node.args:
                return False
            value = node.args[0]
        return False

    def viewed_straight_into_heads(self, heads_first: list[int], weights: frozenset[int]) -> bool:
        """A view to (B, H, T, d) whose source, through steps that keep memory order, is a projection's product:
        positions and heads mix (the split wants (B, T, H, d), then the transpose)."""
        for node in self.graph.nodes:
            if node.kind != "call" or node.target not in VIEWS or len(node.args) < 2 or node.args[1] != heads_first:
                continue
            source = node.args[0]
            while isinstance(source, Ref):
                before = self.graph.nodes[source.node]
                if before.kind != "call":
                    break
                if before.target in PROJECTION_PRODUCTS:
                    if any(self.is_weight(a, weights) for a in before.args):
                        return True
                    break
                if before.target not in SAME_ORDER or not before.args:
                    break
                source = before.args[0]
        return False


def _number(value) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


def module_mismatches(graph: Graph, names: list[str], batch: int, length: int, dim: int, heads: int) -> list[str]:
    """Ids (from FOUND) for where the module's graph differs from the reference's. The graph's inputs are q, k, v
    (three distinct tensors), then the module's state by `names` ("wq.weight", ...)."""
    roles = {0: "q", 1: "k", 2: "v"}
    roles.update({3 + i: name.removesuffix(".weight") for i, name in enumerate(names)
                  if name.removesuffix(".weight") in PROJECTIONS and name.endswith(".weight")})
    if len(roles) != len(INPUTS) + len(PROJECTIONS) or dim % heads:
        return []
    reading = _Reading(graph, roles)
    softmaxes = [i for i, node in enumerate(graph.nodes) if node.kind == "call" and node.target in SOFTMAX]
    if len(softmaxes) != 1 or reading.output is None or not graph.nodes[softmaxes[0]].args \
            or not isinstance(graph.nodes[softmaxes[0]].args[0], Ref):
        return []
    scores = graph.nodes[softmaxes[0]].args[0].node
    found = []
    # a role missing is a fact; a role too many may be the reading's (a concatenation of q, k and v split again
    # carries every role through both halves), so only what is missing names an input
    if not SCORES_READ <= reading.reads[scores] or not VALUES_READ <= reading.reads[reading.output]:
        found.append("wrong-input")
    factor = reading.scale(scores)
    if factor is not None and not math.isclose(factor, 1 / math.sqrt(dim // heads), rel_tol=1e-3):
        found.append("missing-scale" if math.isclose(factor, 1.0, rel_tol=1e-3) else "wrong-scale")
    weights = frozenset(i for i, role in roles.items() if role in ("wq", "wk", "wv"))
    if length != heads and reading.viewed_straight_into_heads([batch, heads, length, dim // heads], weights):
        found.append("head-split")
    return found


def of_call(graph: Graph, call: dict, names: list[str], heads: int) -> list[str]:
    """module_mismatches for one probe call {"q", "k", "v"}; nothing where two of q, k and v are one tensor (the
    graph then reads one input for both, and cannot tell which it read)."""
    q, k, v = (call[name] for name in INPUTS)
    if any(a.shape == b.shape and torch.equal(a, b) for a, b in ((q, k), (k, v), (q, v))):
        return []
    batch, length, dim = q.shape
    return module_mismatches(graph, names, batch, length, dim, heads)


def plain_attributes(traced: dict, key: str = "plain_tensor_attributes") -> list[str]:
    """The tensors a module kept as plain attributes, by name, as the worker said them (bounded): what a device mistake
    is called, never a point. `made_by_a_call`: those a call on the CPU before the move made."""
    names = traced.get(key)
    return [str(name)[:200] for name in names[:16]] if isinstance(names, list) else []
