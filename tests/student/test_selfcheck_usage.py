"""Does the published self-check say in one line what is wrong with how it was called?"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from support.paths import ROOT

pytestmark = pytest.mark.unit

RELEASE = ROOT / "release" / "attention"


def test_attention_impl_naming_no_file_is_one_line_not_a_traceback(tmp_path):
    folder = tmp_path / "attention"
    shutil.copytree(RELEASE, folder)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["ATTENTION_IMPL"] = "nosuch.ipynb"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=folder, env=env,
                          capture_output=True, text=True, timeout=300)
    said = done.stdout + done.stderr
    assert done.returncode == 4, said  # pytest's usage error
    assert "no file to check: nosuch.ipynb (ATTENTION_IMPL)" in said
    assert "Traceback" not in said and len(said.splitlines()) < 5, said
