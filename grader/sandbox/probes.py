"""Probes: run the student's code on inputs chosen by the parent and report what happened.

Runs inside the sandbox worker. A probe returns only data (plain CPU tensors, numbers,
strings, lists, dicts); it never judges. Each probe takes the student's namespace and source
lines first, then the fields of its request (`requests`), validated in the parent.
"""
from __future__ import annotations

import contextlib
import dataclasses
import traceback

import torch
from torch.overrides import TorchFunctionMode

from grader.exercises.attention import DROPOUTS, GRADED_NAME, MODEL_ARGS, MODEL_ARGS_CLASS, MODEL_ARGS_TYPES, PROJECTIONS
from grader.graph.devices import CPU_BESIDE_A_GPU, STAND_INS, DeviceMixGuard
from grader.sandbox import fake_gpu, stand_in_cuda, tracing
from grader.sandbox.stand_in_devices import STAND_IN_DEVICES

SUBMISSION_FILE = "<submission>"

# The grader's own copy of the notebook's ModelArgs, for a submission whose own one is missing or
# does not carry the interface fields faithfully.
ModelArgs = dataclasses.make_dataclass(
    MODEL_ARGS_CLASS, [(name, {"int": int, "float": float}[MODEL_ARGS_TYPES[name]], dataclasses.field(default=value))
                  for name, value in MODEL_ARGS.items()])


MAX_MESSAGE = 600
"""An error's message as the report carries it: room for any shape or device error torch writes, too little for a
file's contents, should a way to read one ever open (the student's own exception can say anything)."""


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
    return {"type": type(error).__name__[:200], "message": message[:MAX_MESSAGE], "where": where}


class StandInAsAGpu(TorchFunctionMode):
    """On the meta stand-in, what student code can read of a tensor says GPU (grader/sandbox/guard.py answers
    `.device` with a device of `STAND_IN_DEVICES`): that device object, passed back to torch, means meta, and so does
    the GPU that device names, `cuda` or `cuda:0` as text or as a device (`str(Q.device)`, `.cuda()`): on a GPU
    grading the input lives there, so code that names it runs there, and a fixed "cuda" is found on the CPU beside a
    GPU (`CPU_BESIDE_A_GPU`) as on a real one. A meta tensor's repr, str and format show zeros on cuda:0, as a GPU's
    tensor would show values. Code that special-cases the stand-in (`"meta" in str(Q.device)`, in `repr(Q)`, in an
    f-string) takes the GPU's path, and is graded on it. A FakeTensor (the second stand-in) shows the same text, not
    its class name, and takes the GPU's names as they are."""

    TEXT = {torch.Tensor.__repr__, torch.Tensor.__format__}

    def __init__(self, on_meta: bool) -> None:
        super().__init__()
        self.on_meta = on_meta

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        format_spec = args[1] if len(args) > 1 else ""  # a spec (f"{t:.3f}") formats values: torch's own path
        if func in self.TEXT and args and fake_gpu.on_a_stand_in(args[0]) and not format_spec:
            return _as_on_a_gpu(args[0])
        if func is torch.Tensor.type and len(args) == 1 and not kwargs and args[0].is_meta:  # Q.type() names its type
            return GPU_TENSOR_TYPES.get(args[0].dtype, "torch.cuda.FloatTensor")
        if self.on_meta:
            func, args, kwargs = _on_meta_as_on_the_gpu(func, args, kwargs)
        return func(*args, **kwargs)


META = torch.device("meta")
MASKED_FILLS = {torch.Tensor.masked_fill, torch.Tensor.masked_fill_, torch.masked_fill}


