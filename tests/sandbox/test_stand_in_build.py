"""Do the plain values that tell a CPU-only build of torch from a GPU build read as a GPU build's while student code
runs on a stand-in, and only for the student?

`torch.version.cuda`, `torch.cuda.has_magma` and `torch.__version__` are answered as a GPU build holds them;
`torch.cuda.default_generators` and the legacy CUDA tensor types, which no value of this build can be, are refused
and counted at the student's line (grader/sandbox/stand_in_build.py). torch's own code keeps this build's values,
and everything is put back when the call ends, an error or not.
"""
from pathlib import Path

import pytest
import torch

import grader
from grader.sandbox import call_boundary, probes
from grader.sandbox.worker import load_student

pytestmark = pytest.mark.unit

READS = """import torch


def cuda_version(Q):
    return torch.version.cuda


def imported_cuda_version(Q):
    from torch.version import cuda
    return cuda


def magma(Q):
    return torch.cuda.has_magma


def local_version(Q):
    return str(torch.__version__)


def generators(Q):
    return len(torch.cuda.default_generators)


def legacy_type(Q):
    return isinstance(Q, torch.cuda.FloatTensor)
"""
LINES = READS.splitlines()
TORCH_FILE = torch.__file__.replace("__init__.py", "a_module_of_torchs.py")
GRADER_FILE = str(Path(grader.__file__).parent / "a_module_of_the_graders.py")


@pytest.fixture(scope="module")
def namespace():
    loaded, errors = load_student(READS, None)
    assert errors == []
    return loaded


def run_on(stand_in: str, function):
    Q = probes._place(torch.empty(2, 3), stand_in)
    with call_boundary.students_call(), probes._device_guard(stand_in, LINES) as cuda:
        return function(Q), cuda.asked


@pytest.mark.parametrize("stand_in", ["meta", "fake-cuda"])
def test_a_gpu_builds_values_are_answered_to_the_student_on_a_stand_in(namespace, stand_in):
    assert run_on(stand_in, namespace["cuda_version"]) == ("12.6", None)
    assert run_on(stand_in, namespace["imported_cuda_version"]) == ("12.6", None)
    assert run_on(stand_in, namespace["magma"]) == (True, None)
    version, asked = run_on(stand_in, namespace["local_version"])
    assert version.endswith("+cu126") and asked is None


@pytest.mark.parametrize("stand_in", ["meta", "fake-cuda"])
@pytest.mark.parametrize("function, line", [("generators", 22), ("legacy_type", 26)])
def test_what_no_value_of_this_build_can_answer_is_refused_and_counted(namespace, stand_in, function, line):
    Q = probes._place(torch.empty(2, 3), stand_in)
    with call_boundary.students_call(), probes._device_guard(stand_in, LINES) as cuda:
        with pytest.raises(RuntimeError, match="cannot be answered as a GPU would"):
            namespace[function](Q)
    assert cuda.asked is not None and cuda.asked["line"] == line, cuda.asked


def test_torchs_own_code_keeps_this_builds_values_inside_a_students_call():
    torchs = {}
    exec(compile("import torch\ndef read():\n    return torch.version.cuda, torch.cuda.default_generators\n",
                 TORCH_FILE, "exec"), torchs)
    with call_boundary.students_call(), probes._device_guard("meta", LINES) as cuda:
        assert torchs["read"]() == (None, ())
    assert cuda.asked is None


def test_everything_is_put_back_when_a_students_call_ends_in_an_error():
    with pytest.raises(ZeroDivisionError):
        with call_boundary.students_call(), probes._device_guard("meta", LINES):
            1 / 0
    assert torch.version.cuda is None and torch.cuda.has_magma is False and torch.cuda.default_generators == ()
    assert str(torch.__version__).endswith("+cpu") and "__getattr__" not in vars(torch.version)
    assert "cuda" in vars(torch.version) and "__getattr__" in vars(torch)



def test_the_graders_own_code_keeps_this_builds_values_inside_a_students_call():
    """Read by the grader for itself (its frame called from no student frame), not relayed for student code as the
    guard relays."""
    graders = {}
    exec(compile("import torch\ndef read():\n    return torch.version.cuda, torch.cuda.default_generators\n",
                 GRADER_FILE, "exec"), graders)
    with call_boundary.students_call(), probes._device_guard("fake-cuda", LINES) as cuda:
        assert graders["read"]() == (None, ())
    assert cuda.asked is None
