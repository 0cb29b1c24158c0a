# Shortcuts for what .ci/run does, one step at a time, in the project's venv (.venv).
# `make ci` is CI itself: fresh venvs, every Python it tests, the benchmarks' smoke run.
# The recipes are .ci/run's commands; change them there first, then here.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: venv install test lint format ci bench-smoke

# CONTRIBUTING.md's install step, the README's with the test extra (over an existing
# .venv it only installs: CI starts afresh).
venv:
	$(PYTHON) -m venv $(VENV) && $(BIN)/pip install -q -e '.[test]'

install: venv

# The README's test command.
test:
	$(BIN)/python -m pytest -q -n auto

# ruff (checks and formatting) and mypy as pyproject.toml configures them, as .ci/run
# runs them. `make format` formats the tree as the check wants it.
lint:
	$(BIN)/ruff check extractor tests
	$(BIN)/ruff format --check extractor tests bench fixtures docs
	$(BIN)/mypy extractor

format:
	$(BIN)/ruff format extractor tests bench fixtures docs

ci:
	bash .ci/run

# The benchmarks at a reduced size: that they run, no target (BENCHMARKS.md).
bench-smoke:
	$(BIN)/python bench/run.py --smoke
