# Everything runs from the repo root with the virtual environment at .venv/.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# The CPU build of torch; a GPU machine installs its CUDA torch into .venv first (see docs/developing.md).
TORCH_SPEC ?= torch==2.13.0
STAMP := $(VENV)/.installed

.PHONY: help venv torch-into-venv build test test-fast test-setup demo release-solutions clean-demo

help:  ## what each target does (the first target: plain `make` prints this)
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | expand -t 20

venv: $(STAMP)  ## create .venv/ (CPU torch, nbgrader, Jupyter); the other targets do it when missing

# uv installs the rest in seconds where pip takes a minute; pip installs torch, because pip alone
# looks where a machine keeps a local torch wheel (pip's find-links) and uv would download a build.
UV_SPEC ?= uv==0.13.9
PURELIB = $$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -c "import torch" 2>/dev/null || $(MAKE) --no-print-directory torch-into-venv
	$(PY) -m pip install -q "$(UV_SPEC)"
	$(PY) -m uv pip install -q --compile-bytecode --python $(PY) -e ".[dev]"
	touch $(STAMP)

# Compiled on every core instead of pip's one (a process that imports torch without .pyc files
# spends 3 s more, and PYTHONDONTWRITEBYTECODE may forbid writing them later). Errors are ignored
# as pip ignores them: a few of torch's own test files are written for a newer Python.
torch-into-venv:  ## a step of venv: the CPU torch (TORCH_SPEC) into .venv/, compiled on every core
	$(PY) -m pip install -q --no-compile "$(TORCH_SPEC)"
	$(PY) -m compileall -qq -j 0 "$(PURELIB)" || true

build: $(STAMP)  ## regenerate release/, exercises/, solutions/ from source/ (python -m grader build)
	$(PY) -m grader build

test: $(STAMP) test-setup  ## every test tier: what CI runs (docs/developing.md)
	$(PY) -m pytest -q -n 2 --dist loadfile

test-fast: $(STAMP)  ## the unit tier: no sandbox, no nbgrader, no browser
	$(PY) -m pytest -q -m unit -n 2

test-setup: $(STAMP)  ## install once what the slow tiers need (Chromium, PostgreSQL, two venvs); skipped when there
	$(PY) tests/support/e2e_tools.py

demo: $(STAMP)  ## build, grade a demo class of Colab downloads per assignment with nbgrader in demo/, print the grades
	$(PY) -m grader demo

# One assignment at a time, named: releasing one lab's solutions never publishes another's that is still being
# graded. FORCE=1 releases although some submissions are not autograded (python -m grader release-solutions --force).
release-solutions: $(STAMP)  ## publish ASSIGNMENT's solutions into release/ once its every submission is graded (FORCE=1)
	$(if $(ASSIGNMENT),,$(error name the assignment: make release-solutions ASSIGNMENT=attention (or kv_cache)))
	$(PY) -m grader release-solutions $(ASSIGNMENT) $(if $(FORCE),--force)

clean-demo:  ## remove demo/ and artifacts/
	rm -rf demo artifacts
