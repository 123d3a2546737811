"""The probes as graphs: call the student's code once under the tracer and send back what it computed.

Runs inside the sandbox worker, on inputs the parent sent as decoys (the shapes and dtypes of its
own inputs, with other values). What comes back is the graph of tensor operations (`tracing`), and
facts about the call that are not values (the returned structure, each output's shape, dtype and
device, whether it needs grad, the module's parameter and buffer names). The parent runs the graph
on its own inputs (`grader/graph/`): every value a check reads is computed there.

A graph's inputs, in order: the probe's tensors (Q, K, V or q, k, v), then for a module each parameter
and buffer (`torch.func.functional_call`), then the cotangent when gradients are asked for. Its outputs:
the call's tensors, then with gradients d(out)/d(each input tensor) (None where unused).
"""
from __future__ import annotations

import contextlib
import functools
import inspect

import torch

from grader.exercises import every_part
from grader.exercises.attention import GRADED_NAME
from grader.graph.devices import STAND_INS
from grader.graph.layouts import laid_out
from grader.sandbox import (cache_probes, decode_probes, fake_gpu, gqa_probes, probes, replay, stand_in_values,
                            tracing, values_leaving)
from grader.sandbox.request_tensors import alike
from grader.sandbox.probes import (SUBMISSION_FILE, _build, _device_guard, _graded, _moved_after_its_values, _place, _seed,
                                   _structure, describe_error)


def _described(tensor) -> dict:
    """What the answer says of a returned value, without its values (those are the parent's to compute)."""
    if not isinstance(tensor, torch.Tensor):
        return {"kind": type(tensor).__name__}
    return {"kind": "tensor", "shape": list(tensor.shape), "dtype": str(tensor.dtype).removeprefix("torch."),
            "device": tensor.device.type, "requires_grad": bool(tensor.requires_grad),
            "subclass": type(tensor) not in (torch.Tensor, torch.nn.Parameter, fake_gpu.FakeTensor)}


def _graph_answer(recorder: tracing.Recorder) -> dict:
    text, constants = tracing.encode(recorder)
    return {"graph": text, "constants": constants}


def _recorded(call, inputs: list, varied: int, device: str, lines: list[str], values: list,
              copies: tracing.ConstantCopies | None = None) -> dict:
    """The graph of `call(*inputs)` as the answer carries it. Where values left for Python during the call
    (`.item()`, `.numpy()`, a branch on a tensor), the graph is replayed on other values of the first `varied`
    inputs beside the call itself: when the two differ, the answer says where the computation left the graph
    (`untraceable`), which the parent reports with the student's line instead of wrong values. On a stand-in,
    `values` are the inputs' values on the CPU: a value the code reads there is the one the graph so far gives on
    them (`stand_in_values`), as a GPU would give it; None where the worker has no value for an input (a read that
    depends on it is not answered)."""
    leaving = values_leaving.ValuesLeaving(SUBMISSION_FILE, lines, stand_in_only=device in STAND_INS)
    answers = None
    if device in STAND_INS and len(values) == len(inputs) and all(
            value is None or isinstance(value, torch.Tensor) and value.shape == tensor.shape
            for value, tensor in zip(values, inputs)):
        unknown = frozenset(n for n, value in enumerate(values) if value is None)
        known = [torch.zeros(tensor.shape, dtype=tensor.dtype) if value is None else value
                 for value, tensor in zip(values, inputs)]  # an unknown input's stand-in value is never read
        answers = stand_in_values.StandInValues(known, STAND_INS[device], unknown)
    # the varied inputs as the call found them, for a replay: the call may write into them (a cache's buffers)
    before = alike(inputs[:varied], lambda t: t.detach().clone()) if device not in STAND_INS else []
    try:
        recorder = tracing.trace(call, inputs, leaving, SUBMISSION_FILE, answers, copies)
    except Exception:
        if leaving.where is not None and device in STAND_INS:  # a stand-in has no values to hand to Python
            return {"untraceable": leaving.where}
        raise
    answer = _graph_answer(recorder)
    if recorder.raised is not None and device in STAND_INS:  # caught by the code: a GPU may not have raised
        line, function = recorder.raised
        text = lines[line - 1].strip() if 0 < line <= len(lines) else ""
        answer["stand_in_raised"] = {"line": line, "text": text[:1000], "function": function[:200]}
    # on the stand-in there are no values to replay on: a graph that used values stands for nothing there
    if leaving.where is not None and (device in STAND_INS or not replay.faithful(answer, call, before + inputs[varied:],
                                                                                 varied)):
        answer["untraceable"] = leaving.where
    return answer


