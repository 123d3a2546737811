"""The worst code the size caps allow (grader/handin/source.py), one statement kind each, read by the graded code.

Each hand-in is the reference solution plus one hostile block that the graded class reads (so extraction keeps
it and every pass of the parent reads it), filling the code cap (512 KiB), the line cap or the statement cap.
A pass that is quadratic in any of them costs minutes here; a linear one, seconds at most.
"""
from __future__ import annotations

from support.paths import REFERENCE
from grader.handin.source import MAX_CODE_BYTES, MAX_CODE_LINES, MAX_STATEMENTS

DEPTH = 2000
"""Nesting CPython 3.11 parses for left-recursive chains (a.b.c…, -(-…), 1+1+…) from any caller: up to about
2,985 at the top of a stack, less deeper in one (a test, a pool thread)."""


def with_block(block: str) -> str:
    """The reference with `block` at module level, its `X` read by MultiHeadAttention's class body."""
    reference = REFERENCE.read_text(encoding="utf-8")
    head = reference.replace("class MultiHeadAttention(nn.Module):", "class MultiHeadAttention(nn.Module):\n    _ = X", 1)
    return f"{head}\n{block}\n"


def room() -> int:
    """Bytes left under the code cap once the reference is there (a margin for the glue)."""
    return MAX_CODE_BYTES - len(with_block("").encode("utf-8")) - 256


def binding_line() -> str:
    """One line binding N names, each read on the same line: `X, a0, a1, … = a0, a1, …`."""
    count = room() // 16
    names = ", ".join(f"a{i}" for i in range(count))
    return with_block(f"X, {names} = 0, {names}")


def attribute_chains() -> str:
    """Lines of `X = torch.a.a.a…` as deep as the parser allows, to the code cap."""
    line = "X = torch" + ".a" * DEPTH
    return with_block("\n".join([line] * (room() // (len(line) + 1))))


def nesting() -> str:
    """Every left-recursive nesting at the parser's depth, in turn, to the code cap."""
    kinds = ["X = " + "-" * DEPTH + "1", "X = 1" + "+1" * DEPTH, "X = " + "not " * DEPTH + "1",
             "X = x" + "[0]" * DEPTH, "X = x" + "()" * DEPTH, "X = " + "1 if 1 else " * (DEPTH // 4) + "1",
             "X = " + "f(" * 190 + ")" * 190, "X = " + "[" * 190 + "]" * 190, "X = " + "lambda: " * (DEPTH // 3) + "1"]
    lines, size = [], 0
    while size < room() - max(map(len, kinds)):
        kind = kinds[len(lines) % len(kinds)]
        lines.append(kind)
        size += len(kind) + 1
    return with_block("\n".join(lines))


def statements() -> str:
    """The statement cap: a chain `x1 = x0`, `x2 = x1`, … of that many assignments."""
    count = MAX_STATEMENTS - 20
    return with_block("x0 = 0\n" + "".join(f"x{i} = x{i - 1}\n" for i in range(1, count)) + f"X = x{count - 1}")


def lines_in_a_function() -> str:
    """The line cap inside one function, each line a finding of the static pass (`is_casual`, bare `matmul`)."""
    line = "    is_casuel0 = matmul(torch.Tenser)\n"
    count = min(MAX_CODE_LINES - 200, room() // len(line))
    body = line * count
    return with_block(f"def X():\n{body}")


def long_name() -> str:
    """One identifier as long as the cap allows."""
    return with_block("X = is_" + "a" * room())


WORST = {case.__name__: case for case in (binding_line, attribute_chains, nesting, statements, lines_in_a_function,
                                          long_name)}
