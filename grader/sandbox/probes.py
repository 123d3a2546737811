"""Probes: run the student's code on inputs chosen by the parent and report what happened.

Runs inside the sandbox worker. A probe returns only data (plain CPU tensors, numbers,
strings, lists, dicts); it never judges. Each probe takes the student's namespace and source
lines first, then the fields of its request (`requests`), validated in the parent.
"""
from __future__ import annotations

import contextlib
import dataclasses
import inspect
import traceback

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from grader.assignment import DROPOUTS, MODEL_ARGS, MODEL_ARGS_TYPES, PROJECTIONS
from grader.sandbox.guard import STAND_IN_DEVICE

SUBMISSION_FILE = "<submission>"

# The grader's own copy of the notebook's ModelArgs, for a submission whose own one is missing or
# does not carry the interface fields faithfully.
ModelArgs = dataclasses.make_dataclass(
    "ModelArgs", [(name, {"int": int, "float": float}[MODEL_ARGS_TYPES[name]], dataclasses.field(default=value))
                  for name, value in MODEL_ARGS.items()])


def describe_error(error: BaseException, source_lines: list[str]) -> dict:
    """An exception as data: type, message, and the innermost line of student code involved."""
    try:
        message = str(error)
    except Exception:  # a hostile __str__
        message = "<unprintable>"
    frames = traceback.extract_tb(error.__traceback__)
    student = [f for f in frames if f.filename == SUBMISSION_FILE]
    where = None
    if student:
        line = student[-1].lineno or 0
        text = source_lines[line - 1].strip() if 0 < line <= len(source_lines) else ""
        where = {"line": line, "text": text, "function": student[-1].name}
    if isinstance(error, SyntaxError) and error.filename == SUBMISSION_FILE:
        where = {"line": error.lineno or 0, "text": (error.text or "").strip(), "function": "<module>"}
    if where:  # every string stays far below what the parent accepts in an answer (answers.MAX_STRING)
        where.update(text=where["text"][:1000], function=str(where["function"])[:200])
    return {"type": type(error).__name__[:200], "message": message[:4000], "where": where}


class OpCounter(TorchDispatchMode):
    """Counts the aten operators dispatched: a Python loop over heads or positions multiplies them."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0
        self.names: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += 1
        self.names.add(str(func.overloadpacket.__name__))
        return func(*args, **(kwargs or {}))


CPU_OPERAND_SHAPES = "shapes of the cpu operands:"
"""Said in the guard's message: which tensor strayed tells a CPU mask from a CPU constant (grader/diagnosis.py)."""


class DeviceMixGuard(TorchDispatchMode):
    """On the meta stand-in for a GPU, what a GPU refuses: an op that mixes a meta tensor with a CPU
    tensor of one or more dims. Meta kernels let some of these through (an in-place `scores += bias`
    with a CPU bias); a GPU raises on every one. CPU scalars (0-dim) mix legitimately, and copies and
    indexing take operands on another device by design."""

    ALLOWED = {"copy_", "_to_copy", "to", "_copy_from", "copy", "index", "index_put_", "index_put",
               "_index_put_impl_", "lift_fresh", "detach", "clone"}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if str(func.overloadpacket.__name__) not in self.ALLOWED:
            tensors = [a for a in (*args, *kwargs.values()) if isinstance(a, torch.Tensor)]
            tensors += [t for a in args if isinstance(a, (list, tuple)) for t in a if isinstance(t, torch.Tensor)]
            strays = [t for t in tensors if t.device.type == "cpu" and t.dim() > 0]
            if strays and any(t.device.type == "meta" for t in tensors):
                shapes = ", ".join(str(list(t.shape)) for t in strays[:4])
                raise RuntimeError("Expected all tensors to be on the same device, but found at least two "
                                   f"devices, meta and cpu! (in {func.overloadpacket.__name__}; "
                                   f"{CPU_OPERAND_SHAPES} {shapes})")
        return func(*args, **kwargs)


