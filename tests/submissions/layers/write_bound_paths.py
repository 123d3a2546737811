# Creates a file in each folder bound into the worker's root (ARGUMENTS["paths"]): the system, the Python
# packages the next student's worker imports. A file it did create is removed at once.
import errno
import os


def _create(folder):
    if not os.path.isdir(folder):
        return "absent"
    path = os.path.join(folder, ".attention-kit-layer-test")
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except OSError as error:
        return errno.errorcode.get(error.errno, str(error))
    os.unlink(path)
    return "created"


raise RuntimeError("seen " + repr({folder: _create(folder) for folder in ARGUMENTS["paths"]}))  # noqa: F821
