"""Does the judge's turn of the KVCache probe (grader/graph/cache_answers.py) thread the buffers from what the
constructor's graph gives on this side, tell a buffer written in place from one replaced, and refuse buffers that
share memory, in the judge and in the worker (grader/sandbox/cache_probes.py) alike?

The worker's side runs here in this process, on hand-in text compiled under the worker's file name, as
tests/graph/test_decode_chain.py does.
"""
import pytest
import torch

from support.paths import SUBMISSIONS
from grader.exercises.kv_cache import CACHE_BUFFERS
from grader.graph import answers, cache_answers
from grader.graph.shared_memory import sharing_memory
from grader.sandbox import cache_probes, graph_probes, probes

pytestmark = pytest.mark.unit

PLAIN = (SUBMISSIONS / "kv_cache" / "correct" / "repeat_interleave_slice_plain.py").read_text(encoding="utf-8")
SIZES = {"max_batch_size": 2, "max_seq_len": 8, "n_kv_heads": 2, "head_dim": 3}
SHAPE = (2, 2, 8, 3)


def fields(*steps: tuple[int, int]) -> dict:
    g = torch.Generator().manual_seed(5)
    made = [{"start_pos": start, "k": torch.randn(2, 2, length, 3, generator=g),
             "v": torch.randn(2, 2, length, 3, generator=g)} for start, length in steps]
    return {**SIZES, "dtype": "float32", "steps": made, "device": "cpu", "count_ops": False}


def recorded(call, inputs: list) -> dict:
    return graph_probes._recorded(call, inputs, len(inputs), "cpu", [], [])


def step_of(update, sent: dict) -> dict:
    """One update graph of (cache_k, cache_v, k, v) -> (keys, values, cache_k, cache_v), as the worker records it."""
    step = sent["steps"][0]
    inputs = [torch.zeros(SHAPE), torch.zeros(SHAPE), step["k"], step["v"]]
    facts = {"structure": {"kind": "tuple", "length": 2}, "outputs": [{"kind": "tensor"}, {"kind": "tensor"}]}
    return {**recorded(lambda ck, cv, k, v: update(ck, cv, k, v, step["start_pos"]), inputs), **facts}


def sliced(ck, cv, k, v, start):
    T = k.shape[2]
    ck[:, :, start:start + T] = k
    cv[:, :, start:start + T] = v
    return [ck[:, :, :start + T], cv[:, :, :start + T], ck, cv]


def test_the_cache_starts_from_what_the_constructors_graph_gives_here():
    """Whatever the worker's buffers held, the judge's cache is the constructor graph's output on this side: ones
    made there are ones here, read back where the step wrote nothing."""
    sent = fields((2, 3))
    constructor = recorded(lambda: [torch.ones(SHAPE), torch.ones(SHAPE)], [])
    answer = cache_answers.cache({"calls": [constructor, step_of(sliced, sent)]}, sent, answers.Findings())
    assert all(torch.equal(item["value"], torch.ones(SHAPE)) for item in answer["buffers"])
    (step,) = answer["steps"]
    assert torch.equal(step["keys"]["value"][:, :, :2], torch.ones(2, 2, 2, 3))
    assert torch.equal(step["keys"]["value"][:, :, 2:], sent["steps"][0]["k"]) and step["in_place"]


def test_an_operator_in_place_on_the_whole_buffer_is_a_write_in_place_and_a_new_tensor_is_not():
    """`index_copy_` on the buffer itself (B == max_batch_size: no view between) returns the buffer it wrote;
    torch.cat makes another tensor."""
    def index_copied(ck, cv, k, v, start):
        positions = torch.arange(start, start + k.shape[2])
        return [ck.index_copy_(2, positions, k)[:, :, :start + k.shape[2]],
                cv.index_copy_(2, positions, v)[:, :, :start + k.shape[2]], ck, cv]

    def concatenated(ck, cv, k, v, start):
        ck = torch.cat([ck[:, :, :start], k, ck[:, :, start + k.shape[2]:]], dim=2)
        cv = torch.cat([cv[:, :, :start], v, cv[:, :, start + k.shape[2]:]], dim=2)
        return [ck[:, :, :start + k.shape[2]], cv[:, :, :start + k.shape[2]], ck, cv]

    sent = fields((1, 2))
    constructor = recorded(lambda: [torch.zeros(SHAPE), torch.zeros(SHAPE)], [])
    for update, in_place in ((index_copied, True), (concatenated, False)):
        answer = cache_answers.cache({"calls": [constructor, step_of(update, sent)]}, sent, answers.Findings())
        assert answer["steps"][0]["in_place"] is in_place, update.__name__
        assert torch.equal(answer["steps"][0]["keys"]["value"][:, :, 1:], sent["steps"][0]["k"])


@pytest.mark.parametrize("view", [lambda t: t, lambda t: t[:, :, 2:]], ids=["the same tensor", "an overlapping view"])
def test_the_judge_refuses_buffers_that_share_memory_as_its_graphs_give_them(view):
    sent = fields((0, 2))

    def shared_by_the_constructor():
        buffer = torch.zeros(SHAPE)
        return [buffer, view(buffer)]

    constructor = recorded(shared_by_the_constructor, [])
    answer = cache_answers.cache({"calls": [constructor, step_of(sliced, sent)]}, sent, answers.Findings())
    assert answer["error"]["type"] == "SharedCacheMemory" and answer["steps"] == []
    assert "KVCache.cache_k and KVCache.cache_v share memory" in answer["error"]["message"]

    def shared_by_the_update(ck, cv, k, v, start):
        keys, values, ck, _ = sliced(ck, cv, k, v, start)
        return [keys, values, ck, ck]

    constructor = recorded(lambda: [torch.zeros(SHAPE), torch.zeros(SHAPE)], [])
    answer = cache_answers.cache({"calls": [constructor, step_of(shared_by_the_update, sent)]}, sent,
                                 answers.Findings())
    assert answer["steps"][0]["error"]["type"] == "SharedCacheMemory"


def test_the_halves_of_one_buffer_share_no_element_and_are_apart():
    halves = torch.zeros((2, *SHAPE)).unbind(0)
    assert sharing_memory(list(halves), CACHE_BUFFERS) is None
    assert sharing_memory([halves[0], halves[0][:, :1]], CACHE_BUFFERS) == ("cache_k", "cache_v")


def test_the_worker_refuses_to_record_an_update_on_buffers_that_share_memory():
    """Refused where the memory is seen, before the step is traced: the judge would run the two on copies apart."""
    text = PLAIN.replace("        self.cache_v = torch.zeros(shape, device=device, dtype=dtype)",
                         "        self.cache_v = self.cache_k")
    namespace = {}
    exec(compile(text, probes.SUBMISSION_FILE, "exec"), namespace)  # the worker's file name: its lines are found
    lines = text.splitlines()
    sent = {key: value for key, value in fields((0, 2)).items() if key != "count_ops"}  # the parent reads the count
    answer = cache_probes.cache(namespace, lines, **sent)
    constructor, step = answer["calls"]
    assert "graph" in constructor
    assert step["error"]["type"] == "SharedCacheMemory"
