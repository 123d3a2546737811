# Everything runs from the repo root with the virtual environment at .venv/.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# The CPU build of torch; a GPU machine installs its CUDA torch into .venv first (see README).
TORCH_SPEC ?= torch==2.13.0
STAMP := $(VENV)/.installed

.PHONY: venv build test test-fast test-setup demo release-solutions clean-demo

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q "$(TORCH_SPEC)"
	$(PY) -m pip install -q -e ".[dev]"
	touch $(STAMP)

build: $(STAMP)
	$(PY) -m grader build

# Every tier (README, *Developing*): what CI runs.
test: $(STAMP) test-setup
	$(PY) -m pytest -q

# The unit tier: no sandbox, no nbgrader, no browser.
test-fast: $(STAMP)
	$(PY) -m pytest -q -m unit

# What the e2e tier needs beyond .venv (Chromium, PostgreSQL, a Colab-like venv): installed once, then skipped.
test-setup: $(STAMP)
	$(PY) tests/e2e_tools.py

demo: $(STAMP)
	$(PY) -m grader demo

# FORCE=1 releases although some submissions are not autograded (python -m grader release-solutions --force).
release-solutions: $(STAMP)
	$(PY) -m grader release-solutions attention $(if $(FORCE),--force)

clean-demo:
	rm -rf demo artifacts
