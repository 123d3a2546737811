# What the grader's uid allows: read a root-only file (ARGUMENTS["secret"]), kill a root process (ARGUMENTS["canary"]).
import errno
import os
import signal


def _errno_name(call):
    try:
        result = call()
        return "done" if result is None else result
    except OSError as error:
        return errno.errorcode.get(error.errno, str(error))


def _read():
    with open(ARGUMENTS["secret"]) as secret:  # noqa: F821 (prepended by the test)
        return secret.read(200)


raise RuntimeError("seen " + repr({"uid": os.getuid(), "read": _errno_name(_read),
                                   "kill": _errno_name(lambda: os.kill(ARGUMENTS["canary"], signal.SIGKILL))}))  # noqa: F821
