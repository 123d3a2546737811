"""A static pass over the submission's text, for what only shows in the text.

Findings never cost points by themselves (graders test behaviour); they name the mistake behind
a behavioural failure (which device mistake broke the meta-device run, say) and point at the line.
"""
from __future__ import annotations

import ast
import difflib
from collections import defaultdict

import torch

from grader.handin import parent_budget
from grader.static_pass import dims, masks
from grader.handin import syntax_tree
from grader.exercises import every_graded_name
from grader.exercises.attention import MODEL_ARGS_TYPES
from grader.rules.table import FORBIDDEN_API

GRADED = set(every_graded_name())
# ModelArgs fields that hold a Python int (args.dim // args.n_heads is one too)
INT_FIELDS = {name for name, kind in MODEL_ARGS_TYPES.items() if kind == "int"}
NUMBER_METHODS = {"size", "dim", "numel", "item", "__len__"}
# torch functions that take a tensor only: handed a Python number they raise a TypeError
TENSOR_ONLY = {"sqrt", "rsqrt"}
MAX_DEPTH = 100  # nesting followed when typing an expression: honest code nests a few levels, hostile code thousands
CREATION_FUNCTIONS = {"ones", "zeros", "full", "empty", "arange", "eye", "tensor", "rand", "randn", "as_tensor", "tril_indices", "triu_indices"}
DEVICE_STRINGS = {"cuda", "cpu", "cuda:0", "mps"}


def near(name: str, meant: str, edits: int = 2) -> bool:
    """At most `edits` edits from `meant`; a name whose length alone says no costs nothing (a hand-in may hold a
    name of 500,000 characters, and the distance is quadratic)."""
    return abs(len(name) - len(meant)) <= edits and edit_distance(name, meant) <= edits


def edit_distance(a: str, b: str) -> int:
    """Levenshtein distance: how near a misspelled name (`is_casual`) is to the one meant (also grader.fixes.rewrites)."""
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def _is_torch_attr(node: ast.AST, *attrs: str) -> bool:
    """torch.X / nn.X / F.X / torch.nn.functional.X with X in attrs."""
    return isinstance(node, ast.Attribute) and node.attr in attrs


def _graded_nodes(tree: ast.Module) -> list[ast.AST]:
    return [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name in GRADED]


def analyse(source: str) -> dict[str, list[dict]]:
    """Mistake id -> places ({"line", "text"}) where the text shows it."""
    findings: dict[str, list[dict]] = defaultdict(list)
    try:
        tree = syntax_tree.parsed(source)
    except SyntaxError:
        return {}
    lines = source.splitlines()

    placed: set[tuple[str, int]] = set()  # one place per mistake and line, looked up in O(1): a hand-in may hold 20,000

    def add(mistake: str, node: ast.AST) -> None:
        line = getattr(node, "lineno", 0)
        if (mistake, line) not in placed:
            placed.add((mistake, line))
            findings[mistake].append({"line": line, "text": lines[line - 1].strip() if 0 < line <= len(lines) else ""})

    module_names = set()
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            module_names |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            module_names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            module_names |= {t.id for t in targets if isinstance(t, ast.Name)}

    nodes = syntax_tree.walk(tree)  # once: every pass below reads the list (at the code cap a walk costs most of a second)
    for node in nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "matmul" \
                and "matmul" not in module_names:
            add("bare-matmul", node)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "torch" \
                and len(node.attr) < 15 and not hasattr(torch, node.attr) and difflib.SequenceMatcher(None, node.attr, "Tensor").ratio() >= 0.6:
            add("misspelled-tensor", node)
        if isinstance(node, ast.Attribute) and node.attr == "dropout" and isinstance(node.value, ast.Name) \
                and node.value.id == "nn":
            add("dropout-lowercase", node)
        for name in _identifiers(node):
            if name != "is_causal" and near(name.lower(), "is_causal"):
                add("is-causal-typo", node)
        if isinstance(node, ast.Attribute) and FORBIDDEN_API.match(node.attr) and not (
                isinstance(node.value, ast.Name) and node.value.id == "self"):
            add("forbidden-api", node)
        if isinstance(node, ast.ImportFrom) and any(FORBIDDEN_API.match(a.name) for a in node.names):
            add("forbidden-api", node)

    parent_budget.check()
    numbers = _Numbers(nodes)
    for node in nodes:
        if isinstance(node, ast.Call) and _is_torch_attr(node.func, *TENSOR_ONLY) and isinstance(node.func.value, ast.Name) \
                and node.func.value.id == "torch" and len(node.args) == 1 and numbers.is_number(node.args[0]):
            add("sqrt-of-int", node)

    parent_budget.check()
    for graded in _graded_nodes(tree):
        _graded_code_findings(graded, module_names, add)
    dims.findings(tree, add)
    masks.findings(tree, add)
    return dict(findings)


