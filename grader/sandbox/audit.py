"""The worker's audit hook: what attention code never needs, refused however the code reached it.

`sys.addaudithook` cannot be removed, and its events name the real operation (ctypes, a gc walk, an
open file), whatever attribute path or spelling led there. The hook enforces on the student's behalf: while a
frame of student code is on the stack, and for the whole of a call the worker makes into student code
(`call_boundary`: a forward pre-hook made of C callables reads a file from torch's `Module._call_impl` with no frame
of the submission anywhere). torch and numpy import lazily and open their own files: the loading of a module being
imported, the reading of a library's source, and the standard library's own code generation (dataclasses and
namedtuple build their methods with exec) are let through; the grader's code between probes is its own.

Code compiled from a string at run time is the student's, whoever compiled it: a generator builds its text from
the student's strings (a field name of a class made with `type()`, a string annotation typing evaluates), and the
code it makes runs later, maybe called by the grader's own code with no frame of the submission on the stack (a
generated `__hash__` called by torch, an `__init__` by the probes). Every code object run by `exec` or `eval`
outside an import is noted with the code nested in it (`GENERATED`), and a frame of any of them counts as student
code: what it does meets the same refusals as the submission's own lines.
"""
from __future__ import annotations

import sys

from grader.sandbox import call_boundary
from grader.sandbox.probes import SUBMISSION_FILE

DENIED_EVENTS = frozenset({
    "gc.get_objects", "gc.get_referrers", "gc.get_referents", "code.__new__", "function.__new__",
    "sys.settrace", "sys.setprofile", "sys._current_frames", "sys._current_exceptions", "sys.addaudithook",
    "sys.unraisablehook", "sys.excepthook", "compile", "exec", "marshal.loads", "pickle.find_class", "mmap.__new__",
    "os.system", "os.fork", "os.forkpty", "os.kill", "os.killpg", "os.putenv", "os.unsetenv", "os.remove",
    "os.rename", "os.mkdir", "os.rmdir", "os.chmod", "os.chown", "os.symlink", "os.link", "os.truncate",
    "os.chdir", "os.utime", "signal.pthread_kill", "subprocess.Popen", "builtins.input", "webbrowser.open",
    "sqlite3.connect", "urllib.Request", "open", "os.listdir", "os.scandir", "glob.glob"})
DENIED_PREFIXES = ("ctypes.", "socket.", "os.exec", "os.posix_spawn", "os.spawn", "_thread.", "shutil.")
# the code generators of the standard library that honest classes use (@dataclass, namedtuple, NamedTuple), and
# torch's reading of an operator's schema types (strings of the registered schema, never the caller's), which the
# FakeTensor stand-in for a GPU does at an operator's first use (grader/sandbox/fake_gpu.py)
CODE_GENERATORS = ("dataclasses.py", "collections/__init__.py", "torch/fx/operator_schemas.py",
                   "grader/sandbox/generated_code.py")  # dataclasses' text, rewritten through the guards first
SOURCE_SUFFIXES = (".py", ".pyc", ".so")
TREE_ONLY = "/ast.py"
"""`ast.parse` compiles text to a tree, never to code: `traceback` does it to underline an error's line when a
logging handler formats an exception raised under student code."""
IMPORT_MACHINERY = "<frozen importlib._bootstrap"
GENERATED: set = set()
"""Code objects compiled from strings at run time, outside an import, and all code nested in them: student code."""


def _student_on_stack() -> bool:
    """Whether this happens on the student's behalf: student code called it, directly or through libraries, or it
    happens inside a call the worker made into student code, whatever carried it there. A module being imported runs
    its own top-level code (it reads its files, unmarshals, execs): the guarded import let only allowed modules in,
    and torch's lazy imports come from torch, so the events of an import are let through."""
    frame = sys._getframe(1).f_back  # past the hook: the code that raised the event
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename == SUBMISSION_FILE or frame.f_code in GENERATED:
            return True
        if filename.startswith(IMPORT_MACHINERY):
            return False
        frame = frame.f_back
    return call_boundary.on_the_students_behalf()


def _allowed(event: str, args: tuple) -> bool:
    """What the denied events may still do with student code on the stack."""
    if event == "open":  # reading a library's source or bytecode (lazy imports, tracebacks, warnings)
        path, mode = args[0], args[1]
        return isinstance(path, str) and path.endswith(SOURCE_SUFFIXES) and mode in ("r", "rb", None)
    if event in ("compile", "exec"):
        caller = sys._getframe(1).f_back
        return caller is not None and (caller.f_code.co_filename.endswith(CODE_GENERATORS)
                                       or event == "compile" and caller.f_code.co_filename.endswith(TREE_ONLY))
    return False


def _importing() -> bool:
    """Whether the code raising the event runs inside an import (a module's own top-level code)."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.startswith(IMPORT_MACHINERY):
            return True
        frame = frame.f_back
    return False


def note_generated(code) -> None:
    """A code object run from a string at run time, and every code object nested in it, is student code."""
    pending = [code]
    while pending:
        current = pending.pop()
        if current not in GENERATED:
            GENERATED.add(current)
            pending += [value for value in current.co_consts if isinstance(value, type(current))]


def install(refuse) -> None:
    """Install the hook; `refuse(mistake, what)` records the refusal and raises."""

    def hook(event: str, args: tuple) -> None:
        if event not in DENIED_EVENTS and not event.startswith(DENIED_PREFIXES):
            return
        if event == "exec" and args and hasattr(args[0], "co_consts") and not _importing():
            note_generated(args[0])
        if _student_on_stack() and not _allowed(event, args):
            refuse("forbidden-import" if event.startswith(DENIED_PREFIXES) else "introspection", f"the operation {event}")

    sys.addaudithook(hook)
