"""Does the mask-diagonal rewrite move the diagonal one further where the code computes it (a cache's
`triu(diagonal=start_pos)`), and set the written-out number where it is one?

`diagonal=1` in place of `start_pos` mends a whole prompt and breaks every chunk after it (the mask no longer offset),
so the fix shown to a student of the kv_cache lab would trade one mistake for another.
"""
from __future__ import annotations

import ast

import pytest

from grader.fixes.rewrites import REWRITES

pytestmark = pytest.mark.unit


def rewritten(line: str) -> list[str]:
    """The line after each splice the rewrite offers."""
    splices = REWRITES["mask-diagonal"]([line.encode()], ast.parse(line))
    data = line.encode()
    return [(data[:s.start] + s.text.encode() + data[s.end:]).decode() for s in splices]


@pytest.mark.parametrize("line, fixed", [
    ("m = torch.ones(T, S).triu(diagonal=start_pos)", "m = torch.ones(T, S).triu(diagonal=start_pos + 1)"),
    ("m = torch.ones(T, S).triu(self.offset)", "m = torch.ones(T, S).triu(self.offset + 1)"),
    ("m = torch.triu(ones, diagonal=start_pos - 1)", "m = torch.triu(ones, diagonal=(start_pos - 1) + 1)"),
    ("m = torch.triu(ones, diagonal=0)", "m = torch.triu(ones, diagonal=1)"),
    ("m = torch.tril(ones, diagonal=-1)", "m = torch.tril(ones, diagonal=0)"),
    ("m = torch.triu(ones)", "m = torch.triu(ones, diagonal=1)"),
])
def test_the_diagonal_moves_one_further_or_to_the_right_number(line, fixed):
    assert rewritten(line) == [fixed]


def test_a_right_number_is_left_alone():
    assert rewritten("m = torch.triu(ones, diagonal=1)") == []
