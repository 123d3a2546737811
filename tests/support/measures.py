"""What a test measures with: this process's CPU time, and the short memory limit of the hoarding tests."""
import gc
import time

from grader.grade import default_limits
from grader.sandbox.confinement import Limits


class CpuTime:
    """This process's CPU time over a `with` block (`.seconds`), with the garbage collector paused: in a test
    worker whose heap holds a session of reports, one full collection inside a timed pass costs about 0.4 s
    (CI saw a linear pass take 0.04 s, then 0.48 s)."""

    def __enter__(self) -> "CpuTime":
        gc.collect()
        gc.disable()
        self.started = time.process_time()
        return self

    def __exit__(self, *exception) -> None:
        self.seconds = time.process_time() - self.started
        gc.enable()


def short_memory() -> Limits:
    """The default limits with 512 MiB of memory: a hoarding submission trips it at once, not after filling
    gigabytes against the clock (the 3 GiB default took 13 s a grading for the memory bomb)."""
    return Limits(**{**default_limits().__dict__, "memory_bytes": 512 << 20})
