"""The plain values that tell a CPU-only build of torch from a GPU build, read without a call, while student code runs
on a stand-in for a GPU (and while the submission loads in the GPU world): answered as a GPU build holds them, or,
where no value can be a GPU build's, refused and counted as `stand_in_cuda` refuses a function.

A GPU build holds `torch.version.cuda` "12.6" (not None), `torch.cuda.has_magma` True, `torch.cuda.green_contexts.
SUPPORTED` True and a `torch.__version__` whose local part is "+cu126" (not "+cpu"): those are answered
(`GPU_BUILD`). `torch.cuda.default_generators` holds the GPU's own generator, and the legacy CUDA tensor types
(`torch.cuda.FloatTensor`, ...) take a GPU's tensors as their instances (`isinstance(Q, torch.cuda.FloatTensor)` is
False for the meta stand-in's input): nothing this build can make is either, so reading one is refused (`REFUSED`).

For the time of a call each name is taken out of its module's namespace and answered by the module's `__getattr__`
(PEP 562; a module's own `__getattr__`, torch's, still answers the rest), so `from torch.version import cuda` meets
it too. The answer goes to the student's frames and to what relays them inside the call boundary (the standard
library, einops), never to torch's own code or the grader's: they keep this build's values, so no torch code path
believes CUDA is there. A value read before the call and kept (at the plain load, which only the CPU's probes use)
is this build's, as a GPU machine's CPU probes would not see it."""
from __future__ import annotations

import contextlib
import sys
import types

import torch
from torch.torch_version import TorchVersion

GPU_BUILD: dict[tuple[str, str], object] = {
    ("torch.version", "cuda"): "12.6",
    ("torch.cuda", "has_magma"): True,
    ("torch.cuda.green_contexts", "SUPPORTED"): True,
    ("torch", "__version__"): TorchVersion(str(torch.__version__).split("+")[0] + "+cu126"),
}
"""What a GPU build of this torch holds (CUDA 12.6, the build `docs/developing.md` names)."""


def _legacy_types() -> set[tuple[str, str]]:
    tensor_type = type(torch.FloatTensor)
    return {("torch.cuda", name) for name, value in vars(torch.cuda).items() if type(value) is tensor_type}


REFUSED = {("torch.cuda", "default_generators")} | _legacy_types()
"""What no value of this build can answer as a GPU build holds it."""
CPU_ONLY_BUILD = torch.version.cuda is None and torch.version.hip is None
"""Only such a build holds other values than a GPU build: on a GPU build (the CPU beside a GPU of a machine with one)
every value is its own, nothing is taken out."""


class BuildValues:
    """The names taken out for one call, and who gets which answer (`StandInCuda` decides, through `answers`)."""

    def __init__(self, answers_the_student, refusal) -> None:
        self.answers_the_student = answers_the_student  # frame -> whether a read from it is on the student's behalf
        self.refusal = refusal  # (what, frame) -> the counted error

    @contextlib.contextmanager
    def taken_out(self):
        if not CPU_ONLY_BUILD:
            yield
            return
        modules = {module for module, _ in (*GPU_BUILD, *REFUSED) if isinstance(sys.modules.get(module), types.ModuleType)}
        kept: dict[tuple[str, str], object] = {}
        getattrs: dict[str, object] = {}
        try:
            for name in modules:
                namespace = vars(sys.modules[name])
                getattrs[name] = namespace.get("__getattr__")
                for key in (*GPU_BUILD, *REFUSED):
                    if key[0] == name and key[1] in namespace:
                        kept[key] = namespace.pop(key[1])
                namespace["__getattr__"] = self._getattr(name, kept, getattrs[name])
            yield
        finally:
            for name in getattrs:  # only the modules changed
                namespace = vars(sys.modules[name])
                if getattrs[name] is None:
                    namespace.pop("__getattr__", None)
                else:
                    namespace["__getattr__"] = getattrs[name]
            for (name, attribute), value in kept.items():
                vars(sys.modules[name])[attribute] = value

    def _getattr(self, module: str, kept: dict, own_getattr):
        def __getattr__(attribute: str):
            key = (module, attribute)
            if key not in kept:
                if own_getattr is None:
                    raise AttributeError(f"module {module!r} has no attribute {attribute!r}")
                return own_getattr(attribute)
            reader = sys._getframe(1)
            if not self.answers_the_student(reader):
                return kept[key]
            if key in REFUSED:
                raise self.refusal(f"{module}.{attribute}", reader)
            return GPU_BUILD[key]
        return __getattr__