def _joint(call, n_inputs: int, grad: bool, seen: dict):
    """`call` made a function of flat tensors for the tracer: the first `n_inputs` are what gradients are
    taken for; with `grad`, the last is the cotangent. `seen` keeps the facts about the result."""

    def flat(*tensors):
        leaves = list(tensors[:-1] if grad else tensors)
        if grad:
            leaves[:n_inputs] = [t.requires_grad_(True) for t in leaves[:n_inputs]]
        result = call(*leaves)
        outputs = list(result) if isinstance(result, (tuple, list)) else [result]
        seen["structure"] = _structure(result)
        seen["outputs"] = [_described(out) for out in outputs]
        tensors_out = [out for out in outputs if isinstance(out, torch.Tensor)]
        if len(tensors_out) != len(outputs):
            return tensors_out
        if grad and outputs and outputs[0].requires_grad:
            grads = torch.autograd.grad(outputs[0], leaves[:n_inputs], tensors[-1], allow_unused=True)
            seen["grads"] = [g is not None for g in grads]
            return [*tensors_out, *(g for g in grads if g is not None)]
        seen["grads"] = None
        return tensors_out

    return flat


def regime_on(regime: str | None, grad: bool, device: str) -> str:
    """The regime a call runs in: the request's (training with gradients, inference without, where it names none),
    save on the FakeTensor stand-in, which computes no gradients (`fake_gpu`): always inference there, while the meta
    stand-in carries the training regime."""
    if device == "fake-cuda":
        return "inference"
    return regime or ("training" if grad else "inference")


def placed(tensors: list, device: str) -> list:
    return alike(tensors, lambda tensor: _place(tensor, device))


def in_regime(tensors: list, regime: str, layout: str = "contiguous") -> list:
    """The inputs as real use hands them over in `regime` (requests.REGIMES), laid out in `layout`: in training, made
    by an operation from leaves that need grad, as a projection makes them (so neither `requires_grad` nor `is_leaf`
    nor `grad_fn` tells a probe from a training step); in inference, plain. One tensor given twice stays one."""
    if regime == "training":
        tensors = alike(tensors, lambda tensor: tensor.detach().requires_grad_(True).clone())
    # a FakeTensor's copy into a layout goes through the stand-in's own bindings: torch binds `contiguous` by hand
    # with a device guard, which a CPU-only build lacks for "cuda"
    with fake_gpu.active() if any(fake_gpu.is_fake(t) for t in tensors) else contextlib.nullcontext():
        return alike(tensors, lambda tensor: laid_out(tensor, layout))


def sdpa(namespace, lines, *, Q, K, V, is_causal=None, device="cpu", grad=False, cotangent=None,
         layout="contiguous", regime=None) -> dict:
    """Trace scaled_dot_product_attention once on the decoys, in its regime and layout; gradients in the same graph
    when asked."""
    function = _graded(namespace, GRADED_NAME["sdpa"])
    kwargs = {} if is_causal is None else {"is_causal": is_causal}
    seen: dict = {}
    regime = regime_on(regime, grad, device)
    try:
        inputs = in_regime(placed([Q, K, V], device), regime, layout)
        extra = [_place(cotangent, device)] if grad else []
        with _device_guard(device, lines) as cuda, torch.set_grad_enabled(regime == "training"):
            recorded = _recorded(_joint(lambda q, k, v: function(q, k, v, **kwargs), 3, grad, seen), inputs + extra, 3,
                                 device, lines, [Q, K, V, *([cotangent] if grad else [])])
        _note_unanswered(recorded, cuda)
    except BaseException as error:
        return {"error": describe_error(error, lines), **_facts(seen)}
    return {**recorded, **_facts(seen)}


GRADED_NAME_OF_PART = {part.id: part.graded_name for part in every_part()}
"""Every declared part's graded name, read before the worker confines itself."""


def function_call(namespace, lines, *, part, arguments, device="cpu", grad=False, cotangent=None,
                  layout="contiguous", regime=None) -> dict:
    """Trace a part's graded function once on `arguments` (decoy tensors and the request's ints, in order), in its
    regime and layout; with `grad`, the gradients of its first output for every tensor argument in the same graph.
    The graph's inputs are the tensor arguments in order (then the cotangent); the ints are part of the call."""
    function = _graded(namespace, GRADED_NAME_OF_PART[part])
    given = [argument for argument in arguments if isinstance(argument, torch.Tensor)]
    seen: dict = {}
    regime = regime_on(regime, grad, device)

    def call(*tensors):
        supplied = iter(tensors)
        return function(*(next(supplied) if isinstance(argument, torch.Tensor) else argument for argument in arguments))

    try:
        inputs = in_regime(placed(list(given), device), regime, layout)
        extra = [_place(cotangent, device)] if grad else []
        with _device_guard(device, lines) as cuda, torch.set_grad_enabled(regime == "training"):
            recorded = _recorded(_joint(call, len(given), grad, seen), inputs + extra, len(given), device, lines,
                                 [*given, *([cotangent] if grad else [])])
        _note_unanswered(recorded, cuda)
    except BaseException as error:
        return {"error": describe_error(error, lines), **_facts(seen)}
    return {**recorded, **_facts(seen)}


def _note_unanswered(recorded: dict, cuda, earlier: dict | None = None) -> None:
    """Where the code asked torch.cuda what the stand-in cannot answer as a GPU (`stand_in_cuda`), even in a `try`,
    during the call or `earlier` (building the module, loading the file): the parent then judges nothing on this
    stand-in."""
    if cuda is not None and cuda.asked is not None:
        recorded["unanswered"] = cuda.asked
    elif earlier is not None and "graph" in recorded:
        recorded["unanswered"] = earlier