class StandInAsAGpu(TorchFunctionMode):
    """On the meta stand-in, what student code can read of a tensor says GPU (grader/sandbox/guard.py answers
    `.device` with STAND_IN_DEVICE): that device object, passed back to torch, means meta; a meta tensor's repr,
    str and format show zeros on cuda:0, as a GPU's tensor would show values. Code that special-cases the
    stand-in (`"meta" in str(Q.device)`, in `repr(Q)`, in an f-string) takes the GPU's path, and is graded on it."""

    TEXT = {torch.Tensor.__repr__, torch.Tensor.__format__}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        format_spec = args[1] if len(args) > 1 else ""  # a spec (f"{t:.3f}") formats values: torch's own path
        if func in self.TEXT and args and isinstance(args[0], torch.Tensor) and args[0].is_meta and not format_spec:
            return _as_on_a_gpu(args[0])
        args = tuple(_meta_for_stand_in(a) for a in args)
        kwargs = {k: _meta_for_stand_in(v) for k, v in kwargs.items()}
        return func(*args, **kwargs)


def _meta_for_stand_in(value):
    return torch.device("meta") if value is STAND_IN_DEVICE else value


def _as_on_a_gpu(tensor: torch.Tensor) -> str:
    """repr() of a tensor of zeros with the meta tensor's shape, dtype and grad state, on cuda:0."""
    zeros = torch.zeros(tensor.shape, dtype=tensor.dtype).requires_grad_(tensor.requires_grad and tensor.is_leaf
                                                                          and tensor.dtype.is_floating_point)
    text = torch.Tensor.__repr__(zeros)
    if tensor.grad_fn is not None:
        text = f"{text[:-1]}, grad_fn=<{type(tensor.grad_fn).__name__}>)"
    cut = min([text.find(key) for key in (", dtype=", ", requires_grad=", ", grad_fn=") if key in text] or [len(text) - 1])
    return f"{text[:cut]}, device='cuda:0'{text[cut:]}"


@contextlib.contextmanager
def _device_guard(device: str):
    if device != "meta":
        yield
        return
    with DeviceMixGuard(), StandInAsAGpu():
        yield


def _plain(tensor) -> dict:
    """A returned tensor as data, or a description of what it was instead."""
    if not isinstance(tensor, torch.Tensor):
        return {"kind": type(tensor).__name__}
    info = {"kind": "tensor", "shape": list(tensor.shape), "dtype": str(tensor.dtype).replace("torch.", ""),
            "device": tensor.device.type, "requires_grad": bool(tensor.requires_grad),
            "subclass": type(tensor) not in (torch.Tensor, torch.nn.Parameter)}
    if tensor.device.type != "meta":
        plain = tensor.detach().to("cpu")
        info["value"] = torch.Tensor.as_subclass(plain, torch.Tensor).clone()
    return info


def _structure(result) -> dict:
    if isinstance(result, (tuple, list)):  # a namedtuple is a tuple
        return {"kind": "tuple" if isinstance(result, tuple) else "list", "length": len(result)}
    return {"kind": type(result).__name__ if not isinstance(result, torch.Tensor) else "tensor", "length": None}


def _place(tensor: torch.Tensor, device: str, requires_grad: bool = False) -> torch.Tensor:
    """A fresh leaf with the parent's values; on meta only the shape and dtype exist.

    The meta device stands in for a GPU on CPU-only machines: it raises on any mix with CPU
    tensors, which is exactly what a mask made without device= does on a GPU. (FakeTensorMode
    could fake "cuda" too, but it imports torch._dynamo, seconds per grading run, and adds
    nothing: a hard-coded "cuda" already fails the plain CPU run on such a machine.)
    """
    if device == "meta":
        placed = torch.empty(tensor.shape, dtype=tensor.dtype, device="meta")
    else:
        placed = tensor.to(device, copy=True)
    return placed.requires_grad_(requires_grad)


def _graded(namespace: dict, name: str):
    if name not in namespace:
        raise NameError(f"name '{name}' is not defined")
    return namespace[name]


