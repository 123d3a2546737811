# The grading rules read in the student's code, the same for every exercise: the table the worker enforces
# (grader/rules/table.py, copied in above by `make build`) applied to the statements a part's graded definition runs.
# `make build` copies this text between the markers of each exercise's selfcheck.py.

_ESCAPES = {"eval": "introspection", "exec": "introspection", "compile": "introspection", "globals": "introspection",
            "locals": "introspection", "vars": "introspection", "breakpoint": "introspection",
            "__import__": "introspection", "__builtins__": "introspection", "open": "tampering", "exit": "tampering",
            "quit": "tampering"}
_TORCH_NAMES = {"torch", "nn", "F"}


def _folded(node):
    """A string made only of constants ("me" + "ta"), else None."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _folded(node.left), _folded(node.right)
        return None if left is None or right is None else left + right
    return None


def _breach(node, device_text=frozenset()):
    """(mistake, what) when this node breaks the grading rules the grader enforces when your code runs
    (`device_text`: the nodes where a string can meet a device's text, from `_device_text`)."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
        denied = [m for m in modules if not module_allowed(m)]
        if denied or getattr(node, "level", 0):
            return "forbidden-import", f"import {denied[0] if denied else '.'}"
        names = [a.name for a in node.names] if isinstance(node, ast.ImportFrom) else []
        if any(FORBIDDEN_API.match(n) for n in names):
            return "forbidden-api", f"from {node.module} import {', '.join(names)}"
        if any(n.startswith("_") for n in names):
            return "private-torch", f"from {node.module} import {', '.join(names)}"
    if isinstance(node, ast.Attribute):
        name, base = node.attr, node.value
        on_self = isinstance(base, ast.Name) and base.id == "self"
        on_torch = isinstance(base, ast.Name) and base.id in _TORCH_NAMES or isinstance(base, ast.Attribute)
        if FORBIDDEN_API.match(name) and not on_self:
            return "forbidden-api", f".{name}"
        if name in STAND_IN_ATTRIBUTES:
            return "device-probing", f".{name}"
        if INTERPRETER_ATTRIBUTE.match(name) or (name.startswith("__") and name.endswith("__")
                                                  and name not in ALLOWED_DUNDERS):
            return "introspection", f".{name}"
        if name.startswith("_") and not name.endswith("__") and not on_self:
            return ("private-torch" if on_torch else "introspection"), f".{name}"
        if isinstance(node.ctx, ast.Store) and isinstance(base, ast.Name) and base.id in _TORCH_NAMES:
            return "tampering", f"{base.id}.{name} ="
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr") \
            and len(node.args) >= 2 and _folded(node.args[1]) is not None:  # getattr(x, "name") reads x.name
        return _breach(ast.Attribute(node.args[0], _folded(node.args[1]), ast.Load()))
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in _ESCAPES:
        return _ESCAPES[node.id], f"{node.id}"
    if isinstance(node, ast.MatchClass) and set(node.kwd_attrs) & STAND_IN_ATTRIBUTES:
        return "device-probing", "case …(is_meta=…)"
    text = _folded(node) if isinstance(node, (ast.Constant, ast.BinOp)) and id(node) in device_text else None
    if text is not None and re.search(r"(?<![a-z])meta(?![a-z])|faketensor", text, re.I):
        return "device-probing", repr(text[:40])
    return None


_DEVICE_CALLS = {"device", "to", "type"}
_TEXT_MATCHING = {"startswith", "endswith", "find", "rfind", "index", "rindex", "count", "split", "rsplit",
                  "partition", "rpartition", "replace", "removeprefix", "removesuffix", "strip", "lstrip", "rstrip",
                  "__contains__", "__eq__", "__ne__", "search", "match", "fullmatch", "findall", "sub",
                  "contains", "eq", "ne"}


def _device_text(statement):
    """The nodes of a statement where a string can meet a device's text (a comparison, `device=`, `.to(...)`,
    text matching): only there does the word "meta" say the code looks for the stand-in (an assert message naming
    Meta's LLaMA does not)."""
    roots = set()
    for node in ast.walk(statement):
        if isinstance(node, ast.Compare):
            roots.update(id(n) for n in [node.left, *node.comparators])
        elif isinstance(node, ast.MatchValue):
            roots.add(id(node.value))
        elif isinstance(node, ast.Call):
            roots.update(id(k.value) for k in node.keywords if k.arg == "device")
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in _DEVICE_CALLS or name in _TEXT_MATCHING:
                roots.update(id(a) for a in [*node.args, *(k.value for k in node.keywords)])
                if isinstance(func, ast.Attribute):
                    roots.add(id(func.value))
    inside, pending = set(), [(statement, False)]
    while pending:
        node, within = pending.pop()
        within = within or id(node) in roots
        if within:
            inside.add(id(node))
        pending.extend((child, within) for child in ast.iter_child_nodes(node))
    return inside


def _graded_code(sources, graded):
    """The statements your graded definition runs: its last definition in the code you ran, the helpers
    it uses (their last definitions), and the imports of what they use; with each statement's lines."""
    definitions, imports, at_load = {}, [], []
    for text in sources:
        text = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in str(text).splitlines())
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for statement in tree.body:
            if isinstance(statement, (ast.FunctionDef, ast.ClassDef)):
                definitions[statement.name] = (statement, text.splitlines())
                # what runs when the code loads (decorators, base classes) counts for both parts
                loaded = statement.decorator_list + getattr(statement, "bases", [])
                at_load += [(ast.Module(body=[ast.Expr(node)], type_ignores=[]), text.splitlines()) for node in loaded]
            elif isinstance(statement, (ast.Import, ast.ImportFrom)):
                imports.append((statement, text.splitlines()))
    if graded not in definitions:
        return []
    reached = {}
    pending = [graded] + [n.id for tree, _ in at_load for n in ast.walk(tree) if isinstance(n, ast.Name)]
    while pending:
        name = pending.pop()
        if name in definitions and name not in reached:
            reached[name] = definitions[name]
            pending += [n.id for n in ast.walk(definitions[name][0]) if isinstance(n, ast.Name)]
    used = {n.id for tree, _ in [*at_load, *reached.values()] for n in ast.walk(tree) if isinstance(n, ast.Name)}
    # an import counts when the graded code uses what it binds (a plotting cell's imports are not graded code)
    imported = [(statement, lines) for statement, lines in imports
                if any((alias.asname or alias.name.split(".")[0]) in used for alias in statement.names)]
    return imported + at_load + list(reached.values())


def check_rules(part, namespace):
    """The grading rules, read in the code of this part's graded definition (the same table the grader holds
    to your code when it runs): the first breach, quoted with its line."""
    sources = namespace.get("__selfcheck_sources__") or namespace.get("In") or []
    for statement, lines in _graded_code(sources, SELFCHECK_GRADED[part][0]):
        device_text = _device_text(statement)
        for node in ast.walk(statement):
            breach = _breach(node, device_text)
            if breach:
                line = lines[node.lineno - 1].strip() if 0 < node.lineno <= len(lines) else ""
                _fail(breach[0], f"`{line[:120]}`：{breach[1]}。", f"`{line[:120]}`: {breach[1]}.")
