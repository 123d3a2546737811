"""The decode probe's answer (grader/sandbox/decode_probes.py) from its graphs: the steps chained on the parent's own
x's and weights, each cache from the zeros the interface promises, every value computed here.

Each step's graph takes x, its sequence's cache_k and cache_v, then the module's parameters and buffers, and gives
back the output, then that state after the call: the caches go on to the next step of their sequence, the module's
state to the next step of any sequence (one module decodes them all, as the worker's did). A step that gives back
state of another shape or dtype than it was given breaks the chain there.
"""
from __future__ import annotations

import torch

from grader.graph import decode
from grader.graph.answers import Findings, _error, _to, evaluate, ops_counted


def decode_steps(traced: dict, fields: dict, findings: Findings) -> dict:
    """{"steps": [{"out": the step's output, "device": where the graph left it, with count_ops "ops"} or {"error"},
    per step run], "error"?}: the chain stops at a step that fails (in the worker or here) and says why there. On a
    stand-in the values are the CPU's and devices are followed (`answers.evaluate`)."""
    if "error" in traced:
        return {"error": traced["error"], "steps": []}
    state = _state(traced.get("state"), fields["weights"])
    if isinstance(state, dict):
        return {"error": state, "steps": []}
    args, device = fields["args"], fields["device"]
    shape = (args["max_batch_size"], args["n_kv_heads"], args["max_seq_len"], args["dim"] // args["n_heads"])
    caches = {sequence: [_to(torch.zeros(shape), device), _to(torch.zeros(shape), device)]
              for sequence, _, _ in fields["steps"]}
    state = [_to(tensor, device) for tensor in state]
    recorded = traced.get("steps") if isinstance(traced.get("steps"), list) else []
    steps = []
    for (sequence, _, _), x, step in zip(fields["steps"], fields["xs"], recorded):
        given = [*caches[sequence], *state]
        outputs, devices, error = evaluate(step if isinstance(step, dict) else {}, [_to(x, device), *given], findings,
                                           device=device)
        if error is None and (len(outputs) != 1 + len(given) or any(
                not isinstance(o, torch.Tensor) or o.shape != g.shape or o.dtype != g.dtype
                for o, g in zip(outputs[1:], given))):
            error = _error("StateChanged", "the step gave back a cache or module state of another shape or dtype "
                                           "than it was given")
        if error is not None:
            steps.append({"error": error})
            break
        caches[sequence], state = outputs[1:3], outputs[3:]
        out = outputs[0].cpu() if isinstance(outputs[0], torch.Tensor) else outputs[0]  # a GPU's, as the CPU's are read
        steps.append({"out": out, "device": devices[0],
                      **({"ops": ops_counted(step, findings)[0]} if fields["count_ops"] else {})})
    if len(steps) < len(fields["steps"]) and not (steps and "error" in steps[-1]):
        steps.append({"error": _error("Unanswered", "the worker answered fewer steps than it was asked")})
    return {"steps": steps}


def _state(state, weights: dict) -> list[torch.Tensor] | dict:
    """The module's parameters and buffers as the first step takes them: the parent's weights by name (`wq.weight`
    ...), each the interface's shape; the module's own values elsewhere (a mask buffer). An error where a weight is
    missing or of another shape, or the description is not one the worker writes."""
    if not (isinstance(state, dict) and all(isinstance(state.get(key), list) for key in ("names", "values", "meta"))
            and len(state["names"]) == len(state["values"]) == len(state["meta"])):
        return _error("GraphRefused", "the module's parameters were described wrongly")
    tensors = []
    wanted = {f"{layer}.weight": weight for layer, weight in weights.items()}
    for name, value, meta in zip(state["names"], state["values"], state["meta"]):
        if not (type(name) is str and isinstance(value, torch.Tensor) and isinstance(meta, dict)
                and isinstance(meta.get("shape"), list) and meta.get("dtype") in decode.DTYPES):
            return _error("GraphRefused", "the module's parameters were described wrongly")
        if name in wanted:
            if meta["shape"] != list(wanted[name].shape):
                return _error("InterfaceMismatch", f"the module's {name} is {tuple(meta['shape'])}, the interface's "
                                                   f"{tuple(wanted[name].shape)} (bias-free nn.Linear sized by "
                                                   f"n_heads, n_kv_heads and head_dim)")
            value = wanted[name]
        elif list(value.shape) != meta["shape"]:
            return _error("GraphRefused", "the module's parameters were described wrongly")
        tensors.append(value.to(getattr(torch, meta["dtype"])))
    missing = sorted(set(wanted) - set(state["names"]))
    if missing:
        return _error("InterfaceMismatch", f"the module has no {', '.join(missing)} (the interface: bias-free "
                                           f"nn.Linear layers {', '.join(weights)})")
    return tensors
