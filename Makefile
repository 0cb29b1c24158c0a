# Shortcuts for what .ci/run does, one step at a time, in the project's venv (.venv).
# `make ci` is CI itself: fresh venvs, every Python it tests, the benchmarks' smoke run.
# The recipes are .ci/run's commands; change them there first, then here.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: venv install test lint ci bench-smoke

# The README's install step (over an existing .venv it only installs: CI starts afresh).
venv:
	$(PYTHON) -m venv $(VENV) && $(BIN)/pip install -q -e '.[test]'

install: venv

# The README's test command.
test:
	$(BIN)/python -m pytest -q -n auto

# ruff and mypy on extractor/ as pyproject.toml configures them, as .ci/run runs them;
# then ruff's formatting check, last: it fails until the tree is formatted in one
# commit, and .ci/run does not run it yet.
lint:
	$(BIN)/ruff check extractor
	$(BIN)/mypy extractor
	$(BIN)/ruff format --check extractor

ci:
	bash .ci/run

# The benchmarks at a reduced size: that they run, no target (BENCHMARKS.md).
bench-smoke:
	$(BIN)/python bench/run.py --smoke
