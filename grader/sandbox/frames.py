"""multiprocessing's message framing, read and written on a raw descriptor under a deadline.

`Connection.recv_bytes` blocks until a whole message arrived: a worker that writes only a
length header and stops would hold the parent forever. Here every wait is a `poll` bounded by
the caller's deadline, and a declared length above the cap is refused before any body byte is
read. The format is multiprocessing's own (so the worker keeps using its `Connection`): a 4-byte
big-endian signed length, or -1 followed by an 8-byte length for messages of 2 GiB and more.
"""
from __future__ import annotations

import os
import select
import struct
import time
from typing import Callable

CHUNK = 1 << 20


class FrameTimeout(Exception):
    """The deadline passed before the whole frame was read or written."""


class FrameClosed(Exception):
    """The other end closed the connection (or it broke) mid-frame or before one."""


class FrameTooLarge(Exception):
    """The declared length is negative or above the cap."""

    def __init__(self, length: int, cap: int) -> None:
        super().__init__(f"a message declared as {length} bytes, above the {cap}-byte cap")
        self.length = length


def _wait(fd: int, events: int, deadline: float, while_waiting: Callable[[], None]) -> None:
    """Block until `fd` is ready or the deadline passes; `while_waiting` runs every 0.1 s (the
    caller's memory watchdog) and may raise."""
    poller = select.poll()
    poller.register(fd, events)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise FrameTimeout()
        if poller.poll(min(100, max(1, int(remaining * 1000)))):
            return
        while_waiting()


def _read_exactly(fd: int, size: int, deadline: float, while_waiting: Callable[[], None]) -> bytearray:
    data = bytearray()
    while len(data) < size:
        _wait(fd, select.POLLIN, deadline, while_waiting)
        try:
            chunk = os.read(fd, min(CHUNK, size - len(data)))
        except BlockingIOError:
            continue
        except OSError as error:
            raise FrameClosed(str(error)) from error
        if not chunk:
            raise FrameClosed("end of stream")
        data += chunk
    return data


def read_frame(fd: int, cap: int, deadline: float, while_waiting: Callable[[], None] = lambda: None) -> bytes:
    """One message from `fd` (non-blocking), at most `cap` bytes, complete before `deadline`."""
    os.set_blocking(fd, False)
    (length,) = struct.unpack("!i", _read_exactly(fd, 4, deadline, while_waiting))
    if length == -1:
        (length,) = struct.unpack("!Q", _read_exactly(fd, 8, deadline, while_waiting))
    if not 0 <= length <= cap:
        raise FrameTooLarge(length, cap)
    return bytes(_read_exactly(fd, length, deadline, while_waiting))


def write_frame(fd: int, payload: bytes, deadline: float, while_waiting: Callable[[], None] = lambda: None) -> None:
    """Send one message, waiting for a reader that may never drain the pipe only until `deadline`."""
    os.set_blocking(fd, False)
    header = struct.pack("!i", len(payload)) if len(payload) <= 0x7FFFFFFF else struct.pack("!iQ", -1, len(payload))
    view = memoryview(header + payload)
    while view:
        _wait(fd, select.POLLOUT, deadline, while_waiting)
        try:
            view = view[os.write(fd, view[:CHUNK]):]
        except BlockingIOError:
            continue
        except OSError as error:
            raise FrameClosed(str(error)) from error
