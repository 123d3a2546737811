"""Fixtures of the sandbox's tests."""
from pathlib import Path

import pytest

from support import e2e_tools


@pytest.fixture(scope="module")
def user_python() -> Path:
    python = e2e_tools.unprivileged_python()
    if python is None:
        pytest.skip(f"no venv of {e2e_tools.SYSTEM_PYTHON} at {e2e_tools.UNPRIVILEGED_VENV}: {e2e_tools.SETUP_HINT}")
    return python