def sdpa(namespace, lines, *, Q, K, V, is_causal=None, device="cpu", grad=False, cotangent=None,
         count_ops=False, gradcheck=False, transpose_inputs=False) -> dict:
    """Call scaled_dot_product_attention once; report the result (and gradients, op counts)."""
    function = _graded(namespace, "scaled_dot_product_attention")
    kwargs = {} if is_causal is None else {"is_causal": is_causal}
    answer: dict = {}
    try:
        inputs = [_place(t, device, grad) for t in (Q, K, V)]
        if transpose_inputs:  # non-contiguous views with the same values
            inputs = [t.transpose(-1, -2).contiguous().transpose(-1, -2) for t in inputs]
        counter = OpCounter() if count_ops else contextlib.nullcontext()
        with counter, _device_guard(device):
            result = function(*inputs, **kwargs)
        if count_ops:
            answer["ops"] = counter.count
            answer["op_names"] = sorted(counter.names)
        answer["structure"] = _structure(result)
        if not (isinstance(result, (tuple, list)) and len(result) == 2):
            return answer
        out, weights = result
        answer["out"], answer["weights"] = _plain(out), _plain(weights)
        if grad and isinstance(out, torch.Tensor):
            if not out.requires_grad:
                answer["grads"] = None
            else:
                grads = torch.autograd.grad(out, inputs, cotangent.to(out.device), allow_unused=True)
                answer["grads"] = [None if g is None else _plain(g) for g in grads]
    except BaseException as error:
        answer["error"] = describe_error(error, lines)
        return answer
    if gradcheck:
        answer["gradcheck"] = _gradcheck(lambda q, k, v: function(q, k, v, **kwargs)[0], (Q, K, V), lines)
    return answer


def _gradcheck(function, inputs, lines) -> dict:
    """torch.autograd.gradcheck in float64, with a step and tolerance that a float32 softmax upcast passes."""
    leaves = tuple(t.detach().double().requires_grad_(True) for t in inputs)
    try:
        ok = torch.autograd.gradcheck(function, leaves, eps=1e-3, atol=1e-3, rtol=1e-2, fast_mode=True,
                                      raise_exception=True)
        return {"passed": bool(ok)}
    except BaseException as error:
        return {"passed": False, "error": describe_error(error, lines)}


def _model_args(namespace: dict, fields: dict):
    """The student's ModelArgs when it carries the interface fields faithfully, else the grader's."""
    student_class = namespace.get("ModelArgs")
    if isinstance(student_class, type):
        try:
            args = student_class(**fields)
            if all(getattr(args, key) == value for key, value in fields.items()):
                return args
        except Exception:
            pass
    return ModelArgs(**fields)


def _seed(seed: int) -> None:
    """What `torch.manual_seed` does for the draws a probe makes, at a fraction of its cost: where CUDA (or
    XPU, MTIA) is not initialised, torch.manual_seed queues a lazy seeding for each and formats the
    caller's stack three times, reading source files, about a sixth of a worker's time. The probes
    draw from the CPU generator, and from CUDA's only after it is initialised, when this seeds it too."""
    torch.default_generator.manual_seed(seed)
    if torch.cuda.is_initialized():
        torch.cuda.manual_seed_all(seed)


def _build(namespace, args: dict, is_causal, weights, seed: int):
    cls = _graded(namespace, "MultiHeadAttention")
    _seed(seed)
    kwargs = {} if is_causal is None else {"is_causal": is_causal}
    module = cls(_model_args(namespace, args), **kwargs)
    if weights:
        with torch.no_grad():
            for name, value in weights.items():
                layer = getattr(module, name)
                if tuple(layer.weight.shape) != tuple(value.shape):
                    raise ValueError(f"{name}.weight has shape {tuple(layer.weight.shape)}, expected {tuple(value.shape)}")
                layer.weight.copy_(value)
    return module, kwargs, cls


