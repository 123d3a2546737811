"""A prototype of the decode probe of the second lab (issue 45), both sides, in this process.

The worker's side (`trace_decode`): one GroupedQueryAttention and one KVCache per sequence, built from the hand-in's
text, called step by step as generation calls them; each step is recorded by the worker's own recorder
(`graph_probes._recorded`) at its own shapes, with the step's cache buffers and the module's parameters and buffers
as graph inputs, and the same tensors after the call among its outputs (a write in place into an input leaves the
input's node as the output: the runner returns its copy, written). The judge's side (`chain`): the steps' graphs
run in order on the parent's inputs and weights (`answers.evaluate`, what the judge runs), each step's cache and
module state out fed in to the next step of its sequence.
"""
from __future__ import annotations

import dataclasses
import time

import torch

from grader.graph import answers
from grader.sandbox import graph_probes, probes, tracing
from grader.sandbox.probes import SUBMISSION_FILE, describe_error


@dataclasses.dataclass(frozen=True)
class Step:
    sequence: int  # which cache the call reads and writes
    start_pos: int
    length: int  # T, the new positions


@dataclasses.dataclass
class Traced:
    steps: list[Step]
    recorded: list[dict]  # per step, the answer as the worker sends it
    names: list[str]  # the module's parameters and buffers, in the order the graphs take them
    state: list[torch.Tensor]  # their values before the first step (the parent replaces the weights by its own)
    caches: dict[int, list[torch.Tensor]]  # per sequence, cache_k and cache_v as the constructor made them
    device: str  # "cpu", or the stand-in the steps were recorded on
    cpu_seconds: float


def load(text: str) -> tuple[dict, list[str]]:
    """The hand-in's names, its code compiled under the worker's file name (so the recorder finds its lines)."""
    namespace: dict = {}
    exec(compile(text, SUBMISSION_FILE, "exec"), namespace)
    return namespace, text.splitlines()


def trace_decode(namespace: dict, lines: list[str], args: dict, steps: list[Step], batch: int,
                 seed: int, device: str = "cpu") -> Traced:
    """Each step recorded on decoys drawn from `seed` (the worker never sees the parent's inputs or weights), on
    the CPU or on the meta stand-in for a GPU (the module moved there, each cache built with `device=`)."""
    started = time.process_time()
    torch.manual_seed(seed)
    module = namespace["GroupedQueryAttention"](namespace["ModelArgs"](**args))
    before = [tracing.value_for_the_parent(t) for t in [*module.parameters(), *module.buffers()]]
    module = probes._moved(module, device)
    head_dim = args["dim"] // args["n_heads"]
    with probes._device_guard(device, lines):
        caches = {s.sequence: namespace["KVCache"](args["max_batch_size"], args["max_seq_len"], args["n_kv_heads"],
                                                   head_dim, device=torch.device(device)) for s in steps}
    named = [*module.named_parameters(), *module.named_buffers()]
    names = [name for name, _ in named]
    # the module's own storage: what one step writes into a buffer, the next step reads, as in real use
    state = [t.detach() for _, t in named]
    # on the stand-in no value exists: the parent's own zeros, the constructor's promise, stand in (a prototype's
    # shortcut: the graders trace the constructor as a graph of its own)
    made = {n: [tracing.value_for_the_parent(c.cache_k) if device == "cpu" else torch.zeros(c.cache_k.shape),
                tracing.value_for_the_parent(c.cache_v) if device == "cpu" else torch.zeros(c.cache_v.shape)]
            for n, c in caches.items()}
    decoys = torch.Generator().manual_seed(seed + 1)
    copies = tracing.ConstantCopies()
    recorded = []
    for step in steps:
        cache = caches[step.sequence]

        left: list[tuple] = []  # the cache each call left: the recorded call's first, then a replay's

        def call(x, cache_k, cache_v, *tensors, cache=cache, start_pos=step.start_pos):
            cache.cache_k, cache.cache_v = cache_k, cache_v
            out = torch.func.functional_call(module, dict(zip(names, tensors)), (x,),
                                             {"cache": cache, "start_pos": start_pos})
            left.append((cache.cache_k, cache.cache_v))
            return [out, cache.cache_k, cache.cache_v, *tensors]

        x = probes._place(torch.randn(batch, step.length, args["dim"], generator=decoys), device)
        shared = sharing_memory([cache.cache_k, cache.cache_v, *state], ["cache_k", "cache_v", *names])
        if shared:  # the parent runs each input on a copy of its own: two that share elements would part there
            recorded.append({"error": {"type": "SharedState", "where": None,
                                       "message": f"{shared[0]} and {shared[1]} share memory"}})
            break
        try:
            with probes._device_guard(device, lines), torch.no_grad():
                # x and the cache are what a replay varies where values left for Python: a write placed by what the
                # cache holds is no graph of start_pos
                recorded.append(graph_probes._recorded(call, [x, cache.cache_k, cache.cache_v, *state], 3, device,
                                                       lines, [], copies))
            cache.cache_k, cache.cache_v = left[0]  # the next step reads what the recorded call left, not a replay's
        except Exception as error:  # the code raised at this step: the steps after it read a cache left unknown
            recorded.append({"error": describe_error(error, lines)})
            break
    return Traced(steps, recorded, names, before, made, device, time.process_time() - started)


