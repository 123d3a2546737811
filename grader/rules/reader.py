"""The grading rules as a walk over one top-level statement: what honest attention code never needs.

The tables name what is allowed or denied; `Rules.breaches` yields each breach with what was seen,
in Chinese and English. Which parts a breach costs is `rules.attribution`'s job.
"""
from __future__ import annotations

import ast
import functools
import importlib.util

import torch

from grader.handin import syntax_tree
from grader.rules.parameter_writes import writes_to_parameters
from grader.rules.strings import (STAND_IN_WORD, device_text_positions, folded_string, format_fields, joins_strings,
                                  string_texts)
from grader.rules.table import (ALLOWED_DUNDERS, ALLOWED_SYS, CLASS_DUNDERS, DENIED_MODULES, DENIED_SPECIAL_METHODS,
                                DENIED_STDLIB_NAMES, DENIED_TORCH_NAMES, FORBIDDEN_API, INDIRECT_ACCESS_NAMES, INTERPRETER_ATTRIBUTE,
                                STAND_IN_ATTRIBUTES, module_allowed)

# the public namespaces, reached through an attribute rather than a module (rules.table has the modules)
DENIED_TORCH = tuple(DENIED_MODULES) + tuple(DENIED_TORCH_NAMES)
# what opens files or evaluates strings: refused at run time by the worker's audit hook, named here early
DENIED_ELSEWHERE = ("numpy.load", "numpy.save", "numpy.lib", "typing.get_type_hints", "typing.ForwardRef")
# never allowed, even where the student binds the same name (no scope games)
EXIT_BUILTINS = {"exit", "quit", "setattr", "delattr"}
ESCAPE_BUILTINS = {"eval", "exec", "compile", "globals", "locals", "vars", "__import__", "open", "breakpoint",
                   "__builtins__", "__loader__", "__spec__", "getattr"}
# ending or forking the process: the parent reports it, and the part scores 0
ENDING_ATTRIBUTES = {"_exit", "exit", "abort", "kill", "killpg", "fork", "forkpty", "system", "execv", "execve",
                     "posix_spawn", "spawnv"}
ENDING_EXCEPTIONS = {"SystemExit", "KeyboardInterrupt", "GeneratorExit", "BaseException"}
ALLOWED_DUNDER_NAMES = {"__name__", "__file__", "__doc__"}
# builtin bases a student's own helper class may have (its own exception, say)
PLAIN_BASES = {"object", "Exception", "ValueError", "RuntimeError", "TypeError", "AssertionError", "NamedTuple"}
PLAIN_BASE_PATHS = {"typing.NamedTuple", "torch.autograd.Function", "enum.Enum", "enum.IntEnum", "abc.ABC",
                    "typing.Protocol", "typing_extensions.Protocol", "typing.Generic"}
# the data attributes an honest module sets on its own layers (self.mask.requires_grad = False)
NESTED_SELF_ATTRIBUTES = {"requires_grad", "p", "data", "weight", "bias", "training"}


MAX_CHAIN = 16
"""Attributes followed back to a chain's first name. Every prefix of a chain is a node of its own, so the
prefixes that decide (torch.ops, sys.exit, F.scaled_dot_product_attention) are all read; a deeper node is
judged by its own name. Following every node of a 3,000-deep chain to its start was quadratic (minutes)."""


def _dotted(node: ast.AST) -> list[str] | None:
    """a.b.c as ["a", "b", "c"], or None when the chain does not start at a plain name within MAX_CHAIN."""
    parts = []
    while isinstance(node, ast.Attribute) and len(parts) < MAX_CHAIN:
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id] + parts[::-1]
    return None


def _shown(node: ast.AST) -> str:
    """The code of a node, for a message: a chain as read, else unparsed (an expression nested deeper than
    Python's recursion limit is shown by its last name only)."""
    chain = _dotted(node)
    if chain:
        return ".".join(chain)
    try:
        return ast.unparse(node)[:200]
    except RecursionError:
        return "…" + (f".{node.attr}" if isinstance(node, ast.Attribute) else "")


def _named_getattr(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Name) and call.func.id == "getattr" and len(call.args) >= 2 \
        and isinstance(call.args[1], ast.Constant) and isinstance(call.args[1].value, str)


def _on_self(call: ast.Call, builtin: str = "getattr") -> bool:
    return isinstance(call.func, ast.Name) and call.func.id == builtin and len(call.args) >= 2 \
        and isinstance(call.args[0], ast.Name) and call.args[0].id == "self"


@functools.lru_cache(maxsize=256)
def _names_a_module(path: str) -> bool:
    """Whether an allowed import path is a module (torch.utils.checkpoint), not a name in one (its checkpoint)."""
    try:
        return module_allowed(path) and importlib.util.find_spec(path) is not None
    except (ImportError, ValueError, AttributeError):
        return False


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__") and len(name) > 4


