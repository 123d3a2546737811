# How a self-check check fails, the same for every exercise: the failure and the mistake it names, the student's
# code run with its exceptions read as mistakes (each exercise's _ERROR_MISTAKES says which), the student's own line
# quoted, and the self-check's own errors told apart from the student's. `make build` copies this text between the
# markers of each exercise's selfcheck.py (grader/build/inline_selfcheck.py), so each published self-check stands
# alone; _student_line and _own_error tell this file's frames by _call's file, which is that selfcheck.py.

class SelfCheckFailure(Exception):
    """One failed public check: the mistake that explains it, and what was seen. Where the student's code
    raised, `error` is the exception as one line and `line` the student's line it came from: a report quotes
    each error once, however many checks met it."""

    def __init__(self, mistake, seen_zh, seen_en, raised=False, also=(), error="", line=""):
        super().__init__(mistake)
        self.mistake, self.seen_zh, self.seen_en = mistake, seen_zh, seen_en
        self.mistakes = (mistake, *also)  # several bugs at once (no mask and no wo): each named
        self.raised = raised  # the student's code raised (rather than computed something wrong)
        self.error, self.line = error, line


def _fail(mistakes, seen_zh, seen_en, error="", line=""):
    """`mistakes`: one id, or a tuple of the ids that together explain what was seen."""
    first, *also = (mistakes,) if isinstance(mistakes, str) else mistakes
    raise SelfCheckFailure(first, seen_zh, seen_en, raised=bool(error), also=also, error=error, line=line)


def _call(function, *args, **kwargs):
    """Run the student's code; an exception becomes the mistake it usually means, or `raised`, quoting the
    student's line: never a wrong value, since there is no value."""
    return _called(function, args, kwargs, module=False)


def _call_module(function, *args, **kwargs):
    """_call for a module's constructor or forward: the errors _ERROR_MISTAKES marks "module" (a mask buffer
    sliced wrong needs a module to have one) are read as their mistake here alone."""
    return _called(function, args, kwargs, module=True)


def _called(function, args, kwargs, module):
    try:
        return function(*args, **kwargs)
    except SelfCheckFailure:
        raise
    except Exception as error:  # the student's own code: any exception is a finding, not a crash
        name, text = type(error).__name__, _error_text(error)
        mistake = next((row[2] for row in _ERROR_MISTAKES if row[0] == name and row[1] in text
                        and (module or "module" not in row[3:])), "raised")
        line = _student_line(error)
        seen_zh = seen_en = ""  # the error quoted says it
        unset = getattr(error, "name", None) if isinstance(error, NameError) else None
        if mistake == "raised" and unset and line.startswith("return"):
            seen_zh = f"`{line}` 用到的 `{unset}` 没有赋值：把结果存进 `{unset}`（模板最后一行返回的就是它）。"
            seen_en = f"`{unset}`, which `{line}` returns, was never assigned: store the result in `{unset}`."
        raise SelfCheckFailure(mistake, seen_zh, seen_en, raised=True, error=f"{name}: {text}".rstrip(": "),
                               line=line) from None


def _student_line(error):
    """The innermost line of the traceback outside this file and torch: the student's own line ("" if unknown)."""
    own = _call.__code__.co_filename
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        path = frame.filename.replace("\\", "/")
        if frame.filename != own and "/torch/" not in path:
            return (frame.line or "").strip()[:160]
    return ""


def _own_error(error):
    """A NameError or ImportError raised in this file's own code (a helper cell not run, a copy not built):
    the self-check is broken, which is never the student's mistake."""
    frames = traceback.extract_tb(error.__traceback__)
    return isinstance(error, (NameError, ImportError)) and bool(frames) \
        and frames[-1].filename == _call.__code__.co_filename


def _error_text(error):
    """The first line of an exception's message, short; "" when it has none or cannot say it."""
    try:
        return str(error).splitlines()[0][:160] if str(error) else ""
    except Exception:  # the student's own exception class
        return ""


def provided_cell_skipped(error, what_zh, what_en, task):
    """A provided cell that runs the student's code: one short hint in place of a traceback, so Run all goes on."""
    if isinstance(error, NotImplementedError):
        print(f"先完成任务 {task}，再运行这个单元格（{what_zh}）。/ Finish Task {task} first, then run this cell ({what_en}).")
        return
    raised = f"{type(error).__name__}: {_error_text(error)}".rstrip(": ")
    print(f"⚠️ 跳过{what_zh}：你的代码抛出 {raised}。上面 Part {task} 的自检说明了原因，改好后再运行这个单元格。\n"
          f"   Skipped {what_en}: your code raised {raised}. Part {task}'s self-check above says why; "
          "fix it and run this cell again.")


def _close(a, b):
    """a (the student's) equal to b within float32's tolerance; False where b could not be computed (None)."""
    return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape \
        and torch.allclose(a.double(), b.double(), atol=1e-5, rtol=1e-4)
