"""Does the static reading let a method keep a count on an object it was handed (`cache.length = start_pos + T` in the
model's forward: the kv_cache lab hands it the student's own KVCache), while a write that could reach torch, a
tensor's own attributes or a shared object stays refused (grader/rules/parameter_writes.py)?"""
import pytest

from grader.exercises import exercise
from grader.rules import violations

pytestmark = pytest.mark.unit

MODULE = ("import math\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
          "class GroupedQueryAttention(nn.Module):\n"
          "    def helper(self, box):\n        return box\n\n"
          "    def forward(self, x, cache=None, start_pos=0{extra}):\n        {statement}\n        return x\n")
ALLOWED = {
    "a count on the cache": ("cache.length = start_pos + 1", ""),
    "a count added to": ("cache.written += 1", ""),
    "a parameter with a constant default": ("cache.position = start_pos", ""),
    "a keyword-only parameter": ("box.position = 0", ", *, box=None"),
}
REFUSED = {
    "a torch function through a parameter": ("cache.softmax = None", ""),
    "a tensor's data": ("x.data = x * 2", ""),
    "a tensor's gradient flag": ("x.requires_grad = True", ""),
    "a private attribute": ("cache._length = 1", ""),
    "a special attribute": ("cache.__class__ = int", ""),
    "a parameter rebound to torch": ("cache = torch.nn\n        cache.length = 1", ""),
    "a parameter whose default is torch": ("box.length = 1", ", box=torch"),
    "a nested attribute": ("cache.cache_k.length = 1", ""),
}


def mistakes(statement: str, extra: str) -> list[str]:
    source = MODULE.format(statement=statement, extra=extra)
    return [v.mistake for v in violations(source, exercise("kv_cache"))]


@pytest.mark.parametrize("statement, extra", ALLOWED.values(), ids=ALLOWED.keys())
def test_a_method_keeps_a_count_on_an_object_it_was_handed(statement, extra):
    assert mistakes(statement, extra) == []


@pytest.mark.parametrize("statement, extra", REFUSED.values(), ids=REFUSED.keys())
def test_a_write_that_could_reach_a_shared_object_stays_refused(statement, extra):
    assert "tampering" in mistakes(statement, extra)


def test_a_plain_functions_parameter_stays_refused():
    """A function that is no method may be handed a torch module by the student's own call."""
    source = ("import torch\n\n\ndef count(n, box):\n    box.length = n\n    return box\n\n\n"
              "def repeat_kv(x, n_rep):\n    return count(n_rep, x)\n")
    assert "tampering" in [v.mistake for v in violations(source, exercise("kv_cache"))]
