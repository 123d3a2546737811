"""When a device check has no device question: the code fails at the check's sizes wherever it runs, the plain CPU
included, so the part's value checks name what is wrong and the device check is their cascade (no stand-in could
judge it, and a GPU would not either)."""
from __future__ import annotations

from typing import Callable

from grader.checks import Outcome, diagnosis
from grader.graph.devices import STAND_INS


def fails_on_the_cpu_too(inconclusive: dict[str, str], error_on_the_cpu: Callable[[], dict | None]) -> Outcome | None:
    """A device check no stand-in could judge (`inconclusive`: where -> the type of the error raised there), where the
    plain CPU run at the same sizes (`error_on_the_cpu()`, its error or None where it ran; asked only when every
    stand-in raised) raised what every stand-in raised: the code fails at these sizes wherever it runs, which the
    part's value checks name. Not a device question: a cascade, not `device-not-judged`, whose advice (an `.item()`,
    an `assert`) would send the student elsewhere (independently written bugs of the second lab). The points are not
    given either way. A CPU error that says the build has no GPU (torch.cuda asked unconditionally) is a device
    question, and so is what the CPU beside a GPU raises: it refuses what a stand-in refuses of torch.cuda."""
    kinds = {inconclusive.get(where) for where in STAND_INS}
    if None in kinds or len(kinds) > 1:
        return None
    on_the_cpu = error_on_the_cpu() or {}
    if on_the_cpu.get("type") not in kinds or diagnosis.NO_CUDA.search(on_the_cpu.get("message", "")):
        return None
    kind = on_the_cpu["type"]
    return Outcome(False, f"未检查：在这些尺寸上，代码在 CPU 上也出错（{kind}；本部分的形状和数值检查说明了原因），"
                   "与设备无关。",
                   f"Not checked: at these sizes the code fails on the CPU too ({kind}; the part's shape and value "
                   "checks say why), which is no device question.", cause="cascade")
