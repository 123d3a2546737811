"""The decode probe of the kv_cache lab, the worker's side: GroupedQueryAttention called step by step as generation
calls it, each call recorded as a graph the judge chains on the parent's own inputs (grader/graph/decode_chain.py).

Runs inside the sandbox worker, on decoys (the parent's x's and weights never reach it). One module decodes every
sequence of the request, each sequence with a cache of its own: the GRADER's KVCache (its source is the exercise's
declaration, `GRADERS_KV_CACHE_SOURCE`), so a mistake in the student's KVCache costs Part 2 alone, dressed as an
instance of the student's own class. Each step's graph
takes x, the step's cache_k and cache_v, then the module's parameters and buffers, and gives back the output, then
the same state after the call (a write in place into an input leaves the input's node as the output): so the judge
feeds each step's caches and module state to the next step of its sequence, and a buffer the code writes, or a cache
the code keeps on the module, is the graph's to carry, never the worker's. A counter kept in Python is baked into
each graph as the worker's run met it: two sequences interleaved on one module show it.
"""
from __future__ import annotations

import types

import torch

from grader.exercises.kv_cache import EXERCISE, GRADERS_KV_CACHE_SOURCE, MODEL_ARGS_CLASS
from grader.graph.shared_memory import sharing_memory
from grader.sandbox import probes, tracing
from grader.sandbox.probes import _structure, describe_error

_DEFINED: dict = {"torch": torch}
exec(compile(GRADERS_KV_CACHE_SOURCE, "<the grader's KVCache>", "exec"), _DEFINED)  # trusted text, before confinement
GRADERS_KV_CACHE = _DEFINED[EXERCISE.graded_name["cache"]]  # the source defines the graded name
NOT_SENT = torch.empty(0)
"""In place of a weight's value: the parent loads its own by name."""


STOPPED = "stopped"
"""Kept in the worker: a step that left no cache for the next one."""


class WrongReturn(Exception):
    """forward returned something other than one tensor."""


def decode(namespace, lines, *, args, steps, xs, weights, record, device="cpu") -> dict:
    """Build the module and move it to `device` (its state before any call is sent, save the weights the parent
    loads), then record each step on its decoy x with `record` (`graph_probes._recorded`, handed in by graph_probes,
    which imports this module), the caches and x on that device; the first step that raises ends the answer (the
    steps after it would read a cache left unknown).
    {"state": {"names", "values", "meta"}, "steps": [a recorded graph, or {"error"}, per step]}."""
    answer: dict = {"steps": []}
    try:
        with probes.answered_world(device, lines) as cuda:
            probes._seed(0)
            module = probes._graded(namespace, EXERCISE.graded_name["gqa"])(
                probes._model_args(namespace, args, MODEL_ARGS_CLASS, types.SimpleNamespace))
        built_asking = cuda.asked if cuda is not None else None
        module, named, before = probes._moved_after_its_values(module, device)
    except BaseException as error:
        answer["error"] = describe_error(error, lines)
        return answer
    names = [name for name, _ in named]
    loaded = {f"{layer}.weight" for layer in weights}
    answer["state"] = {"names": names, "values": [NOT_SENT if name in loaded else before[name] for name in names],
                       "meta": [tracing._meta_of(t) for _, t in named]}
    state = [t.detach() for _, t in named]  # the module's own storage: a buffer one step writes, the next step reads
    head_dim = args["dim"] // args["n_heads"]
    sizes = (args["max_batch_size"], args["max_seq_len"], args["n_kv_heads"], head_dim)
    caches = {sequence: _on(_dressed_as_the_students(namespace, GRADERS_KV_CACHE(*sizes), sizes), device)
              for sequence, _, _ in steps}
    copies = tracing.ConstantCopies()
    for (sequence, start_pos, _), x in zip(steps, xs):
        recorded = _step(record, module, names, caches[sequence], start_pos, x if device == "cpu" else
                         probes._place(x, device), state, lines, copies, device, built_asking, x_value=x)
        stopped = recorded.pop(STOPPED, False)
        answer["steps"].append(recorded)
        if "error" in recorded or stopped:
            break
    return answer


def _on(cache, device: str):
    """The cache's buffers on the module's device, as a model's caches are made (zeros there: the judge's too)."""
    if device != "cpu":
        cache.cache_k, cache.cache_v = probes._place(cache.cache_k, device), probes._place(cache.cache_v, device)
    return cache