def mha(namespace, lines, *, args, calls, is_causal=None, weights=None, seed=0, device="cpu", dtype=None,
        grad=False, cotangent=None, roundtrip=False, count_ops=False, dropout_p=None) -> dict:
    """Build MultiHeadAttention, optionally round-trip its state_dict and move it, then run calls.

    Each call is {"q","k","v", "mode": "eval"|"train", "seed"}; each gets its own result or error.
    """
    answer: dict = {"calls": []}
    try:
        module, kwargs, cls = _build(namespace, args, is_causal, weights, seed)
        if roundtrip:
            state = module.state_dict()
            _seed(seed + 1)
            fresh = cls(_model_args(namespace, args), **kwargs)
            fresh.load_state_dict(state)
            module = fresh
            answer["state_keys"] = sorted(state.keys())
        for name, p in (dropout_p or {}).items():  # the interface's nn.Dropout layers, set one by one
            getattr(module, name).p = p
        if dtype is not None:
            module = module.to(getattr(torch, dtype))
        if device != "cpu":
            module = module.to(device)
    except BaseException as error:
        answer["error"] = describe_error(error, lines)
        return answer
    for call in calls:
        result: dict = {}
        try:
            module.train(call.get("mode", "eval") == "train")
            _seed(call.get("seed", 0))
            inputs = [_place(call[name], device, grad) for name in ("q", "k", "v")]
            counter = OpCounter() if count_ops else contextlib.nullcontext()
            with counter, _device_guard(device):
                out = module(*inputs)
            if count_ops:
                result["ops"] = counter.count
                result["op_names"] = sorted(counter.names)
            result["out"] = _plain(out)
            if grad and isinstance(out, torch.Tensor):
                module.zero_grad(set_to_none=True)
                if out.requires_grad:
                    grads = torch.autograd.grad(out, inputs, cotangent.to(out.device), allow_unused=True,
                                                retain_graph=True)
                    result["grads"] = [None if g is None else _plain(g) for g in grads]
                    out.backward(cotangent.to(out.device))
                    result["param_grads"] = {
                        name: (None if getattr(module, name).weight.grad is None
                               else _plain(getattr(module, name).weight.grad))
                        for name in PROJECTIONS}
                else:
                    result["grads"] = None
        except BaseException as error:
            result["error"] = describe_error(error, lines)
        answer["calls"].append(result)
    return answer


def mha_interface(namespace, lines, *, args, is_causal=None) -> dict:
    """What the constructed module looks like: layers, dropouts, buffers, plain tensor attributes."""
    try:
        module, _, _ = _build(namespace, args, is_causal, None, 0)
    except BaseException as error:
        return {"error": describe_error(error, lines)}
    layers = {}
    for name in (*PROJECTIONS, *DROPOUTS):
        layer = getattr(module, name, None)
        info = {"type": type(layer).__name__, "module": isinstance(layer, torch.nn.Module)}
        if isinstance(layer, torch.nn.Linear):
            info.update(in_features=layer.in_features, out_features=layer.out_features, bias=layer.bias is not None)
        if isinstance(layer, torch.nn.Dropout):
            info["p"] = float(layer.p)
        layers[name] = info
    persistent = set(module.state_dict().keys())
    buffers = [{"name": n, "shape": list(b.shape), "persistent": n in persistent} for n, b in module.named_buffers()]
    plain_tensors = sorted(n for n, v in vars(module).items() if isinstance(v, torch.Tensor))
    submodules = sorted({type(m).__name__ for m in module.modules()})
    return {"layers": layers, "buffers": buffers, "plain_tensor_attributes": plain_tensors, "submodules": submodules}


PROBES = {"sdpa": sdpa, "mha": mha, "mha_interface": mha_interface}


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


def warm_up() -> None:
    """Run the meta ops the device probes use once, so their lazy imports (sympy, decompositions)
    happen in the fork server before any worker is forked, not in every worker."""
    x = torch.empty(2, 2, device="meta")
    mask = torch.ones(2, 2, dtype=torch.bool, device="meta").triu(1)
    (x @ x.transpose(-2, -1) / 2).masked_fill(mask, float("-inf")).softmax(-1)
    torch.nn.functional.linear(x, x).view(1, 2, 2).transpose(0, 1).contiguous()
