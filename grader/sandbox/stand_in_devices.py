"""The device objects a stand-in's `.device` reads as through the guard (grader/sandbox/guard.py): fresh per read, as
a real tensor's are, and known again when the code passes one back to torch."""
from __future__ import annotations

import sys

import torch

GPU = torch.device("cuda", 0)


class StandInDevices:
    """What a meta tensor's `.device` reads as: `cuda:0`, a fresh object per read as a real tensor gives
    (`Q.device is Q.device` is False on a GPU; one shared object told both stand-ins apart), each known as one of
    ours when passed back to torch, where the device probe (grader/sandbox/probes.py) maps it to meta: so
    `device=Q.device` follows the input while a "cuda" the code wrote still fails. An object nobody but this list
    holds any longer is handed out again: a device the code dropped is freed on a GPU and the next read's lands
    at its address (`id(Q.device) == id(Q.device)` is True there too), and each object stays ours for good."""

    def __init__(self) -> None:
        self._held: list[torch.device] = []
        self._ids: set[int] = set()
        for device in [torch.device("cuda", 0)]:  # the count of an object only the loop below holds
            self._unheld = sys.getrefcount(device)

    def read(self, like: torch.device = GPU) -> torch.device:
        """A device object equal to `like` that nobody else holds."""
        for device in self._held:
            if sys.getrefcount(device) <= self._unheld and device == like:
                return device
        device = torch.device(like.type, like.index)
        self._held.append(device)
        self._ids.add(id(device))
        return device

    def ours(self, value) -> bool:
        return id(value) in self._ids  # held for good, so no other object ever has the id


STAND_IN_DEVICES = StandInDevices()
FAKE_TENSOR_DEVICES = StandInDevices()
"""A FakeTensor's `.device` the same way, for its own device (`cuda:0`, or the CPU of a mask made without
`device=`): it keeps one object of its own. torch takes these as they are."""
