"""The answer of the kv_cache lab's module (`gqa_probes.gqa`) from its graph, every value computed here: the graph run on the
request's own x with the request's weights in place of the module's projections, as `answers.mha` does for the
first exercise's module.

The module's parameter shapes, as the graph's inputs show them, come back as facts (`parameters`): a module whose
wk, wv are sized for n_heads cannot take the promised weights, and the checks name that from these shapes.
"""
from __future__ import annotations

from grader.exercises.kv_cache import PROJECTIONS
from grader.graph.answers import (Findings, _error, _facts, _grads, _known_on_the_stand_in, _state, _to, described,
                                  evaluate, ops_counted)
from grader.graph.decode import GraphRefused
from grader.graph.devices import STAND_INS
from grader.graph.structure import plain_attributes


def parameter_shapes(state) -> dict[str, list[int]]:
    """Each projection's weight shape as the module holds it (the graph's input of that name), where it has one."""
    if not (isinstance(state, dict) and isinstance(state.get("names"), list) and isinstance(state.get("meta"), list)):
        return {}
    shapes = {}
    for name, meta in zip(state["names"], state["meta"]):
        layer = name.removesuffix(".weight") if isinstance(name, str) else None
        if layer in PROJECTIONS and isinstance(meta, dict) and isinstance(meta.get("shape"), list) \
                and len(meta["shape"]) <= 8 and all(type(size) is int for size in meta["shape"]):
            shapes[layer] = meta["shape"]
    return shapes


def gqa(traced: dict, fields: dict, findings: Findings) -> dict:
    """`out` (the forward's output described, its value computed here), `parameters` (the projections' shapes), with
    `grad` `grads` ({"x", "wq", ...}: d(out)/d(each) from the joint graph), with `count_ops` the operator count; or
    `error`, also where the module's projections cannot take the request's weights."""
    answer = {"structure": traced.get("structure") if isinstance(traced.get("structure"), dict) else {},
              "parameters": parameter_shapes(traced.get("state")), "plain_tensor_attributes": plain_attributes(traced),
              "made_by_a_call": plain_attributes(traced, "made_by_a_call")}
    if "error" in traced:
        answer["error"] = traced["error"]
        return answer
    weights = fields.get("weights") or {}
    misfits = {layer: answer["parameters"].get(layer) for layer, weight in weights.items()
               if answer["parameters"].get(layer) != list(weight.shape)}
    if misfits:
        answer["error"] = _error("ParameterShape", "; ".join(f"{layer}.weight is {shape}, expected "
                                                             f"{list(weights[layer].shape)}"
                                                             for layer, shape in misfits.items()))
        return answer
    try:
        state = _state(traced.get("state"), fields)
    except GraphRefused as refused:  # values that did not come, described over the bounds
        findings.refused.append(str(refused))
        state = None
    if state is None:
        answer["error"] = _error("GraphRefused", "the module's parameters were described wrongly")
        return answer
    tensors, names, n_parameters, state_known = state
    device = fields["device"]
    extra = [_to(fields["cotangent"], device)] if fields["grad"] else []
    if fields["count_ops"]:
        answer["ops"], answer["op_names"] = ops_counted(traced, findings)
    outputs, devices, error = evaluate(traced, [_to(fields["x"], device)] + tensors + extra, findings,
                                       device=device)
    if error:
        answer["error"] = error
        return answer
    facts = _facts(traced)
    if answer["structure"].get("kind") != "tensor":  # forward returns one tensor; anything else is named by what it was
        answer["out"] = {"kind": str(answer["structure"].get("kind", "none"))[:200]}
        return answer
    known = device not in STAND_INS or (state_known and _known_on_the_stand_in(traced, device))
    answer["out"] = described(outputs[0] if outputs else None, facts[0] if facts else None,
                              devices[0] if devices else None, known)
    if fields["grad"] and answer["out"].get("kind") == "tensor":
        grads = _grads(traced, outputs[1:], 1 + n_parameters)
        by_name = dict(zip(names, grads[1:])) if grads is not None else {}
        answer["grads"] = None if grads is None else {"x": grads[0], **{layer: by_name.get(f"{layer}.weight")
                                                                         for layer in PROJECTIONS}}
    return answer
