"""Part 1 code written for 3-D input: dims counted from the front of a tensor of any rank.

`scaled_dot_product_attention` takes `(..., T, d)`: zero, one or more leading dims. A
non-negative dim (`k.transpose(0, 1)`, `softmax(dim=1)`, `Q.size(1)`), a fixed unpacking
(`B, T, d = Q.shape`), `torch.bmm`, an einsum or einops pattern with a fixed number of leading
letters, or a mask given its own leading dims (`torch.ones(1, T, T)`) each assume one rank.

Only tensors whose rank is the caller's are judged: the inputs, and what is computed from them
without a reshape. Code that first flattens the leading dims (`Q.reshape(-1, T, d)`) and then
works in 3-D is right, and is left alone.
"""
from __future__ import annotations

import ast

from grader.handin import syntax_tree
from grader.exercises.attention import PART

GRADED = PART["sdpa"].graded_name
# methods whose result has a rank of their own choosing, or is no tensor at all
RANK_FIXING = {"reshape", "view", "flatten", "unflatten", "squeeze", "size", "dim", "numel", "item", "tolist",
               "stride", "bmm", "expand"}
CREATION = {"ones", "zeros", "full", "empty", "rand", "randn", "tril", "triu"}
SOFTMAX = {"softmax", "log_softmax"}
MAX_DEPTH = 100  # nesting followed in one expression: honest code nests a few levels, hostile code thousands


def findings(tree: ast.Module, add) -> None:
    """add("hardcoded-dims", node) for each place in Part 1's function that assumes its input's rank."""
    for function in tree.body:
        if isinstance(function, ast.FunctionDef) and function.name == GRADED:
            _Ranks(function, add).walk()


def _int(node: ast.AST | None) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and type(node.operand.value) is int:
        return -node.operand.value
    return None


def _from_front(node: ast.AST | None) -> bool:
    """A dim counted from the front (0, 1, 2): right for one rank only."""
    value = _int(node)
    return value is not None and value >= 0


def _keyword(call: ast.Call, name: str) -> ast.AST | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


