"""Parent side of the isolation layer: start a confined worker per submission and talk to it.

Workers are forked from a multiprocessing fork server that imported torch and the worker module once,
so a submission costs a fork, not an interpreter and a torch import. The parent enforces wall
time (per probe and per submission) and watches the worker's resident memory (the only memory
limit that works with CUDA); the worker confines itself (`confinement.confine`). Answers are
read with deadlines (`frames`) and bounded before they are trusted (`answers`): plain tensors,
numbers, strings and small containers, nothing executable.
"""
from __future__ import annotations

import atexit
import contextlib
import multiprocessing
import multiprocessing.forkserver
import multiprocessing.resource_tracker
import os
import sys
import signal
import threading
import time
import types
from pathlib import Path

from grader.errors import GraderError
from grader.process import ROOT
from grader.sandbox import answers, fork_server, frames, memory_cgroup, request_tensors, worker_identity
from grader.sandbox.confinement import LAYERS, SCRATCH, Limits
_context_lock = threading.Lock()
_context = None
_workers_started = 0


def _fork_server():
    """The shared fork server context, preloading torch and the worker module once per grading run."""
    global _context
    with _context_lock:
        if _context is None:
            fork_server.install()
            context = multiprocessing.get_context("forkserver")
            # torch.save imports torch.utils.serialization on its first call: loaded here, a worker whose uid cannot
            # reach the venv (no mount namespace to bind it: a container that refuses namespaces, a clone in a 0700
            # home) still sends its answers.
            context.set_forkserver_preload(["torch", "torch.nn.functional", "torch.utils.serialization",
                                            "grader.sandbox.worker", "grader.sandbox.worker_process",
                                            "grader.sandbox.syscall_filter"])
            _context = context
            atexit.register(_stop_fork_server_if_unused)  # once, whoever starts the fork server
    return _context


def start_fork_server() -> None:
    """Start the fork server now, so its torch import overlaps with the caller's own (this
    module imports no torch at load time for that reason). Where the process then ends without
    having started a worker, the fork server is stopped at exit rather than left to finish its
    imports for nothing."""
    _fork_server()
    multiprocessing.forkserver.ensure_running()


def in_a_job_process(index: int, count: int) -> None:
    """In one of `count` processes forked from a grading run to grade beside each other (grade-all's jobs): its
    workers take uids from this process's share of the band only, and its workers come from the run's fork server,
    which this process can see but not wait for (the run is its parent), instead of a torch import of its own."""
    worker_identity.take_share(index, count)
    server = multiprocessing.forkserver._forkserver
    relaunch = server.ensure_running

    def ensure_running() -> None:
        if server._forkserver_pid is not None and _lives(server._forkserver_pid):
            multiprocessing.resource_tracker.ensure_running()
            return
        server._forkserver_pid = None  # gone, or never started: this process starts a fork server of its own
        relaunch()

    server.ensure_running = ensure_running


def _lives(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return False


def _stop_fork_server_if_unused() -> None:
    """At exit: a fork server this process started early and never forked a worker from (a lazy start
    forks one at once) is still importing torch, and the process would wait for it."""
    if _workers_started == 0:
        fork_server.stop()


def start_fork_server_unless_cached(report_cache: Path | None) -> None:
    """An entry point's early start, except where a report cache may answer every submission: a
    re-run over a graded class (nbgrader autograde after grade-all, a second run) then never loads
    torch a second time; the first report the cache lacks starts the fork server (`_fork_server`)."""
    if report_cache is None:
        start_fork_server()


@contextlib.contextmanager
def _without_main_module():
    """Hide __main__ while starting a worker, so multiprocessing does not re-run the caller's
    script (pytest, nbgrader, a notebook) inside every worker."""
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main


def _caller_folders() -> set[str]:
    """Folders on the import path only because of how grading was started: the current folder
    (`python -m`, a notebook) and the folder of the script that called the grader. They hold the
    instructor's files (often the class's submissions), never a package the worker needs."""
    folders = {os.getcwd()}
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    if main_file:
        folders.add(os.path.dirname(os.path.abspath(main_file)))
    return folders | {os.path.realpath(folder) for folder in folders}


def python_paths() -> list[str]:
    """What the worker must still see: the interpreter's prefixes and its import path, minus the
    kit's own repo (the grader modules are imported before confinement, so nothing is lost), the
    caller's folders, and any folder that holds the worker's scratch folder (its /tmp must stay its own)."""
    seen = [p for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix) if p and os.path.isdir(p)]
    callers = _caller_folders()
    seen += [p for p in sys.path if p and os.path.isdir(p) and os.path.abspath(p) not in callers
             and os.path.realpath(p) not in callers]
    # both spellings: a venv reached through a symlink is imported by its own path, bound by its target's
    paths = {os.path.realpath(p) for p in seen} | {os.path.abspath(p) for p in seen}
    kept_out = [str(ROOT), SCRATCH]
    paths = {p for p in paths if not any(k == p or k.startswith(p.rstrip(os.sep) + os.sep) for k in kept_out)}
    return sorted(p for p in paths if not any(p.startswith(other + os.sep) for other in paths))


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as children:
            return [int(child) for child in children.read().split()]
    except OSError:
        return []


