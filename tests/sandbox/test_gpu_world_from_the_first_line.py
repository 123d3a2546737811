"""On the stand-ins for a GPU and on the CPU beside one, torch.cuda answers as on a GPU machine from the student's
first line (issue 41): what the file reads at load (module level, a default argument) is the GPU machine's answer,
the CPU's probes keep the plain load, and loading the file twice reports its errors once."""
import pytest
import torch

from grader.grade import default_limits
from grader.sandbox.worker_process import Worker

pytestmark = pytest.mark.sandbox

SOURCE = '''
import torch
ON_A_GPU = torch.cuda.is_available()
print("module-level code runs")
not_defined_anywhere


def scaled_dot_product_attention(Q, K, V, is_causal=True, gpu=torch.cuda.is_available()):
    return (Q.double() if ON_A_GPU else Q), (V.double() if gpu else V)
'''
ASKING_AT_LOAD = '''
import torch
try:
    torch.cuda.get_device_properties(0)
except Exception:
    pass


def scaled_dot_product_attention(Q, K, V, is_causal=True):
    return Q, V
'''


def _sdpa(worker: Worker, device: str) -> dict:
    Q = torch.randn(2, 3, 4)
    return worker.call("sdpa", {"Q": Q, "K": Q, "V": Q, "device": device}, 60)


@pytest.fixture
def worker():
    started = Worker(SOURCE, default_limits(), False)
    yield started
    started.close()


def test_a_load_error_is_reported_once_though_the_file_loads_twice(worker):
    assert [error["type"] for error in worker.ready["load_errors"]] == ["NameError"]


@pytest.mark.parametrize("device", ["meta", "fake-cuda", "cpu-beside-a-gpu"])
def test_module_level_and_default_arguments_read_torch_cuda_as_a_gpu_machine_answers(worker, device):
    answer = _sdpa(worker, device)
    assert [out["dtype"] for out in answer["outputs"]] == ["float64", "float64"], answer


def test_the_cpus_probes_keep_the_plain_load(worker):
    assert [out["dtype"] for out in _sdpa(worker, "cpu")["outputs"]] == ["float32", "float32"]


def test_what_loading_asked_that_no_stand_in_answers_leaves_each_stand_in_call_unjudged():
    asking = Worker(ASKING_AT_LOAD, default_limits(), False)
    try:
        assert _sdpa(asking, "meta")["unanswered"]["line"] == 4
        assert "unanswered" not in _sdpa(asking, "cpu")
    finally:
        asking.close()