class _Ranks:
    def __init__(self, function: ast.FunctionDef, add) -> None:
        self.function, self.add = function, add
        arguments = function.args.posonlyargs + function.args.args
        defaults = [None] * (len(arguments) - len(function.args.defaults)) + function.args.defaults
        # the tensors: arguments without a constant default (is_causal=True, attn_mask=None are none)
        self.any_rank = {a.arg for a, d in zip(arguments, defaults) if not isinstance(d, ast.Constant)}
        self.flattens = False

    def walk(self) -> None:
        statements = [n for n in syntax_tree.walk(self.function)
                      if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr, ast.Return))]
        for statement in sorted(statements, key=lambda n: (n.lineno, n.col_offset)):
            for node in syntax_tree.walk(statement):
                self.judge(node)
            self.bind(statement)
        if not self.flattens:
            for node in syntax_tree.walk(self.function):
                if self.mask_with_leading_dims(node):
                    self.add("hardcoded-dims", node)

    def carries(self, node: ast.AST | None, depth: int = 0) -> bool:
        """Is this expression a tensor of the caller's rank?"""
        if depth > MAX_DEPTH:
            return False
        deeper = depth + 1
        if isinstance(node, ast.Name):
            return node.id in self.any_rank
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in RANK_FIXING | {"shape"}:
                return False
            if isinstance(func, ast.Attribute) and self.carries(func.value, deeper):
                return True
            return any(self.carries(a, deeper) for a in node.args)
        if isinstance(node, ast.BinOp):
            return self.carries(node.left, deeper) or self.carries(node.right, deeper)
        if isinstance(node, ast.UnaryOp):
            return self.carries(node.operand, deeper)
        if isinstance(node, ast.Attribute):
            return node.attr in ("mT", "T", "data") and self.carries(node.value, deeper)
        if isinstance(node, ast.Subscript):  # scores[..., :T, :T] keeps the rank; x[0] drops one
            keys = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            keeps = any(isinstance(k, ast.Constant) and k.value is Ellipsis for k in keys) or \
                all(isinstance(k, ast.Slice) for k in keys)
            return keeps and self.carries(node.value, deeper)
        return False

    def bind(self, statement: ast.stmt) -> None:
        targets = statement.targets if isinstance(statement, ast.Assign) else \
            [statement.target] if isinstance(statement, (ast.AugAssign, ast.AnnAssign)) else []
        value = getattr(statement, "value", None)
        if len(targets) == 1 and isinstance(targets[0], ast.Tuple) and isinstance(value, ast.Tuple) \
                and len(value.elts) == len(targets[0].elts):  # q, k = Q.reshape(...), K.reshape(...)
            targets, values = targets[0].elts, value.elts
        else:
            values = [value] * len(targets)
        for target, value in zip(targets, values):
            if isinstance(target, ast.Name):
                if isinstance(statement, ast.AugAssign):
                    continue  # scores /= c keeps its rank
                if self.carries(value):
                    self.any_rank.add(target.id)
                else:
                    self.flattens |= self.reshapes_input(value)
                    self.any_rank.discard(target.id)

    def reshapes_input(self, node: ast.AST | None) -> bool:
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in ("reshape", "view", "flatten") and self.carries(node.func.value)

    def judge(self, node: ast.AST) -> None:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple) \
                and not any(isinstance(e, ast.Starred) for e in node.targets[0].elts) and self.shape_of_input(node.value):
            self.add("hardcoded-dims", node)  # B, T, d = Q.shape
        elif isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "shape" \
                and self.carries(node.value.value) and _from_front(node.slice):
            self.add("hardcoded-dims", node)  # Q.shape[1]
        elif isinstance(node, ast.Call):
            self.judge_call(node)

    def shape_of_input(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Attribute) and node.attr == "shape":
            return self.carries(node.value)
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "size" \
            and not node.args and self.carries(node.func.value)

    def judge_call(self, call: ast.Call) -> None:
        func = call.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        method_on_input = isinstance(func, ast.Attribute) and self.carries(func.value)
        # torch.transpose(x, 0, 1) / F.softmax(x, 1): the tensor is the first argument
        on_input = method_on_input or (bool(call.args) and self.carries(call.args[0]))
        dims = call.args if method_on_input else call.args[1:]
        if isinstance(func, ast.Call) and self.softmax_layer_from_front(func) and on_input:
            self.add("hardcoded-dims", call)  # nn.Softmax(dim=1)(scores)
        if not on_input and name not in ("einsum", "rearrange"):
            return
        dim = _keyword(call, "dim") or (dims[0] if dims else None)
        if name in ("transpose", "swapaxes", "movedim") and any(_from_front(d) for d in dims[:2]) \
                or name == "permute" and dims and all(_from_front(d) for d in dims) or name == "bmm" \
                or name in ("size", *SOFTMAX) and _from_front(dim) \
                or name == "unsqueeze" and (_int(dim) or 0) >= 1:  # unsqueeze(0) is the front of any rank
            self.add("hardcoded-dims", call)
        elif name == "einsum" and self.fixed_einsum(call):
            self.add("hardcoded-dims", call)
        elif name == "rearrange" and len(call.args) >= 2 and self.carries(call.args[0]) \
                and isinstance(call.args[1], ast.Constant) and "..." not in str(call.args[1].value):
            self.add("hardcoded-dims", call)

    def softmax_layer_from_front(self, layer: ast.Call) -> bool:
        return isinstance(layer.func, ast.Attribute) and layer.func.attr in ("Softmax", "LogSoftmax") \
            and _from_front(_keyword(layer, "dim") or (layer.args[0] if layer.args else None))

    def fixed_einsum(self, call: ast.Call) -> bool:
        """An operand of the caller's rank given other than '...' and its last two letters."""
        if not call.args or not isinstance(call.args[0], ast.Constant) or not isinstance(call.args[0].value, str):
            return False
        operands = call.args[0].value.replace(" ", "").split("->")[0].split(",")
        tensors = call.args[1:]
        return any(self.carries(t) and (not spec.startswith("...") or len(spec.replace("...", "")) != 2)
                   for spec, t in zip(operands, tensors))

    def mask_with_leading_dims(self, node: ast.AST) -> bool:
        """torch.ones(1, T, T), torch.full((1, 1, T, T), ...), mask.unsqueeze(0), mask.view(1, T, T)."""
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            return False
        name, args = node.func.attr, node.args
        sizes = list(args[0].elts) if args and isinstance(args[0], (ast.Tuple, ast.List)) else list(args)
        if name in CREATION and isinstance(node.func.value, ast.Name) and node.func.value.id == "torch":
            sizes = sizes if name not in ("tril", "triu") else []
            return len(sizes) >= 3 and _int(sizes[0]) == 1
        if self.carries(node.func.value):
            return False
        if name in ("view", "reshape", "expand") and len(sizes) >= 3 and _int(sizes[0]) == 1:
            return True
        return name == "unsqueeze" and bool(args) and _int(args[0]) == 0
