"""When a device check has no device question: the code fails at the check's sizes wherever it runs, the plain CPU
included, so the part's value checks name what is wrong and the device check is their cascade (no stand-in could
judge it, and a GPU would not either)."""
from __future__ import annotations

from grader.checks import Outcome, diagnosis
from grader.graph.devices import STAND_INS


def fails_on_the_cpu_too(inconclusive: dict[str, str], on_the_cpu: dict | None) -> Outcome | None:
    """A device check no stand-in could judge, where the plain CPU run at the same sizes raised (`on_the_cpu`, the
    error; None where it ran) what every stand-in raised (`inconclusive`: where -> the error's type): the code fails at
    these sizes wherever it runs, which the part's value checks name. Not a device question: a cascade, not
    `device-not-judged`, whose advice (an `.item()`, an `assert`) would send the student elsewhere (independently
    written bugs of the second lab). The points are not given either way. A CPU error that says the build has no GPU
    (torch.cuda asked unconditionally) is a device question, and so is what the CPU beside a GPU raises: it refuses
    what a stand-in refuses of torch.cuda."""
    if not on_the_cpu or diagnosis.NO_CUDA.search(on_the_cpu.get("message", "")):
        return None
    kind = on_the_cpu.get("type")
    if any(inconclusive.get(where) != kind for where in STAND_INS):
        return None
    return Outcome(False, f"未检查：在这些尺寸上，代码在 CPU 上也出错（{kind}；本部分的形状和数值检查说明了原因），"
                   "与设备无关。",
                   f"Not checked: at these sizes the code fails on the CPU too ({kind}; the part's shape and value "
                   "checks say why), which is no device question.", cause="cascade")
