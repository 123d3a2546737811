"""Does each world a probe runs in (the CPU, each stand-in for a GPU, the CPU beside a GPU) meet the submission's
module state of its own, as each machine would? Both stand-ins read as `cuda:0`: a cache keyed by the device's text,
shared between them, handed one stand-in the other's tensors, and an honest `lru_cache` mask lost its device points.
A world keeps its state for its later calls (one load per world, not per call)."""
import pytest
import torch

from support.paths import REFERENCE
from grader.grade import default_limits
from grader.sandbox.worker_process import Worker

pytestmark = pytest.mark.sandbox

WORLDS = ["cpu", "meta", "fake-cuda", "cpu-beside-a-gpu"]
STATES = {
    "a module-level list": ("SEEN = []\n", "    met = bool(SEEN)\n    SEEN.append(1)\n"),
    "an lru_cache keyed by the device's text": (
        "@functools.lru_cache(maxsize=None)\ndef calls_on(device_text):\n    return []\n",
        "    calls = calls_on(str(Q.device))\n    met = bool(calls)\n    calls.append(1)\n"),
    "a class attribute": ("class Seen:\n    before = False\n", "    met = Seen.before\n    Seen.before = True\n"),
}


def _source(state: str) -> str:
    kept, read_and_kept = STATES[state]
    return ("import functools\nimport torch\n\n" + kept
            + "\n\ndef scaled_dot_product_attention(Q, K, V, is_causal=True):\n"
            + read_and_kept + "    return (Q.double() if met else Q), V\n")


def _met_state_before(worker: Worker, device: str) -> bool:
    """Whether this call found the module state already touched (its output then float64)."""
    Q = torch.randn(2, 3, 4)
    answer = worker.call("sdpa", {"Q": Q, "K": Q, "V": Q, "device": device}, 60)
    return answer["outputs"][0]["dtype"] == "float64"


@pytest.mark.parametrize("state", sorted(STATES))
def test_what_one_world_kept_at_module_level_no_other_world_meets(state):
    worker = Worker(_source(state), default_limits(), False)
    try:
        first_calls = {device: _met_state_before(worker, device) for device in WORLDS}
        second_calls = {device: _met_state_before(worker, device) for device in WORLDS}
    finally:
        worker.close()
    assert first_calls == {device: False for device in WORLDS}
    assert second_calls == {device: True for device in WORLDS}


def test_what_a_worlds_load_is_refused_costs_both_parts_as_the_plain_loads_does(graded, static_rules_off, tmp_path):
    """A world's load is made at its first call, inside one part's probe; a refusal met only there (module-level code
    that runs only where torch.cuda answers as a GPU) is still charged to both parts, as at the plain load."""
    path = tmp_path / "refused_only_on_a_gpu_machine.py"
    source = REFERENCE.read_text(encoding="utf-8").replace(
        "\n\ndef scaled_dot_product_attention(",
        "\n\nON_A_GPU = torch.cuda.is_available() and open(\"/dev/null\").close() is None\n\n\n"
        "def scaled_dot_product_attention(", 1).replace("    T, d_k = Q.size(-2), Q.size(-1)\n",
                                                        "    T, d_k = Q.size(-2), Q.size(-1 if ON_A_GPU else -1)\n", 1)
    assert "ON_A_GPU else" in source
    path.write_text(source, encoding="utf-8")
    report = graded(path)
    assert "tampering" in report["mistakes"], report["mistakes"]
    assert {check["part"] for check in report["checks"] if check["points"] > 0} == set()
