"""The KVCache probe as graphs: build the student's cache, then call its `update` step by step, each call recorded.

Runs inside the sandbox worker, on decoys (`graph_probes`). The answer's `calls`: first the constructor, recorded as
a graph of no inputs whose outputs are `cache_k` and `cache_v`; then one graph per step, of (cache_k, cache_v, k, v)
-> (keys, values, cache_k after, cache_v after). A write in place into a buffer leaves the buffer's input node as the
output (the runner returns its copy, written), a buffer replaced by a new tensor shows as another node: the judge
(grader/graph/cache_answers.py) threads the buffers step to step on the parent's own k and v, from the zeros the
constructor's graph gives there, and never from a value computed here.
"""
from __future__ import annotations

import torch

from grader.exercises.kv_cache import CACHE_BUFFERS, EXERCISE
from grader.graph.cache_answers import shared_memory_error
from grader.graph.shared_memory import sharing_memory
from grader.sandbox import tracing
from grader.sandbox.probes import _device_guard, _graded, _place, _structure, describe_error
from grader.sandbox.stand_in_devices import STAND_IN_DEVICES

CLASS = EXERCISE.graded_name["cache"]


def _device_given(device: str) -> torch.device:
    """What `device=` the cache is built with: on the meta stand-in an object that reads as `cuda:0` and means meta
    there (`stand_in_devices`), as a model's `x.device` would be; `cuda` for the FakeTensor stand-in and a GPU."""
    if device == "meta":
        return STAND_IN_DEVICES.read()
    return torch.device("cuda", 0) if device in ("cuda", "fake-cuda") else torch.device("cpu")


def _buffers(cache) -> list[torch.Tensor]:
    found = [getattr(cache, name) for name in CACHE_BUFFERS]
    if not all(isinstance(tensor, torch.Tensor) for tensor in found):
        raise TypeError(f"KVCache.{' and KVCache.'.join(CACHE_BUFFERS)} must be tensors, found "
                        f"{', '.join(type(tensor).__name__ for tensor in found)}")
    return found


def cache(namespace, lines, *, max_batch_size, max_seq_len, n_kv_heads, head_dim, dtype, steps, device="cpu") -> dict:
    """Trace the constructor, then each step's `update`, on one cache; a step that raised ends the chain (the steps
    after it would read a cache left unknown)."""
    # graph_probes registers this probe, so it is imported here, once the worker runs a probe
    from grader.sandbox import graph_probes

    answer: dict = {"calls": []}
    built: dict = {}

    def construct():
        made = _graded(namespace, CLASS)(max_batch_size, max_seq_len, n_kv_heads, head_dim,
                                         device=_device_given(device), dtype=getattr(torch, dtype))
        built["cache"] = made
        return _buffers(made)

    copies = tracing.ConstantCopies()  # a constant every step reads is sent once
    try:
        with _device_guard(device, lines) as cuda:
            recorded = graph_probes._recorded(construct, [], 0, device, lines, [], copies)
        graph_probes._note_unanswered(recorded, cuda)
    except BaseException as error:
        answer["calls"].append({"error": describe_error(error, lines)})
        return answer
    answer["calls"].append(recorded)
    made = built["cache"]
    for step in steps:
        seen: dict = {}
        left: list[tuple] = []  # the buffers each call left: the recorded call's first, then a replay's

        def update(cache_k, cache_v, k, v, start_pos=step["start_pos"]):
            for name, tensor in zip(CACHE_BUFFERS, (cache_k, cache_v)):
                setattr(made, name, tensor)
            result = made.update(start_pos, k, v)
            after = _buffers(made)
            left.append(after)
            returned = list(result) if isinstance(result, (tuple, list)) else [result]
            seen["structure"] = _structure(result)
            seen["outputs"] = [graph_probes._described(item) for item in returned]
            pair = returned if len(returned) == 2 and all(isinstance(t, torch.Tensor) for t in returned) else []
            return [*pair, *after]

        try:
            state = _buffers(made)
            shared = sharing_memory(state, CACHE_BUFFERS)
            if shared:  # the parent runs each buffer on a copy of its own: two that share memory would part there
                answer["calls"].append({"error": shared_memory_error(shared)})
                break
            inputs = [*state, *(_place(step[name], device) for name in ("k", "v"))]
            with _device_guard(device, lines) as cuda, torch.no_grad():
                # the buffers and k, v are what a replay varies where values left for Python: a write placed by
                # what the cache holds is no graph of start_pos
                # on a stand-in a read of k, v or of what start_pos makes is answered; the buffers hold no values
                recorded = graph_probes._recorded(update, inputs, 4, device, lines, [None, None, step["k"], step["v"]],
                                                  copies)
            graph_probes._note_unanswered(recorded, cuda)
            if not left:  # the call stopped where values left a stand-in (untraceable): no buffers for a next step
                answer["calls"].append({**recorded, **graph_probes._facts(seen)})
                break
            for name, tensor in zip(CACHE_BUFFERS, left[0]):  # the next step reads what the recorded call left
                setattr(made, name, tensor)
            answer["calls"].append({**recorded, **graph_probes._facts(seen)})
        except BaseException as error:
            answer["calls"].append({"error": describe_error(error, lines), **graph_probes._facts(seen)})
            break
    return answer
