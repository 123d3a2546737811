"""Start multiprocessing's fork server with nothing of the grader's secrets, and send workers none.

Every worker is forked from the fork server, so whatever is in the fork server's memory is in every
worker's, where student code can read it. multiprocessing execs the fork server with the caller's
whole environment, and the KEY=VALUE strings exec copies onto its stack stay there for good
(`os.environ.clear()` only forgets Python's copy): an instructor's `ATTENTION_KIT_DB_URL` with the
gradebook's password, a cloud key. Here the fork server is exec'd with only what Python, torch and
CUDA read (`clean_environment`). multiprocessing also sends each worker the caller's `sys.argv`,
which may hold `--db=postgresql://user:password@...` (nbgrader's own option), and its `authkey`:
workers get the program's name only, and no key.

Both go through stand-ins for the `util` and `spawn` modules as the `forkserver` and
`popen_forkserver` modules see them: nothing else in the process changes.
"""
from __future__ import annotations

import multiprocessing.forkserver
import multiprocessing.popen_forkserver
import os
import subprocess
import types
from multiprocessing import spawn, util

# What the interpreter, torch and CUDA read from the environment; nothing else reaches the fork server.
KEPT_NAMES = {
    "PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "PYTHONPATH", "LD_LIBRARY_PATH",
    "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "CUDA_HOME", "CUDA_PATH", "CUDA_MODULE_LOADING",
    "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "PYTORCH_CUDA_ALLOC_CONF", "CUBLAS_WORKSPACE_CONFIG",
    "OMP_NUM_THREADS", "MKL_NUM_THREADS",
}
KEPT_PREFIXES = ("LC_",)  # the locale
_started: list[subprocess.Popen] = []  # kept, so subprocess never reaps them: multiprocessing waits for its own


def clean_environment(environment: dict[str, str] | None = None) -> dict[str, str]:
    environment = os.environ if environment is None else environment
    return {name: value for name, value in environment.items()
            if name in KEPT_NAMES or name.startswith(KEPT_PREFIXES)}


def _spawn_with_clean_environment(path: str, args: list[str], passfds) -> int:
    """`util.spawnv_passfds` (fork, keep `passfds`, exec) with an environment of its own."""
    process = subprocess.Popen(args, executable=path, env=clean_environment(), pass_fds=tuple(passfds),
                               close_fds=True)
    _started.append(process)
    return process.pid


def _preparation_data(name: str) -> dict:
    """What a worker is told about its parent: no command line beyond the program, no authkey."""
    data = spawn.get_preparation_data(name)
    data["sys_argv"] = data.get("sys_argv", [])[:1]
    data.pop("authkey", None)
    return data


class _Through(types.ModuleType):
    """A module that is `module` except for the names given."""

    def __init__(self, module: types.ModuleType, **replaced) -> None:
        super().__init__(module.__name__)
        self._module = module
        self.__dict__.update(replaced)

    def __getattr__(self, name: str):
        return getattr(self._module, name)


def stop() -> None:
    """Kill the fork servers this process started and reap them: for an entry point that started one early
    and then forked no worker from it (every submission refused, or answered by the report cache), which
    would otherwise go on importing torch for seconds after the grading ended."""
    for process in _started:
        if process.poll() is None:
            process.kill()
            process.wait()


def install() -> None:
    """Before the fork server starts (idempotent)."""
    if not isinstance(multiprocessing.forkserver.util, _Through):
        multiprocessing.forkserver.util = _Through(util, spawnv_passfds=_spawn_with_clean_environment)
    if not isinstance(multiprocessing.popen_forkserver.spawn, _Through):
        multiprocessing.popen_forkserver.spawn = _Through(spawn, get_preparation_data=_preparation_data)
