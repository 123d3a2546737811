"""The grading's secret, from which every probe's values, shapes, reference weights and dropout draws are seeded
(`Context.generator`, `Context.seed`, `Context.sizes`).

Anyone may read the private grader; nobody can know its inputs ahead of a grading, so a graph that carries
answers for them (a lookup table) has nothing to look up. The secret of a hand-in is its source hashed under
this machine's grading key (`KEY_FILE`: 32 bytes from the operating system, made once, readable by its owner
alone, ignored by git, and out of the worker's sight behind its new root and uid): the same hand-in is graded on
the same inputs every time, so a report says the same words on every run and under any `--jobs`, while another
hand-in, or the same one on another machine, meets other inputs. Where the key cannot be kept (a read-only
install), each process draws one of its own. The secret stays in the parent: the worker traces on decoys
(`student_code`), and neither the report nor its cache key holds it. Every verdict must therefore be the same
whatever it is; `tests/checks/test_secret_inputs.py` grades the same hand-ins under two secrets.
"""
from __future__ import annotations

import functools
import hashlib
import os
import secrets
import sys
from pathlib import Path

FIXED_FOR_TESTS: int | None = None
"""A secret the test suite may set (monkeypatch) where a test needs the same inputs every time; refused outside
a pytest session, so no grading can be made to run on inputs someone knows."""


KEY_FILE = Path(__file__).resolve().parents[2] / ".grading-key"
"""This machine's grading key, in the course folder (the repository root)."""


def draw(source: str | None = None) -> int:
    """The secret of a grading of `source`: its hash under this machine's key; a fresh one from the operating
    system where no source is named; the suite's fixed one, inside pytest only."""
    if FIXED_FOR_TESTS is not None:
        if "pytest" not in sys.modules:
            raise RuntimeError("a fixed grading secret is for the test suite only: no grading runs on known inputs")
        return FIXED_FOR_TESTS
    if source is None:
        return secrets.randbits(64)
    digest = hashlib.blake2b(source.encode("utf-8", "surrogatepass"), key=_machine_key(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


@functools.lru_cache(maxsize=1)
def _machine_key() -> bytes:
    """The key in `KEY_FILE`, made on first use (written aside, then linked into place, so two processes making it
    at once agree on the one that landed); a key of this process's own where the folder cannot hold one."""
    try:
        return _read_key()
    except OSError:
        pass
    aside = KEY_FILE.with_name(f".grading-key.{os.getpid()}")
    try:
        descriptor = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as out:
            out.write(secrets.token_bytes(32))
        try:
            os.link(aside, KEY_FILE)
        except FileExistsError:
            pass
        finally:
            aside.unlink()
        return _read_key()
    except OSError:
        return secrets.token_bytes(32)


def _read_key() -> bytes:
    key = KEY_FILE.read_bytes()
    if len(key) != 32:
        raise OSError(f"{KEY_FILE} does not hold a key")
    return key


def seed(secret: int, *label: str | int) -> int:
    """The seed a `label` (what it seeds, and its place in a check's own numbering) gets under `secret`: 63 bits
    that tell nothing of the secret or of another label's seed."""
    digest = hashlib.blake2b(repr((secret, *label)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1
