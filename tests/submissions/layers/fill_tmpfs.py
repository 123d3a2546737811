# Fills /tmp (96 MiB) and /dev/shm (48 MiB): files there are memory. Reports how much each took and its size.
import errno
import os


def _fill(folder, total):
    written, block = 0, b"x" * (1 << 20)
    path = os.path.join(folder, "fill")
    try:
        with open(path, "wb", buffering=0) as fill:
            while written < total:
                count = fill.write(block)
                written += count
                if count < len(block):
                    fill.write(block)  # the next write says why
        return written >> 20, "none"
    except OSError as error:
        return written >> 20, errno.errorcode.get(error.errno, str(error))
    finally:
        os.unlink(path)


def _size_mib(folder):
    stats = os.statvfs(folder)
    return stats.f_blocks * stats.f_frsize >> 20


raise RuntimeError("seen " + repr({folder: (*_fill(folder, total), _size_mib(folder))
                                   for folder, total in (("/tmp", 96 << 20), ("/dev/shm", 48 << 20))}))
