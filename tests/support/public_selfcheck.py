"""release/attention's self-check as `python -m pytest` runs it there, loaded into a test's own process."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from support.paths import ROOT

RELEASE = ROOT / "release" / "attention"  # as built: the rules table is copied in


def load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_public():
    """(selfcheck.py, its pytest loader conftest.py, which imports `selfcheck`), from release/attention/."""
    sys.path.insert(0, str(RELEASE))
    try:
        selfcheck = load("selfcheck", RELEASE / "selfcheck.py")
        sys.modules["selfcheck"] = selfcheck
        loader = load("public_selfcheck_conftest", RELEASE / "conftest.py")
    finally:
        sys.path.remove(str(RELEASE))
        sys.modules.pop("selfcheck", None)
    return selfcheck, loader
