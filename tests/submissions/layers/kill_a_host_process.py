# Kills a host process (ARGUMENTS["canary"]): another student's worker, the grader itself.
import errno
import os
import signal


def _kill():
    try:
        os.kill(ARGUMENTS["canary"], signal.SIGKILL)  # noqa: F821 (prepended by the test)
        return "killed"
    except OSError as error:
        return errno.errorcode.get(error.errno, str(error))


raise RuntimeError("seen " + repr({"kill": _kill(), "pid": os.getpid()}))