def _process_tree(pid: int) -> list[int]:
    """The worker and its descendants, parents first: the forked worker, then the pid 1 of its
    namespace that runs student code (where the kernel allows namespaces)."""
    tree = [pid]
    for member in tree:
        tree.extend(_children(member))
    return tree


def _resident_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _rss_bytes(pid: int) -> int:
    """Resident memory of the process of the worker that runs student code: the largest in its
    tree (the forked worker only waits for it and shares its pages)."""
    return max(_resident_bytes(member) for member in _process_tree(pid))


def _kill_descendants(pid: int) -> bool:
    """Kill what the worker started, deepest first: its pid 1, whose end takes the rest of its
    namespace with it. A pidfd, checked to be still in the tree once opened, cannot hit a
    process that reused the number. True when something was killed."""
    killed = False
    for member in reversed(_process_tree(pid)[1:]):
        try:
            handle = os.pidfd_open(member)
        except OSError:
            continue
        try:
            if member in _process_tree(pid):
                signal.pidfd_send_signal(handle, signal.SIGKILL)
                killed = True
        except OSError:
            pass
        finally:
            os.close(handle)
    return killed


# Forking and confining a worker is the grader's own work, so it is not held to what the submission has
# left of its time (a slow Part 1 must not turn Part 2's fresh worker into a grader error).
SETUP_SECONDS = 30.0


class SandboxUnavailable(GraderError):
    """The worker could not confine itself (nothing of the submission ran): grading stops with the
    reason instead of scoring the student 0 for it."""


