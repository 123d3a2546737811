"""Does the parent's own arithmetic stay clear of torch.fx's symbolic shapes? Their first import (sympy) cost
about 0.35 s of CPU, paid by every grading process (each `grade`, each `grade-all` job) on top of a warm grading's
0.3 s: autograd handed a tensor of output gradients, and `torch.unravel_index`, both import them."""
import subprocess
import sys

import pytest

from support.paths import ROOT

pytestmark = pytest.mark.unit


def test_a_reference_gradient_and_the_largest_difference_import_no_sympy():
    code = """
import sys, torch
from grader.checks import reference
from grader.checks.common import where_largest
generator = torch.Generator().manual_seed(0)
Q, K, V = (torch.randn(2, 4, 3, generator=generator, dtype=torch.float64, requires_grad=True) for _ in range(3))
out, _ = reference.attention(Q, K, V, True)
reference.gradients(out, [Q, K, V], torch.randn(2, 4, 3, generator=generator, dtype=torch.float64))
print(where_largest(out.detach(), out.detach() + 1e-3 * torch.arange(24.0, dtype=torch.float64).view(2, 4, 3))[1])
print(sorted(name for name in sys.modules if name.split(".")[0] == "sympy" or "symbolic_shapes" in name)[:3])
"""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    largest, imported = done.stdout.splitlines()
    assert largest == "(1, 3, 2)"  # the last of 24 places, row-major
    assert imported == "[]"
