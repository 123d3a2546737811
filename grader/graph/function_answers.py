"""A graded function's answer (`graph_probes.function_call`: `repeat_kv(x, n_rep)`) from its graph, with every value
computed here on the request's own tensors, as `answers` does for the first exercise's probes."""
from __future__ import annotations

import torch

from grader.graph.answers import (Findings, _facts, _grads, _known_on_the_stand_in, _placed, _to, described, evaluate,
                                  ops_counted)
from grader.graph.devices import STAND_INS


def function_call(traced: dict, fields: dict, findings: Findings) -> dict:
    """A graded function's answer from its graph (`graph_probes.function_call`): `outputs`, each returned value
    described (a tensor's value computed here, on the request's own tensors), and with `grad` `grads`, d(the first
    output)/d(each tensor argument) from the joint graph."""
    answer = {"structure": traced.get("structure") if isinstance(traced.get("structure"), dict) else {}}
    inputs = _placed([a for a in fields["arguments"] if isinstance(a, torch.Tensor)], fields["device"], fields["layout"])
    extra = [_to(fields["cotangent"], fields["device"])] if fields["grad"] else []
    if fields["count_ops"] and "error" not in traced:
        answer["ops"], answer["op_names"] = ops_counted(traced, findings)
    outputs, devices, error = evaluate(traced, inputs + extra, findings, device=fields["device"])
    if error:
        answer["error"] = error
        return answer
    facts = [fact if isinstance(fact, dict) else {} for fact in _facts(traced)]
    if not facts or any(fact.get("kind") != "tensor" for fact in facts) or len(outputs) < len(facts):
        answer["outputs"] = [{"kind": str(fact.get("kind", "none"))[:200]} for fact in facts]  # named by what it was
        return answer
    known = fields["device"] not in STAND_INS or _known_on_the_stand_in(traced, fields["device"])
    answer["outputs"] = [described(outputs[i], facts[i], devices[i], known) for i in range(len(facts))]
    if fields["grad"]:
        answer["grads"] = _grads(traced, outputs[len(facts):], len(inputs))
    return answer
