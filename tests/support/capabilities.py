"""What a test needs from the machine (root, a writable cgroup, Chromium, PostgreSQL), and what it does without.

CI declares the capabilities it provides (.ci/run): with ATTENTION_KIT_CI_EXPECTS=root,cgroup,chromium,postgresql,
a test that would skip for one of those, missing, fails instead and names it, so a CI machine that lost one is
red, not green with fewer tests. Without the variable (a contributor's laptop) such a test skips, listed by -ra.
Every skip for a capability goes through `lacking` (or the `needs_root` mark, which calls it).
"""
import os
from typing import NoReturn

import pytest

CI_EXPECTS_ENV = "ATTENTION_KIT_CI_EXPECTS"
CAPABILITIES = ("root", "cgroup", "chromium", "postgresql")


def expected_capabilities() -> set[str]:
    named = {name.strip() for name in os.environ.get(CI_EXPECTS_ENV, "").split(",") if name.strip()}
    unknown = named - set(CAPABILITIES)
    if unknown:
        raise pytest.UsageError(f"{CI_EXPECTS_ENV} names {', '.join(sorted(unknown))}: "
                                f"the capabilities are {', '.join(CAPABILITIES)}")
    return named


def lacking(capability: str, reason: str) -> NoReturn:
    """This test cannot run without `capability`: it skips, or fails where CI expects the capability."""
    assert capability in CAPABILITIES, capability
    if capability in expected_capabilities():
        pytest.fail(f"{CI_EXPECTS_ENV} expects {capability}, and it is missing here: {reason}", pytrace=False)
    pytest.skip(f"needs {capability}: {reason}")


def needs_root(reason: str) -> pytest.MarkDecorator:
    """A test (or, as `pytestmark`, a module) that runs only as root: skipped, or failed where CI expects root."""
    return pytest.mark.needs_root(reason=reason)