class WorkerFailure(Exception):
    """The worker did not answer: `kind` is timeout, memory-limit, exited or crashed."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


# The worker's run-time guards (guard.py, audit.py). Only the sandbox's own hostile tests switch them off,
# in this trusted process, to see the confinement layers hold on their own.
RUNTIME_GUARDS = True


def _worker_entry(*args) -> None:
    """The worker process's target, named here so that the parent never imports grader.sandbox.worker: its
    schema scan and meta warm-up cost the parent about one `import torch`, in every grading process, for
    nothing (the fork server preloads it for the workers)."""
    from grader.sandbox import worker

    worker.worker_main(*args)


def _check_layers_off(layers_off: frozenset[str]) -> None:
    """A misspelt layer would stay on and let a layer test pass for the wrong reason; outside the test suite
    no layer is ever switched off, whoever asks."""
    unknown = set(layers_off) - set(LAYERS)
    if unknown:
        raise ValueError(f"no such isolation layer: {sorted(unknown)} (known: {', '.join(LAYERS)})")
    if layers_off and "pytest" not in sys.modules:
        raise SandboxUnavailable("isolation layers can be switched off only by the sandbox's own tests")


class Worker:
    """One confined child process holding one submission's code."""

    def __init__(self, source: str, limits: Limits, use_cuda: bool, *, layers_off: frozenset[str] = frozenset()) -> None:
        """`layers_off` (confinement.LAYERS) exists for the sandbox's own layer tests: grading never passes it,
        and it is refused outside a pytest session."""
        self._start(_worker_entry, (source, use_cuda, RUNTIME_GUARDS, frozenset(layers_off)), limits, layers_off)
        self.ready = self._receive(limits.probe_seconds)

    def _start(self, target, arguments: tuple, limits: Limits, layers_off: frozenset[str]) -> None:
        """Fork `target(connection, limits, *arguments)` from the fork server with a uid and a memory cgroup of its
        own, and read its first frame (the isolation layers it could not apply). The judge
        (grader.judge.process) is forked the same way, and reads that frame when it is first asked."""
        no_cgroup = self._spawn(target, arguments, limits, layers_off)
        self.missing_isolation = self._confined(SETUP_SECONDS) + ([f"memory cgroup ({no_cgroup})"] if no_cgroup else [])

    def _spawn(self, target, arguments: tuple, limits: Limits, layers_off: frozenset[str]) -> str | None:
        """The fork of `_start`; why the process has no memory cgroup, or None."""
        global _workers_started
        _check_layers_off(layers_off)
        self.limits = limits
        self.uid = worker_identity.allocate() if os.geteuid() == 0 else None
        with_cgroup = limits.confine and "memory-cgroup" not in layers_off
        self.cgroup, no_cgroup = memory_cgroup.create(limits.memory_bytes) if with_cgroup else (None, None)
        limits_here = Limits(**{**limits.__dict__, "uid": self.uid, "cgroup": self.cgroup})
        context = _fork_server()
        self._connection, child_end = context.Pipe(duplex=True)
        self.process = context.Process(target=target, args=(child_end, limits_here, *arguments), daemon=True)
        with _context_lock, _without_main_module():
            _workers_started += 1
            self.process.start()
        child_end.close()
        return no_cgroup

    def _confined(self, seconds: float) -> list[str]:
        """The worker's first frame, sent before student code runs: the isolation layers that are
        missing. A worker that fails before it is the grader's failure, never the student's."""
        try:
            setup = self._receive(seconds)
        except WorkerFailure as failure:
            raise SandboxUnavailable(f"the sandbox did not start: {failure.detail}") from None
        if "setup_failed" in setup:
            self.close()
            raise SandboxUnavailable(f"the sandbox could not be set up: {setup['setup_failed']}")
        return list(setup["missing_isolation"])

    def _receive(self, seconds: float) -> dict:
        """The next answer, read and decoded within `seconds` (a half-written frame included)."""
        try:
            frame = frames.read_frame(self._connection.fileno(), answers.MAX_FRAME_BYTES,
                                      time.monotonic() + seconds, self._watch_memory)
            return answers.decode(frame)
        except frames.FrameTimeout:
            self.close()
            raise WorkerFailure("timeout", f"no answer within {seconds:.0f} s") from None
        except frames.FrameClosed as error:
            raise self._ended() from error
        except (frames.FrameTooLarge, answers.AnswerRefused) as error:
            self.close()
            raise WorkerFailure("tampering", f"a forged answer: {error}") from None

    def _watch_memory(self) -> None:
        memory_cap = self.limits.memory_bytes + (2 << 30)  # RSS watchdog above the rlimit's own margin
        if _rss_bytes(self.process.pid) > memory_cap:
            self.close()
            raise WorkerFailure("memory-limit", f"resident memory above {memory_cap >> 20} MiB")

    def _ended(self) -> WorkerFailure:
        """Why the worker's end of the pipe closed: the kernel's kill, an exit, or a crash."""
        self.process.join(1)
        code = self.process.exitcode
        self.close()
        if code is not None and code < 0 and -code == signal.SIGKILL:
            return WorkerFailure("memory-limit", "the worker was killed (out of memory)")
        if code is not None and code >= 0:
            return WorkerFailure("exited", f"the submission ended the process (exit status {code})")
        return WorkerFailure("crashed", f"the worker died (signal {-(code or 0)})")

    def call(self, probe: str, fields: dict, seconds: float) -> dict:
        """One request and its answer, both within `seconds`: a worker that stops reading cannot hold the parent."""
        return self._receive(max(0.0, self._send(probe, fields, seconds) - time.monotonic()))

    def _send(self, probe: str, fields: dict, seconds: float) -> float:  # within `seconds`; the answer's deadline
        deadline = time.monotonic() + seconds
        try:
            frames.write_frame(self._connection.fileno(), request_tensors.dumps({"probe": probe, "args": fields}),
                               deadline, self._watch_memory)
        except frames.FrameTimeout:
            self.close()
            raise WorkerFailure("timeout", f"the worker took no request within {seconds:.0f} s") from None
        except frames.FrameClosed as error:
            raise self._ended() from error
        return deadline

    @property
    def alive(self) -> bool:
        return self.process.is_alive()

    def close(self) -> None:
        """End the worker and everything it started; return once they are gone."""
        if self.process.is_alive():
            if _kill_descendants(self.process.pid):
                self.process.join(2)  # it reaps its pid 1 (the namespace is empty by then) and ends the same way
            if self.process.is_alive():
                self.process.kill()
        self.process.join(5)
        if self.uid is not None:
            worker_identity.release(self.uid)
            self.uid = None
        if self.cgroup is not None:
            memory_cgroup.remove(self.cgroup)
            self.cgroup = None
        self._connection.close()