class _Numbers:
    """Which expressions are Python numbers, not tensors: sizes, ModelArgs' int fields, literals,
    and names and self attributes only ever bound to those."""

    def __init__(self, nodes: list[ast.AST]) -> None:
        """`nodes`: every node of the module (syntax_tree.walk)."""
        self.bound: dict[str, list[ast.AST | None]] = defaultdict(list)  # name or .attr -> its values (None: unknown)
        self.known: dict[str, bool] = {}
        for node in nodes:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    self._bind(target, node.value)
            elif isinstance(node, (ast.AugAssign, ast.For, ast.comprehension)):
                self._bind(node.target, None)
            elif isinstance(node, ast.arg):
                self.bound[node.arg].append(None)

    def _bind(self, target: ast.AST, value: ast.AST | None) -> None:
        if isinstance(target, ast.Name):
            self.bound[target.id].append(value)
        elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
            self.bound["." + target.attr].append(value)
        elif isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                and len(value.elts) == len(target.elts):  # T, d_k = Q.size(-2), Q.size(-1)
            for element, part in zip(target.elts, value.elts):
                self._bind(element, part)
        elif isinstance(target, (ast.Tuple, ast.List)):
            unpacks_shape = value is not None and self._is_shape(value)
            for element in target.elts:
                self._bind(element.value if isinstance(element, ast.Starred) else element,
                           ast.Constant(0) if unpacks_shape and not isinstance(element, ast.Starred) else None)

    @staticmethod
    def _is_shape(node: ast.AST) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "shape" or isinstance(node, ast.Call) \
            and isinstance(node.func, ast.Attribute) and node.func.attr == "size" and not node.args

    def is_number(self, node: ast.AST | None, seen: frozenset = frozenset(), depth: int = 0) -> bool:
        if depth > MAX_DEPTH:
            return False
        if isinstance(node, ast.Constant):
            return type(node.value) in (int, float)
        if isinstance(node, ast.Subscript):  # Q.shape[-1]
            return self._is_shape(node.value)
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                return func.id in ("int", "float", "len")
            return isinstance(func, ast.Attribute) and func.attr in NUMBER_METHODS and bool(node.args or func.attr != "size")
        if isinstance(node, ast.BinOp):
            return self.is_number(node.left, seen, depth + 1) and self.is_number(node.right, seen, depth + 1)
        if isinstance(node, ast.UnaryOp):
            return self.is_number(node.operand, seen, depth + 1)
        key = node.id if isinstance(node, ast.Name) else "." + node.attr \
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self" else None
        if isinstance(node, ast.Attribute) and key is None:
            return node.attr in INT_FIELDS  # args.dim, config.n_heads
        if key is None or key in seen or not self.bound.get(key):
            return False
        if key not in self.known:  # once per name: x1 = x0 + x0; x2 = x1 + x1; ... must stay linear
            self.known[key] = all(self.is_number(value, seen | {key}, depth + 1) for value in self.bound[key])
        return self.known[key]


def _identifiers(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.keyword) and node.arg:
        return [node.arg]
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 20:
        return [node.value]  # register_buffer("is_casual", ...) / getattr(self, "is_casual")
    return []


def _graded_code_findings(graded: ast.AST, module_names: set[str], add) -> None:
    """Device, buffer and loop findings inside the graded function or class."""
    for node in syntax_tree.walk(graded):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in DEVICE_STRINGS:
            add("hardcoded-device", node)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("cuda", "cpu") \
                and not node.args:
            add("hardcoded-device", node)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id.lower() == "device" \
                and node.id in module_names:
            add("hardcoded-device", node)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in CREATION_FUNCTIONS \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "torch" \
                and not any(k.arg == "device" for k in node.keywords):
            add("mask-device", node)
        if isinstance(node, (ast.For, ast.While, ast.ListComp, ast.GeneratorExp)):
            add("python-loop", node)
    if isinstance(graded, ast.ClassDef):
        _buffer_findings(graded, add)
        _layers_outside_init(graded, add)


PARAMETER_LAYERS = {"Linear", "Bilinear", "LayerNorm", "Embedding", "Conv1d", "Conv2d"}


def _layers_outside_init(cls: ast.ClassDef, add) -> None:
    """`nn.Linear(...)` (a layer with weights) constructed in a method other than __init__: fresh weights per call."""
    for method in cls.body:
        if isinstance(method, ast.FunctionDef) and method.name != "__init__":
            for node in syntax_tree.walk(method):
                if isinstance(node, ast.Call) and _is_torch_attr(node.func, *PARAMETER_LAYERS):
                    add("layers-in-forward", node)


def _buffer_findings(cls: ast.ClassDef, add) -> None:
    """`self.<name> = <tensor expression>` in __init__ without register_buffer for that name."""
    registered = {
        n.args[0].value for n in syntax_tree.walk(cls)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "register_buffer"
        and n.args and isinstance(n.args[0], ast.Constant)
    }
    for method in cls.body:
        if not (isinstance(method, ast.FunctionDef) and method.name == "__init__"):
            continue
        for node in syntax_tree.walk(method):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                            and target.value.id == "self" and target.attr not in registered \
                            and _makes_tensor(node.value):
                        add("mask-not-buffer", node)


def _makes_tensor(value: ast.AST) -> bool:
    return any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "torch"
               and n.attr in CREATION_FUNCTIONS | {"triu", "tril"} for n in syntax_tree.walk(value))
