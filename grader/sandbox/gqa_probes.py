"""The kv_cache lab's GroupedQueryAttention as a graph: built from the request's arguments, `forward(x)` recorded
once without a cache (the whole prompt's causal pass), its parameters and buffers inputs of the graph
(`torch.func.functional_call`), so the parent runs it with weights of its own (grader/graph/gqa_answers.py).

Runs inside the sandbox worker, on decoys, as `graph_probes.mha` does for the first exercise's module: a graph's
inputs are x, then each parameter and buffer, then the cotangent when gradients are asked for; its outputs are the
call's tensors, then with gradients d(out)/d(x and each parameter) (None where unused).
"""
from __future__ import annotations

import types

import torch

from grader.exercises import of_part
from grader.exercises.kv_cache import MODEL_ARGS_CLASS
from grader.sandbox import probes, tracing
from grader.sandbox.probes import _device_guard, _graded, _moved_after_its_values, _place, _seed, describe_error
from grader.sandbox.requests import Probe

GRADED_NAME = of_part(Probe.GQA.part).part[Probe.GQA.part].graded_name


def model_args(namespace: dict, fields: dict):
    """The student's ModelArgs when it carries the fields faithfully, else a plain record of them."""
    return probes._model_args(namespace, fields, MODEL_ARGS_CLASS, types.SimpleNamespace)


def gqa(namespace, lines, *, args, x, weights=None, seed=0, device="cpu", grad=False, cotangent=None,
        regime=None) -> dict:
    """Build the module (seeded), move it to `device`, and trace `forward(x)` with its state as graph inputs. The
    values of the projections the request gives (`weights`) are not sent back: the parent has its own."""
    recording = graph_probes  # the recorder the other graphed probes share
    try:
        with probes.answered_world(device, lines) as cuda:
            _seed(seed)
            module = _graded(namespace, GRADED_NAME)(model_args(namespace, args))
            made = probes.used_before_the_move(module, x) if device != "cpu" else []
        built_asking = cuda.asked if cuda is not None else None
        module, named, before = _moved_after_its_values(module, device)
    except BaseException as error:
        return {"error": describe_error(error, lines)}
    names = [name for name, _ in named]
    values = [before[name] if name in before else tracing.value_for_the_parent(t) for name, t in named]
    given = {f"{layer}.weight" for layer in weights or {}}
    n_parameters = len(list(module.parameters()))
    sent = [recording.NOT_SENT if name in given else value for name, value in zip(names, values)]
    answer = {"state": {"names": names, "parameters": n_parameters, "values": sent,
                        "meta": [tracing._meta_of(t) for _, t in named]},
              # tensors kept as plain attributes, which .to(device) leaves behind (a mask that is no buffer)
              "plain_tensor_attributes": [name for name in probes.plain_tensor_attributes(module) if name not in made],
              "made_by_a_call": made}
    seen: dict = {}
    try:
        regime = recording.regime_on(regime, grad, device)
        module.train(regime == "training")
        inputs = recording.in_regime([_place(x, device)], regime)
        # the parameters need grad in every regime, as a model's do; the stand-in's FakeTensors compute no gradients
        state = [t.detach().requires_grad_(position < n_parameters and device != "fake-cuda" and t.is_floating_point())
                 for position, (_, t) in enumerate(named)]
        extra = [_place(cotangent, device)] if grad else []

        def forward(x, *tensors):
            return torch.func.functional_call(module, dict(zip(names, tensors)), (x,))

        with _device_guard(device, lines) as cuda, torch.set_grad_enabled(regime == "training"):
            recorded = recording._recorded(recording._joint(forward, 1 + n_parameters, grad, seen),
                                           inputs + state + extra, 1, device, lines,
                                           [x, *values, *([cotangent] if grad else [])])
        recording._note_unanswered(recorded, cuda, built_asking)
    except BaseException as error:
        return {**answer, "error": describe_error(error, lines), **recording._facts(seen)}
    return {**answer, **recorded, **recording._facts(seen)}


# last: graph_probes lists this module's probe in its PROBES, so either module may be imported first
from grader.sandbox import graph_probes  # noqa: E402
