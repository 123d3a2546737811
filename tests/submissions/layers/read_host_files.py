# Reads files of the host (ARGUMENTS["paths"]): the solutions, another student's hand-in, the grader's secrets.
import errno


def _read(path):
    try:
        with open(path, errors="replace") as secret:
            return secret.read(200)
    except OSError as error:
        return errno.errorcode.get(error.errno, str(error))


raise RuntimeError("seen " + repr({path: _read(path) for path in ARGUMENTS["paths"]}))  # noqa: F821
