"""Does the worker's memory cgroup count memory that no address-space limit sees, and go away after?"""
import os
import signal

import pytest

from support.capabilities import lacking, needs_root
from grader.sandbox import memory_cgroup

pytestmark = [pytest.mark.unit, needs_root("making a cgroup needs root")]

LIMIT = 64 << 20


def _fill_a_memfd(folder: str | None) -> int:
    """A child that (joins the cgroup and) writes 4 x LIMIT into a memfd it never maps: its wait status."""
    child = os.fork()
    if child == 0:
        try:
            if folder:
                memory_cgroup.join(folder)
            hoard = os.memfd_create("hoard")
            block = b"x" * (1 << 20)
            for _ in range(4 * LIMIT >> 20):
                os.write(hoard, block)
        finally:
            os._exit(0)
    return os.waitpid(child, 0)[1]


@pytest.fixture
def cgroup(monkeypatch):
    monkeypatch.setattr(memory_cgroup, "OVERHEAD_BYTES", 0)
    folder, why = memory_cgroup.create(LIMIT)
    if folder is None:
        lacking("cgroup", f"no memory cgroup here: {why}")
    yield folder
    memory_cgroup.remove(folder)
    assert not os.path.exists(folder)


def test_pages_of_an_unmapped_memfd_are_charged_to_the_worker(cgroup):
    assert os.waitstatus_to_exitcode(_fill_a_memfd(None)) == 0, "outside a cgroup, the hoard fits this machine"
    status = _fill_a_memfd(cgroup)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, status  # what the parent reports as memory-limit


def test_a_cgroup_is_made_only_where_it_can_be(monkeypatch):
    monkeypatch.setattr(memory_cgroup, "CGROUP_ROOT", "/nonexistent")
    assert memory_cgroup.create(LIMIT) == (None, "cannot create one: No such file or directory")