def _dressed_as_the_students(namespace, cache, sizes: tuple[int, int, int, int]):
    """The grader's cache as an instance of the student's own KVCache class, its buffers and update the grader's: code
    that asks `isinstance(cache, KVCache)` or `type(cache) is KVCache` meets in grading what it meets in use (red
    team on the second lab: the grader's own class told the decode probe apart). It also carries what the student's
    own cache of these sizes keeps besides tensors (`_kept_by_the_students`): a model may read `cache.max_seq_len`.
    A class whose attributes are not plain (its own __setattr__, slots, a property of these names) keeps the
    grader's class, with those values too."""
    students = namespace.get(EXERCISE.graded_name["cache"])
    vars(cache).update(_kept_by_the_students(students, sizes))
    plain = (object.__setattr__, torch.nn.Module.__setattr__)
    if not isinstance(students, type) or getattr(students, "__setattr__", None) not in plain \
            or any(hasattr(students, name) for name in ("cache_k", "cache_v", "__slots__")):
        return cache
    try:
        dressed = object.__new__(students)
        if isinstance(dressed, torch.nn.Module):
            torch.nn.Module.__init__(dressed)
        vars(dressed).update(vars(cache), update=types.MethodType(GRADERS_KV_CACHE.update, dressed))
    except Exception:  # a class torch or Python will not make this way: the grader's own
        return cache
    return dressed


GRADERS_NAMES = frozenset({"cache_k", "cache_v", "update"})
"""What the dressed cache always takes from the grader's: the buffers and the write."""


def _kept_by_the_students(students, sizes: tuple[int, int, int, int]) -> dict:
    """The attributes the student's own KVCache sets when built with these sizes (on the CPU, the interface's
    defaults otherwise), save the grader's names and any that holds a tensor: sizes, a dtype, a position the model
    reads (`cache.max_seq_len` in a bound check is honest code). Its tensors never reach the model: the grader's
    buffers stand for the storage, so a mistake of the student's cache still costs Part 2 alone; where its __init__
    raises, nothing is kept."""
    if not isinstance(students, type):
        return {}
    try:
        built = students(*sizes)
        found = {**_in_slots(built), **getattr(built, "__dict__", {})}
    except Exception:
        return {}
    return {name: value for name, value in found.items() if type(name) is str and name not in GRADERS_NAMES
            and not name.startswith("__") and not _holds_a_tensor(value)}


def _in_slots(built) -> dict:
    """The values a class with `__slots__` keeps there (it has no __dict__ for them): those its __init__ set."""
    found = {}
    for klass in type(built).__mro__:
        slots = vars(klass).get("__slots__", ())
        for name in [slots] if isinstance(slots, str) else slots:
            if type(name) is str and not name.startswith("__") and hasattr(built, name):
                found.setdefault(name, getattr(built, name))
    return found


def _holds_a_tensor(value, depth: int = 0) -> bool:
    if isinstance(value, (torch.Tensor, torch.nn.Module)):
        return True
    if depth < 3 and isinstance(value, (list, tuple, set, frozenset)):
        return any(_holds_a_tensor(item, depth + 1) for item in value)
    if depth < 3 and isinstance(value, dict):
        return any(_holds_a_tensor(item, depth + 1) for item in value.values())
    return depth >= 3  # a container nested deeper is not looked into, so not kept


def _step(record, module, names: list[str], cache, start_pos: int, x: torch.Tensor, state: list, lines: list[str],
          copies: tracing.ConstantCopies, device: str = "cpu", built_asking: dict | None = None,
          x_value: torch.Tensor | None = None) -> dict:
    left: list[tuple] = []  # the cache each call left: the recorded call's first, then a replay's
    seen: dict = {}

    def call(x, cache_k, cache_v, *tensors):
        cache.cache_k, cache.cache_v = cache_k, cache_v
        out = torch.func.functional_call(module, dict(zip(names, tensors)), (x,),
                                         {"cache": cache, "start_pos": start_pos})
        left.append((cache.cache_k, cache.cache_v))
        seen.setdefault("structure", _structure(out))
        if not isinstance(out, torch.Tensor):
            raise WrongReturn(f"forward returned {seen['structure']['kind']}, not one tensor")
        return [out, cache.cache_k, cache.cache_v, *tensors]

    given = [cache.cache_k, cache.cache_v, *state]
    shared = sharing_memory(given, ["cache_k", "cache_v", *names])
    if shared:  # the judge runs each input on a copy of its own: two that share elements would part there
        return {"error": {"type": "SharedState", "where": None, "message": f"{shared[0]} and {shared[1]} share memory "
                                                                            f"after the previous step"}}
    try:
        with probes._device_guard(device, lines) as cuda, torch.no_grad():
            # x and the caches are what a replay varies where values left for Python: a write placed by what the
            # cache holds is no graph of start_pos
            # on a stand-in a read of x alone is answered (`if not torch.isfinite(x).all()`); the caches and the
            # module's state after a step hold values the worker does not know
            values = [x_value, *[None] * len(given)] if x_value is not None and device != "cpu" else []
            recorded = record(call, [x, *given], 3, device, lines, values, copies)
        from grader.sandbox import graph_probes  # it imports this module
        graph_probes._note_unanswered(recorded, cuda, built_asking)
    except BaseException as error:
        return {"error": describe_error(error, lines), "structure": seen.get("structure")}
    if not left:  # the call stopped where values left a stand-in (untraceable): no cache for a next step
        return {**recorded, STOPPED: True}
    cache.cache_k, cache.cache_v = left[0]  # the next step reads what the recorded call left, not a replay's
    return recorded