def unanswered_at_load(answer: dict, asked: dict | None) -> None:
    """What loading the file asked torch.cuda that the stand-in cannot answer, on every call it traced."""
    for recorded in [answer, *answer.get("calls", [])]:
        if "unanswered" not in recorded:
            _note_unanswered(recorded, None, asked)


def _facts(seen: dict) -> dict:
    facts = {"structure": seen.get("structure", {"kind": "none", "length": None}), "outputs": seen.get("outputs", [])}
    if "grads" in seen:
        facts["grads_present"] = seen["grads"]
    return facts


def mha(namespace, lines, *, args, calls, is_causal=None, weights=None, seed=0, device="cpu", dtype=None,
        grad=False, cotangent=None, roundtrip=False, dropout_p=None) -> dict:
    """Build MultiHeadAttention as the value probe does, then trace each call with the module's parameters
    and buffers as graph inputs, so the parent runs it with weights of its own."""
    answer: dict = {"calls": []}
    built_asking = None
    try:
        with probes.answered_world(device, lines) as cuda:
            module, kwargs, cls = _build(namespace, args, is_causal, weights, seed)  # decoys: shapes checked as before
            if roundtrip:
                state = module.state_dict()
                _seed(seed + 1)
                fresh = cls(probes._model_args(namespace, args), **kwargs)
                fresh.load_state_dict(state)
                module = fresh
                answer["state_keys"] = sorted(state.keys())
            if device != "cpu" and calls:
                answer["made_by_a_call"] = probes.used_before_the_move(module, *(calls[0][name] for name in "qkv"))
        built_asking = cuda.asked if cuda is not None else None
        for name, p in (dropout_p or {}).items():
            getattr(module, name).p = p
        if dtype is not None:
            module = module.to(getattr(torch, dtype))
        module, named, before = _moved_after_its_values(module, device)
    except BaseException as error:
        answer["error"] = describe_error(error, lines)
        return answer
    names = [name for name, _ in named]
    values = [before[name] if name in before else tracing.value_for_the_parent(t) for name, t in named]
    # the parent runs the graph with its own weights where the request gives them (graph.answers._state): those
    # values are not sent back (about 120 kB an answer); a stand-in's reads below still answer from them here
    given = {f"{layer}.weight" for layer in weights or {}}
    answer["state"] = {"names": names, "parameters": len(list(module.parameters())),
                       "values": [NOT_SENT if name in given else value for name, value in zip(names, values)],
                       "meta": [tracing._meta_of(t) for _, t in named]}
    copies = tracing.ConstantCopies()  # a constant every call reads (a module-level mask) is sent once
    n_parameters = answer["state"]["parameters"]
    for call in calls:
        seen: dict = {}
        try:
            module.train(call.get("mode", "eval") == "train")
            _seed(call.get("seed", 0))
            regime = regime_on(call.get("regime"), grad, device)
            inputs = in_regime(placed([call[name] for name in ("q", "k", "v")], device), regime)
            # the parameters need grad in every regime, as a model's do (under no_grad too); the stand-in's FakeTensors
            # compute no gradients
            state = [t.detach().requires_grad_(position < n_parameters and device != "fake-cuda"
                                               and t.is_floating_point()) for position, (_, t) in enumerate(named)]
            extra = [_place(cotangent, device)] if grad else []

            def forward(q, k, v, *tensors):
                return torch.func.functional_call(module, dict(zip(names, tensors)), (q, k, v))

            n_grad = 3 + n_parameters
            with _device_guard(device, lines) as cuda, torch.set_grad_enabled(regime == "training"):
                values_here = [call[name] for name in ("q", "k", "v")] + values + ([cotangent] if grad else [])
                recorded = _recorded(_joint(forward, n_grad, grad, seen), inputs + state + extra, 3, device, lines,
                                     values_here, copies)
            _note_unanswered(recorded, cuda, built_asking)
            answer["calls"].append({**recorded, **_facts(seen)})
        except BaseException as error:
            answer["calls"].append({"error": describe_error(error, lines), **_facts(seen)})
    return answer


NOT_SENT = torch.empty(0)
"""In place of a value the parent has of its own."""

PROBES = {"sdpa": sdpa, "mha": mha, "mha_interface": probes.mha_interface, "repeat": function_call,
          "gqa_decode": functools.partial(decode_probes.decode, record=_recorded), "cache": cache_probes.cache,
          "gqa": gqa_probes.gqa}


def request_problem(probe: str, fields: dict) -> str | None:
    """Why the probe named `probe` cannot take these request fields, or None when it can. The
    worker answers {"bad_request": ...} with it; the parent, which holds the same probes, runs it
    again to tell a genuine one (its own bug) from one forged by student code."""
    function = PROBES.get(probe) if isinstance(probe, str) else None
    if function is None:
        return f"no probe named {probe!r}"
    try:
        inspect.signature(function).bind(None, None, **fields)
    except TypeError as error:
        return f"the {probe} probe cannot take this request: {error}"
    return None

