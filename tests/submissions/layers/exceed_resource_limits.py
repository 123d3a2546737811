# Maps ARGUMENTS["map"] bytes, writes a 32 MiB file, opens 1000 files, and reads the limits it runs under.
import errno
import mmap
import os


def _map():
    try:
        mmap.mmap(-1, ARGUMENTS["map"]).close()  # noqa: F821 (prepended by the test)
        return "mapped"
    except OSError as error:
        return errno.errorcode.get(error.errno, str(error))


def _write_a_big_file():
    written, block = 0, b"x" * (1 << 20)
    try:
        with open("big-file", "wb", buffering=0) as big:
            while written < 32 << 20:
                written += big.write(block)
        return written, "none"
    except OSError as error:
        return written, errno.errorcode.get(error.errno, str(error))
    finally:
        os.unlink("big-file")


def _open_many_files():
    opened = []
    try:
        while len(opened) < 1000:
            opened.append(os.open("/dev/null", os.O_RDONLY))
        return len(opened), "none"
    except OSError as error:
        return len(opened), errno.errorcode.get(error.errno, str(error))
    finally:
        for fd in opened:
            os.close(fd)


with open("/proc/self/limits") as table:
    limits = {line[:26].strip(): line[26:].split()[:2] for line in table.readlines()[1:]}
# a report's message is capped (grader/sandbox/probes.py MAX_MESSAGE): what was seen comes back in pieces, one
# load error each, joined in order by tests/support/layer_tools.py
_SEEN = repr({"map": _map(), "file": _write_a_big_file(), "files": _open_many_files(), "limits": limits})
raise RuntimeError("seen " + _SEEN[:500])
raise RuntimeError("seen " + _SEEN[500:1000])
raise RuntimeError("seen " + _SEEN[1000:1500])
raise RuntimeError("seen " + _SEEN[1500:2000])
raise RuntimeError("seen " + _SEEN[2000:2500])
raise RuntimeError("seen " + _SEEN[2500:3000])
raise RuntimeError("seen " + _SEEN[3000:3500])
raise RuntimeError("seen " + _SEEN[3500:4000])
