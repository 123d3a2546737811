"""Does the static reading let a module set its own attributes by name (`setattr(self, name, layer)`, as `getattr(self,
name)` reads them), while every other setattr stays refused?

The rules read only the text; a name computed at run time is judged by the worker's guard when the write happens
(grader/sandbox/guard.py, `Guard.write`: a special attribute of the student's own object is refused there too).
"""
import pytest

from grader.exercises import exercise
from grader.rules import violations

pytestmark = pytest.mark.unit

IN_A_GRADED_FUNCTION = ("import torch\nimport torch.nn.functional as F\n\n\n"
                        "def scaled_dot_product_attention(Q, K, V, is_causal=True):\n    self = Q\n    {}\n"
                        "    return Q, K\n")
ALLOWED = {
    "a computed name": "for name in ('wq', 'wk'): setattr(self, name, None)",
    "a constant name": "setattr(self, 'cache_k', None)",
    "an f-string name": "setattr(self, f'w{0}', None)",
}
REFUSED = {
    "a special attribute by its constant name": ("setattr(self, '__class__', int)", "tampering"),
    "another object": ("setattr(torch, 'matmul', None)", "tampering"),
    "a module's function": ("setattr(F, 'softmax', None)", "tampering"),
    "setattr passed around": ("writer = setattr", "tampering"),
    "delattr, even on self": ("delattr(self, 'wq')", "tampering"),
}


def mistakes(statement: str) -> list[str]:
    return [v.mistake for v in violations(IN_A_GRADED_FUNCTION.format(statement), exercise("attention"))]


@pytest.mark.parametrize("statement", ALLOWED.values(), ids=ALLOWED.keys())
def test_a_module_sets_its_own_attributes_by_name(statement):
    assert mistakes(statement) == []


@pytest.mark.parametrize("statement, mistake", REFUSED.values(), ids=REFUSED.keys())
def test_every_other_setattr_is_refused(statement, mistake):
    assert mistake in mistakes(statement)