def _import_mistake(module: str) -> str:
    return "private-torch" if module.startswith("torch.") else "forbidden-import"


def _nn_module_class(path: str) -> bool:
    prefix = "torch.nn."
    if not path.startswith(prefix) or "." in path[len(prefix):]:
        return False
    value = getattr(torch.nn, path[len(prefix):], None)
    return isinstance(value, type) and issubclass(value, torch.nn.Module) and not FORBIDDEN_API.match(value.__name__)


class Rules:
    """Walks one top-level statement and yields (node, mistake, zh, en) for each breach."""

    def __init__(self, tree: ast.Module, walked: dict[int, list[ast.AST]]) -> None:
        """`walked`: each top-level statement's walk (syntax_tree.walk_statements), read here and by `breaches`."""
        self.imported: dict[str, str] = {}  # local name -> dotted path of what it is bound to
        self.walked = walked
        nodes = [node for statement in tree.body for node in walked[id(statement)]]
        self.classes = {s.name for s in nodes if isinstance(s, ast.ClassDef)}
        self.parameter_writes = writes_to_parameters(nodes)  # `cache.length = ...` in a method: its own
        for node in nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:  # `import a.b` binds a; `import a.b as c` binds c to a.b
                    top = alias.name.split(".")[0]
                    self.imported[alias.asname or top] = alias.name if alias.asname else top
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    if alias.name != "*":
                        self.imported[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        self.bound_anywhere = {n.id for n in nodes if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
        self.bound_anywhere |= {a.arg for a in nodes if isinstance(a, ast.arg)}
        self.bound_anywhere |= {n.name for n in nodes if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                        ast.ClassDef))}
        self.bound_anywhere -= set(self.imported)
        self.stand_in_names = set()  # names bound to a string with the word: looked for where they meet device text
        for node in nodes:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                bound = [(t, node.value) for t in (node.targets if isinstance(node, ast.Assign) else [node.target])]
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                bound = syntax_tree.parameter_defaults(node.args)
            else:
                continue
            for target, value in bound:
                name = target.id if isinstance(target, ast.Name) else target.arg if isinstance(target, ast.arg) else None
                text = folded_string(value)
                if name and text is not None and STAND_IN_WORD.search(text):
                    self.stand_in_names.add(name)

    def breaches(self, statement: ast.stmt):
        nodes = self.walked[id(statement)]
        attribute_values = {id(n.value) for n in nodes if isinstance(n, ast.Attribute)}
        docstrings = {id(n.value) for n in nodes if isinstance(n, ast.Expr)
                      and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)}
        # getattr(x, "name") is x.name, checked as such; only its computed-name form is an escape
        named_getattr = {id(n.func) for n in nodes if isinstance(n, ast.Call)
                         and (_named_getattr(n) or _on_self(n) or _on_self(n, "setattr"))}
        # a string built from constant pieces ("me" + "ta") is checked whole, once: only at the top of its
        # expression (a child of a `+` or an f-string is a piece of its parent's string)
        pieces = {id(child) for n in nodes if joins_strings(n) for child in ast.iter_child_nodes(n)}
        pieces |= {id(n.value) for n in nodes if isinstance(n, ast.FormattedValue)}
        device_text = device_text_positions(statement, self._resolved)
        for node in nodes:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                yield from self._import(node)
            elif isinstance(node, ast.Call):
                yield from self._call(node)
                yield from self._format_fields(node)
            elif isinstance(node, ast.Attribute):
                yield from self._attribute(node)
            elif isinstance(node, ast.Name) and id(node) not in named_getattr:
                yield from self._name(node, id(node) in attribute_values)
                if node.id in self.stand_in_names and isinstance(node.ctx, ast.Load) and id(node) in device_text:
                    yield (node, "device-probing", f"{node.id} 的文字被拿来和设备比较，在寻找评分用的替身设备",
                           f"{node.id} holds text matched against a device: it looks for the grader's stand-in device")
            elif isinstance(node, (ast.Constant, ast.BinOp, ast.JoinedStr)) and id(node) in device_text \
                    and id(node) not in docstrings and id(node) not in pieces:
                for text in string_texts(node):
                    if STAND_IN_WORD.search(text):
                        yield (node, "device-probing", f"字符串 {text[:40]!r} 在寻找评分用的替身设备",
                               f"the string {text[:40]!r} looks for the grader's stand-in device")
                        break
            elif isinstance(node, ast.MatchClass):
                for name in node.kwd_attrs:  # `case torch.Tensor(is_meta=True)` reads Q.is_meta
                    yield from self._attribute(ast.copy_location(ast.Attribute(node.cls, name, ast.Load()), node))
            elif isinstance(node, ast.ClassDef):
                yield from self._class(node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in DENIED_SPECIAL_METHODS:
                yield (node, "tampering", f"定义了特殊方法 {node.name}，会改变 Python 或 torch 对对象的处理",
                       f"defines the special method {node.name}, which changes how Python or torch treats objects")
            elif isinstance(node, ast.Raise) and node.exc is not None:
                raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                if isinstance(raised, ast.Name) and raised.id in ENDING_EXCEPTIONS:
                    yield (node, "tampering", f"抛出 {raised.id} 会结束评分进程",
                           f"raising {raised.id} ends the grading process")

    def _import(self, node):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level or not module_allowed(module):
                yield node, _import_mistake(module), f"导入了 {'.' * node.level}{module}", \
                    f"imports {'.' * node.level}{module}"
                return
            for alias in node.names:
                if alias.name == "*":
                    yield node, "introspection", f"from {module} import * 导入了看不见的名字", \
                        f"from {module} import * brings in names no one can see"
                else:
                    yield from self._path(node, f"{module}.{alias.name}")
            return
        for alias in node.names:
            if not module_allowed(alias.name):
                yield node, _import_mistake(alias.name), f"导入了 {alias.name}", f"imports {alias.name}"

    def _path(self, node, path: str):
        """A dotted path into an imported module: torch.ops.aten…, F.scaled_dot_product_attention, …"""
        pieces = path.split(".")
        if pieces[-1] in ENDING_ATTRIBUTES and pieces[0] != "torch":
            yield node, "tampering", f"{path} 会结束或复制评分进程", f"{path} ends or copies the grading process"
            return
        if pieces[0] == "sys" and len(pieces) > 1 and pieces[1] not in ALLOWED_SYS:
            yield node, "introspection", f"{path} 通向解释器内部", f"{path} reaches into the interpreter"
            return
        if FORBIDDEN_API.match(pieces[-1]):
            yield node, "forbidden-api", f"{path} 是内置的注意力实现", f"{path} is the built-in attention"
            return
        if any(p.startswith("_") and not (p in ALLOWED_DUNDERS) for p in pieces[1:]):
            mistake = "private-torch" if pieces[0] == "torch" else "introspection"
            yield node, mistake, f"{path} 是私有接口", f"{path} is a private interface"
            return
        if path in INDIRECT_ACCESS_NAMES:
            yield node, "introspection", f"{path} 用数据里的名字读写属性或元素", f"{path} reads or writes attributes " \
                "or items named by data"
            return
        if path in DENIED_STDLIB_NAMES:
            yield node, "tampering", f"{path} 会改写评分进程传回答案的方式", f"{path} rewrites how the grader sends answers"
            return
        if any(path == d or path.startswith(d + ".") for d in DENIED_TORCH + DENIED_ELSEWHERE):
            mistake = "private-torch" if pieces[0] == "torch" else "introspection"
            yield node, mistake, f"{path} 能绕过或改写 torch 的分派与评分", f"{path} reaches below the tensor ops the grader watches"
            return
        if any("fake" in p.lower() for p in pieces) or pieces[-1] in STAND_IN_ATTRIBUTES:
            yield node, "device-probing", f"{path} 在寻找评分用的替身张量", f"{path} looks for the grader's stand-in tensors"

    def _resolved(self, node: ast.AST) -> str | None:
        chain = _dotted(node)
        if chain and chain[0] in self.imported and chain[0] not in self.bound_anywhere:
            return ".".join([self.imported[chain[0]]] + chain[1:])
        return None

    def _attribute(self, node: ast.Attribute):
        path = self._resolved(node)
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            yield from self._assignment(node, path)
            return
        if path is not None:
            yield from self._path(node, path)
            return
        name = node.attr
        if FORBIDDEN_API.match(name) and not (isinstance(node.value, ast.Name) and node.value.id == "self"):
            yield node, "forbidden-api", f".{name} 是内置的注意力实现", f".{name} is the built-in attention"
        elif _is_dunder(name) and name not in ALLOWED_DUNDERS:
            yield node, "introspection", f"读取了特殊属性 {name}", f"reads the special attribute {name}"
        elif name.startswith("_") and not _is_dunder(name) and not (isinstance(node.value, ast.Name)
                                                                    and node.value.id == "self"):
            yield node, "introspection", f"读取了别的对象的私有属性 {name}", f"reads the private attribute {name} of another object"
        elif name in ENDING_ATTRIBUTES and not (isinstance(node.value, ast.Name) and node.value.id == "self"):
            yield node, "tampering", f".{name} 会结束或复制评分进程", f".{name} ends or copies the grading process"
        elif INTERPRETER_ATTRIBUTE.match(name):
            yield node, "introspection", f"{name} 通向解释器的栈帧与全局变量", f"{name} leads to the interpreter's frames and globals"
        elif name in STAND_IN_ATTRIBUTES:
            yield node, "device-probing", f".{name} 在寻找评分用的替身设备", f".{name} looks for the grader's stand-in device"

    def _assignment(self, node: ast.Attribute, path: str | None):
        chain = _dotted(node)
        target = _shown(node)
        if chain and chain[0] == "self" and (len(chain) == 2 or chain[-1] in NESTED_SELF_ATTRIBUTES) \
                and not any(_is_dunder(p) for p in chain):
            return
        if path is not None and path.startswith("torch.backends."):  # TF32 switches: reset before every probe
            return
        if id(node) in self.parameter_writes:
            return
        yield node, "tampering", f"给 {target} 赋值会改变别人的对象", f"assigning to {target} changes an object that is not yours"

    def _name(self, node: ast.Name, is_attribute_base: bool):
        name = node.id
        if isinstance(node.ctx, ast.Store) and _is_dunder(name) and name not in CLASS_DUNDERS:
            yield node, "tampering", f"给特殊名字 {name} 赋值", f"assigns the special name {name}"
            return
        if not isinstance(node.ctx, ast.Load):
            return
        if name in self.imported and name not in self.bound_anywhere:
            if not is_attribute_base and _names_a_module(self.imported[name]):
                yield node, "introspection", f"把模块 {name} 当作值来传递", f"passes the module {name} around as a value"
            return
        if name in EXIT_BUILTINS:
            yield node, "tampering", f"{name}() 会结束进程或改写别人的对象", f"{name}() ends the process or rewrites objects that are not yours"
        elif name in ESCAPE_BUILTINS or (_is_dunder(name) and name not in ALLOWED_DUNDER_NAMES):
            yield node, "introspection", f"{name} 能动态执行代码或查找对象", f"{name} runs code or finds objects dynamically"

    def _call(self, node: ast.Call):
        func = node.func
        if not isinstance(func, ast.Name):
            return
        if func.id == "getattr":
            if _on_self(node) and not _named_getattr(node):  # a module's own layers by name
                return
            if _named_getattr(node):
                fake = ast.Attribute(value=node.args[0], attr=node.args[1].value, ctx=ast.Load())
                ast.copy_location(fake, node)
                yield from self._attribute(fake)
            else:
                yield node, "introspection", "getattr 用计算出来的名字查找属性", "getattr looks up a computed attribute name"
        elif func.id == "setattr" and _on_self(node, "setattr"):  # a module's own layers by name, as getattr reads them
            if isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
                written = ast.Attribute(value=node.args[0], attr=node.args[1].value, ctx=ast.Store())
                yield from self._assignment(ast.copy_location(written, node), None)
            # a computed name: the worker's guard judges the write itself (grader/sandbox/guard.py, Guard.write)
        elif func.id == "type" and len(node.args) == 3:
            yield node, "introspection", "type(名字, 基类, 字典) 动态创建类", "type(name, bases, dict) creates a class dynamically"

    def _format_fields(self, call: ast.Call):
        """Each attribute a constant format template reads (`"{0.__cuda_array_interface__}".format(Q)`), judged as
        the same attribute written in the code, at the line of the call."""
        for start, keys in format_fields(call):
            value = start if start is not None else ast.Name("_", ast.Load())
            for is_attribute, key in keys:
                if is_attribute:
                    value = ast.copy_location(ast.Attribute(value, key, ast.Load()), call)
                    yield from self._attribute(value)
                else:
                    value = ast.copy_location(ast.Subscript(value, ast.Constant(key), ast.Load()), call)

    def _class(self, node: ast.ClassDef):
        for base in node.bases:
            base = base.value if isinstance(base, ast.Subscript) else base  # Protocol[T], Generic[T]
            chain = _dotted(base)
            if chain and len(chain) == 1 and (chain[0] in self.classes or chain[0] in PLAIN_BASES):
                continue
            path = self._resolved(base)
            if path and (_nn_module_class(path) or path in PLAIN_BASE_PATHS):
                continue
            shown = path or _shown(base)
            mistake = "tampering" if shown.startswith("torch") else "introspection"
            yield base, mistake, f"类 {node.name} 继承了 {shown}", f"class {node.name} subclasses {shown}"
        for keyword in node.keywords:
            yield keyword.value, "introspection", f"类 {node.name} 用了 {keyword.arg}=", f"class {node.name} uses {keyword.arg}="
