"""The grading's secret: one number drawn from the operating system per grading, from which every probe's
values, reference weights and dropout draws are seeded (`Context.generator`, `Context.seed`).

Anyone may read the private grader; nobody can know its inputs ahead of a grading, so a graph that carries
answers for them (a lookup table) has nothing to look up. The secret stays in the parent: the worker traces on
decoys (`student_code`), and neither the report nor its cache key holds it. Every verdict must therefore be
the same whatever it is; `tests/checks/test_secret_inputs.py` grades the same hand-ins under two secrets.
"""
from __future__ import annotations

import hashlib
import secrets
import sys

FIXED_FOR_TESTS: int | None = None
"""A secret the test suite may set (monkeypatch) where a test needs the same inputs every time; refused outside
a pytest session, so no grading can be made to run on inputs someone knows."""


def draw() -> int:
    """A fresh secret from the operating system (or the suite's fixed one, inside pytest only)."""
    if FIXED_FOR_TESTS is not None:
        if "pytest" not in sys.modules:
            raise RuntimeError("a fixed grading secret is for the test suite only: no grading runs on known inputs")
        return FIXED_FOR_TESTS
    return secrets.randbits(64)


def seed(secret: int, *label: str | int) -> int:
    """The seed a `label` (what it seeds, and its place in a check's own numbering) gets under `secret`: 63 bits
    that tell nothing of the secret or of another label's seed."""
    digest = hashlib.blake2b(repr((secret, *label)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1