def _on_meta_as_on_the_gpu(func, args: tuple, kwargs: dict) -> tuple:
    """(func, args, kwargs) of one call on the meta stand-in, as a GPU takes it: the GPU its input reads as being on,
    named by the code (`.cuda()`, `.cuda(0)`, `.to("cuda")`, `device=str(Q.device)`) or handed back as a device it
    read, is meta; a CPU 0-dim tensor as masked_fill's value is taken beside a tensor of the device, which meta's own
    kernel refuses."""
    if func is torch.Tensor.cuda:
        device = args[1] if len(args) > 1 else kwargs.get("device")
        if device is None or device == 0 or _names_the_gpu(device):
            return torch.Tensor.to, (args[0], META), {"non_blocking": kwargs.get("non_blocking", False)}
    if func in MASKED_FILLS and args and args[0].is_meta:
        if len(args) > 2 and _a_cpu_scalar(args[2]):
            args = (*args[:2], args[2].to(META), *args[3:])
        if _a_cpu_scalar(kwargs.get("value")):
            kwargs = {**kwargs, "value": kwargs["value"].to(META)}
    args = tuple(META if (func is torch.Tensor.to and _names_the_gpu(a)) else _meta_for_stand_in(a) for a in args)
    kwargs = {k: META if k == "device" and _names_the_gpu(v) else _meta_for_stand_in(v) for k, v in kwargs.items()}
    return func, args, kwargs


def _a_cpu_scalar(value) -> bool:
    return isinstance(value, torch.Tensor) and value.dim() == 0 and value.device.type == "cpu"


def _names_the_gpu(value) -> bool:
    """`cuda` or `cuda:0`, as text or a device: the GPU a stand-in's input reads as being on."""
    if isinstance(value, str):
        try:
            value = torch.device(value)
        except (RuntimeError, ValueError):
            return False
    return isinstance(value, torch.device) and value.type == "cuda" and value.index in (None, 0)


GPU_TENSOR_TYPES = {torch.float32: "torch.cuda.FloatTensor", torch.float64: "torch.cuda.DoubleTensor",
                    torch.float16: "torch.cuda.HalfTensor", torch.bfloat16: "torch.cuda.BFloat16Tensor",
                    torch.bool: "torch.cuda.BoolTensor", torch.int64: "torch.cuda.LongTensor",
                    torch.int32: "torch.cuda.IntTensor", torch.uint8: "torch.cuda.ByteTensor"}

def _meta_for_stand_in(value):
    return META if isinstance(value, torch.device) and STAND_IN_DEVICES.ours(value) else value


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
def _device_guard(device: str, lines: list[str]):
    """On a stand-in: the stand-in's mode, the device mix a GPU refuses, the GPU's text and torch.cuda as on one GPU
    (`stand_in_cuda`, yielded: its `asked` says where the code asked what the stand-in cannot answer)."""
    if device == CPU_BESIDE_A_GPU:
        with stand_in_cuda.swap().active(SUBMISSION_FILE, lines, beside_a_gpu=True) as cuda:
            yield cuda
        return
    if device not in STAND_INS:
        yield None
        return
    with fake_gpu.active() if device == "fake-cuda" else contextlib.nullcontext(), DeviceMixGuard(), \
            StandInAsAGpu(on_meta=device == "meta"), stand_in_cuda.swap().active(SUBMISSION_FILE, lines) as cuda:
        yield cuda


@contextlib.contextmanager
def answered_world(device: str, lines: list[str]):
    """torch.cuda as on one GPU for what runs before a call (building the module, its `__init__`) on a stand-in or
    beside a GPU: the machine a GPU grading runs on answers so from the student's first line (yielded: `asked`
    says where the code asked what the stand-in cannot answer)."""
    if device not in STAND_INS and device != CPU_BESIDE_A_GPU:
        yield None
        return
    with stand_in_cuda.swap().active(SUBMISSION_FILE, lines, beside_a_gpu=device == CPU_BESIDE_A_GPU) as cuda:
        yield cuda


def _structure(result) -> dict:
    if isinstance(result, (tuple, list)):  # a namedtuple is a tuple
        return {"kind": "tuple" if isinstance(result, tuple) else "list", "length": len(result)}
    return {"kind": type(result).__name__ if not isinstance(result, torch.Tensor) else "tensor", "length": None}


def _place(tensor: torch.Tensor, device: str) -> torch.Tensor:
    """A fresh leaf with the decoy's values (the recording asks for grad itself); on meta only the shape and
    dtype exist.

    The meta device stands in for a GPU on CPU-only machines: it raises on any mix with CPU
    tensors, which is exactly what a mask made without device= does on a GPU. A FakeTensor on "cuda"
    (`fake_gpu`) is the second stand-in: code that tells meta from a GPU meets the mismatch there.
    """
    if device == "meta":
        return torch.empty(tensor.shape, dtype=tensor.dtype, device="meta")
    if device == CPU_BESIDE_A_GPU:
        return tensor.to("cpu", copy=True)
    if device == "fake-cuda":
        return fake_gpu.place(tensor)
    return tensor.to(device, copy=True)


