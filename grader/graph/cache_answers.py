"""The KVCache probe's answer (`sandbox/cache_probes.cache`) from its graphs, every value computed here: the
constructor's graph run first (the cache starts from the zeros it gives on this side, never from a worker's value),
then each step's `update` graph on the request's own k and v, the buffers it leaves fed to the next step.

Each step's answer holds what update returned (keys, values), the buffers after it (the whole of cache_k, cache_v),
and whether the buffers after are the buffers that came in, written in place (the graph's outputs are its inputs'
own nodes), or new tensors that took their place.
"""
from __future__ import annotations

import torch

from grader.exercises.kv_cache import CACHE_BUFFERS
from grader.graph.answers import Findings, _error, _graph, _to, described, evaluate, ops_counted
from grader.graph.decode import GraphRefused, Ref
from grader.graph.devices import STAND_INS
from grader.graph.shared_memory import sharing_memory


def shared_memory_error(shared: tuple[str, str]) -> dict:
    """The refusal of a cache whose buffers share memory, said for the student (failed_with_error quotes it)."""
    one, other = shared
    return {"type": "SharedCacheMemory", "where": None, "message": (
        f"KVCache.{one} and KVCache.{other} share memory (one tensor, or overlapping views of one): writing the keys "
        f"overwrites the values. Give each buffer its own zeros (two torch.zeros calls, or zeros.clone())")}


def _returns_a_pair(recorded: dict) -> bool:
    """What the worker says update returned: two tensors (then the graph's outputs start with them)."""
    facts = recorded.get("outputs")
    return (isinstance(recorded.get("structure"), dict) and recorded["structure"].get("kind") in ("tuple", "list")
            and isinstance(facts, list) and len(facts) == 2
            and all(isinstance(fact, dict) and fact.get("kind") == "tensor" for fact in facts))


NOT_A_WRITE = {"set_", "resize_", "resize_as_", "as_strided_", "squeeze_", "unsqueeze_", "transpose_", "t_", "swapaxes_",
               "swapdims_", "detach_"}
"""In-place operators that write no values into the buffer: `set_` hands it another storage (a new allocation each step,
as torch.cat's), the others change its size or view."""


def _written_in_place(recorded: dict, findings: Findings) -> bool:
    """Whether the graph's last two outputs are its first two inputs (cache_k, cache_v), written where they lie: each
    the input's own node, or an operator in place on it (`index_copy_`, `copy_` on the whole buffer), which returns
    the tensor it wrote into."""
    graph = _graph(recorded, findings)
    last = list(graph.nodes[-1].args[-2:])

    def written_input(ref) -> int | None:
        for _ in range(len(graph.nodes)):
            if type(ref) is not Ref:
                return None
            node = graph.nodes[ref.node]
            if node.kind == "input":
                return node.index
            in_place = node.kind == "call" and node.target.count(".") == 2 and node.target.split(".")[1].endswith("_") \
                and node.target.split(".")[1] not in NOT_A_WRITE
            if not (in_place and node.args):
                return None
            ref = node.args[0]
        return None

    return len(last) == 2 and [written_input(ref) for ref in last] == [0, 1]


def cache(traced: dict, fields: dict, findings: Findings) -> dict:
    """{"buffers": the constructor's cache_k and cache_v described, "steps": per step its answer} or, where the
    constructor failed, {"error"}. A step's answer: "keys", "values" (what update returned, where it returned two
    tensors; else "returned", the kind it returned), "cache_k", "cache_v" (the whole buffers after it), "in_place",
    and with count_ops "ops"; or {"error"}, which ends the steps."""
    device = fields["device"]
    known = device not in STAND_INS  # on a stand-in only devices are read
    calls = traced.get("calls") if isinstance(traced.get("calls"), list) else []
    if "error" in traced or not calls or not isinstance(calls[0], dict):
        return {"error": traced.get("error") or _error("GraphRefused", "an answer without the constructor's graph")}
    outputs, devices, error = evaluate(calls[0], [], findings, device=device)
    if error:
        return {"error": error}
    if len(outputs) != 2 or not all(isinstance(t, torch.Tensor) for t in outputs):
        findings.refused.append("the constructor's graph gives other than two buffers")
        return {"error": _error("GraphRefused", "the constructor's graph gives other than two buffers")}
    answer: dict = {"buffers": [described(t, {}, where, known) for t, where in zip(outputs, devices)], "steps": []}
    shared = sharing_memory(outputs, CACHE_BUFFERS)
    if shared:
        answer["error"] = shared_memory_error(shared)
        return answer
    state = list(outputs)
    for step, recorded in zip(fields["steps"], calls[1:]):
        answer["steps"].append(_step(recorded if isinstance(recorded, dict) else {}, step, state, device, known,
                                     fields["count_ops"], findings))
        if "error" in answer["steps"][-1]:
            break
        state = answer["steps"][-1].pop("state")
    return answer


def _step(recorded: dict, step: dict, state: list, device: str, known: bool, count_ops: bool,
          findings: Findings) -> dict:
    result: dict = {}
    if count_ops and "error" not in recorded:
        result["ops"], _ = ops_counted(recorded, findings)
    outputs, devices, error = evaluate(recorded, [*state, _to(step["k"], device), _to(step["v"], device)], findings,
                                       device=device)
    if error:
        return {**result, "error": error}
    pair = _returns_a_pair(recorded)
    if len(outputs) != (4 if pair else 2) or not all(isinstance(t, torch.Tensor) for t in outputs):
        findings.refused.append("an update graph whose outputs are not what update returned and the buffers")
        return {**result, "error": _error("GraphRefused", "an update graph whose outputs are not what update returned "
                                                          "and the buffers")}
    after = outputs[-2:]
    changed = [name for name, new, old in zip(CACHE_BUFFERS, after, state)
               if new.shape != old.shape or new.dtype != old.dtype]
    if changed:
        return {**result, "error": _error("CacheBuffersChanged", (
            f"after update(start_pos={step['start_pos']}, ...) KVCache.{' and KVCache.'.join(changed)} no longer "
            f"{'has' if len(changed) == 1 else 'have'} the shape and dtype the constructor gave: the cache is "
            f"preallocated once, at (max_batch_size, n_kv_heads, max_seq_len, head_dim)"))}
    shared = sharing_memory(after, CACHE_BUFFERS)
    if shared:
        return {**result, "error": shared_memory_error(shared)}
    try:
        result["in_place"] = _written_in_place(recorded, findings)
    except GraphRefused as refused:
        return {**result, "error": _error("GraphRefused", str(refused))}
    if pair:
        result["keys"], result["values"] = (described(outputs[i], recorded["outputs"][i], devices[i], known)
                                            for i in (0, 1))
    else:
        result["returned"] = recorded.get("structure") if isinstance(recorded.get("structure"), dict) else {}
    for name, tensor, where in zip(CACHE_BUFFERS, after, devices[-2:]):
        result[name] = described(tensor, {}, where, known)
    result["state"] = after
    return result
