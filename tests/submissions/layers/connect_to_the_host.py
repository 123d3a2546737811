# Connects to a server listening on the host's loopback (ARGUMENTS["port"]): the grader's database, a notebook server.
import errno
import socket


def _connect():
    client = socket.socket()
    client.settimeout(5)
    try:
        client.connect(("127.0.0.1", ARGUMENTS["port"]))  # noqa: F821 (prepended by the test)
        return "connected"
    except OSError as error:
        return errno.errorcode.get(error.errno, str(error))
    finally:
        client.close()


raise RuntimeError("seen " + repr({"connect": _connect()}))