def _moved(module: torch.nn.Module, device: str) -> torch.nn.Module:
    if device == CPU_BESIDE_A_GPU:
        return module
    return fake_gpu.move(module) if device == "fake-cuda" else module.to(device)


def _moved_after_its_values(module: torch.nn.Module, device: str) -> tuple[torch.nn.Module, list, dict]:
    """The module on `device`, its named parameters and buffers there, and their values taken before the move: on the
    stand-in a moved module has no values, so the parent gets these."""
    before = {name: tracing.value_for_the_parent(t) for name, t in [*module.named_parameters(), *module.named_buffers()]}
    if device != "cpu":
        module = _moved(module, device)
    return module, [*module.named_parameters(), *module.named_buffers()], before


def used_before_the_move(module: torch.nn.Module, *inputs: torch.Tensor) -> list[str]:
    """One call on the CPU before `model.to(device)`, as a model is often used before it is moved: a tensor the call
    keeps as a plain attribute (a mask made at the first call) stays behind on the CPU there, as it does on a GPU (red
    team on the second lab: a mask made lazily kept the device point). What the call raises is left to the checks of
    the whole pass: here only the state it leaves counts. The plain tensor attributes the call made, by name."""
    before = set(plain_tensor_attributes(module))
    try:
        with torch.no_grad():
            module(*inputs)
    except Exception:
        pass
    return sorted(set(plain_tensor_attributes(module)) - before)


def plain_tensor_attributes(module: torch.nn.Module) -> list[str]:
    """The module's tensors kept as plain attributes, which .to(device) leaves behind (a mask that is no buffer): a
    registered parameter or buffer lives in the module's own tables, not among its attributes."""
    return sorted(name for name, value in vars(module).items() if isinstance(value, torch.Tensor))


def _graded(namespace: dict, name: str):
    if name not in namespace:
        raise NameError(f"name '{name}' is not defined")
    return namespace[name]


def _model_args(namespace: dict, fields: dict, class_name: str = MODEL_ARGS_CLASS, otherwise=None):
    """The student's `class_name` (its exercise's ModelArgs) when it carries the interface fields faithfully, else
    `otherwise(**fields)`: the first exercise's ModelArgs by default, a plain record of the fields for another."""
    student_class = namespace.get(class_name)
    if isinstance(student_class, type):
        try:
            args = student_class(**fields)
            if all(getattr(args, key) == value for key, value in fields.items()):
                return args
        except Exception:
            pass
    return (otherwise or ModelArgs)(**fields)


def _seed(seed: int) -> None:
    """What `torch.manual_seed` does for the draws a probe makes, at a fraction of its cost: where CUDA (or
    XPU, MTIA) is not initialised, torch.manual_seed queues a lazy seeding for each and formats the
    caller's stack three times, reading source files, about a sixth of a worker's time. The probes
    draw from the CPU generator, and from CUDA's only after it is initialised, when this seeds it too."""
    torch.default_generator.manual_seed(seed)
    if torch.cuda.is_initialized():
        torch.cuda.manual_seed_all(seed)


def _build(namespace, args: dict, is_causal, weights, seed: int):
    cls = _graded(namespace, GRADED_NAME["mha"])
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
    submodules = sorted({type(m).__name__ for m in module.modules()})
    return {"layers": layers, "buffers": buffers, "plain_tensor_attributes": plain_tensor_attributes(module),
            "submodules": submodules}


def warm_up() -> None:
    """Run the meta ops the device probes use once, so their lazy imports (sympy, decompositions)
    happen in the fork server before any worker is forked, not in every worker."""
    x = torch.empty(2, 2, device="meta")
    mask = torch.ones(2, 2, dtype=torch.bool, device="meta").triu(1)
    (x @ x.transpose(-2, -1) / 2).masked_fill(mask, float("-inf")).softmax(-1)
    torch.nn.functional.linear(x, x).view(1, 2, 2).transpose(0, 1).contiguous()
    fake_gpu.warm_up()
    stand_in_cuda.warm_up()