def sharing_memory(tensors: list[torch.Tensor], names: list[str]) -> tuple[str, str] | None:
    """Two of a step's state tensors that share an element of memory (the same tensor twice, or views that
    overlap), by name; None where none do. Views of one storage that share no element (keys and values as the two
    halves of one buffer) are apart: each element is counted where it lies."""
    by_storage: dict[int, list[int]] = {}
    for position, tensor in enumerate(tensors):
        by_storage.setdefault(tensor.untyped_storage()._cdata, []).append(position)  # meta has no data_ptr
    for positions in by_storage.values():
        if len(positions) < 2:
            continue
        storage = tensors[positions[0]].untyped_storage()
        owner = torch.full((storage.nbytes(),), -1, dtype=torch.int64)
        for position in positions:
            tensor = tensors[position]
            size = tensor.element_size()
            start = tensor.storage_offset() * size
            as_bytes = owner.as_strided((*tensor.shape, size), (*(s * size for s in tensor.stride()), 1), start)
            taken = as_bytes[as_bytes >= 0]
            if taken.numel():
                return names[int(taken[0])], names[position]
            as_bytes.fill_(position)
    return None


class ChainBroken(Exception):
    """A step raised (in the worker or on the parent's inputs), or gave back state of another shape or dtype than
    it was given."""


def chain(traced: Traced, xs: list[torch.Tensor], weights: dict[str, torch.Tensor],
          thread_module_state: bool = True) -> tuple[list[torch.Tensor], list[str], float]:
    """Each step's output on the parent's `xs` and `weights` ("wq.weight", ...), the devices the last step's outputs
    have in the graph, and the CPU seconds taken. Without
    `thread_module_state`, every step starts from the module's state before the first (a chain that threads the
    caches alone, shown to be fooled by a buffer the code writes)."""
    started = time.process_time()
    initial = [weights.get(name, value) for name, value in zip(traced.names, traced.state)]
    state = list(initial)
    caches = {n: list(pair) for n, pair in traced.caches.items()}
    findings = answers.Findings()
    outs, devices = [], []
    if len(traced.recorded) != len(traced.steps):
        raise ChainBroken(f"step {traced.steps[len(traced.recorded) - 1]}: {traced.recorded[-1]['error']['message']}")
    for step, recorded, x in zip(traced.steps, traced.recorded, xs):
        given = [*caches[step.sequence], *state]
        outputs, devices, error = answers.evaluate(recorded, [x, *given], findings, device=traced.device)
        if error is not None:
            raise ChainBroken(f"step {step}: {error['type']}: {error['message']}")
        if len(outputs) != 1 + len(given) or any(
                not isinstance(o, torch.Tensor) or o.shape != g.shape or o.dtype != g.dtype
                for o, g in zip(outputs[1:], given)):
            raise ChainBroken(f"step {step}: the state out is not the state in")
        caches[step.sequence] = outputs[1:3]
        state = outputs[3:] if thread_module_state else list(initial)
        outs.append(outputs[0])
    return outs, devices, time.process_time() - started
