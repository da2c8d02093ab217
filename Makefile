# The course's commands. Start with `make lab` (learners) or `make test` (everything checked).
# Every target that needs Python first runs env/setup.sh, which (re)builds .venv only when
# env/requirements.lock has changed since the last install.

VENV ?= .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
NOTEBOOKS = $(shell git ls-files '*.ipynb' 2>/dev/null || find chapters solutions -name '*.ipynb')
LAB_ARGS ?=
# Jupyter refuses to start as root unless told to (containers, CI machines).
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)
PYTEST_ARGS ?=

.PHONY: help lab test env env-test lock strip check-clean lint format chapters

help:  ## list the targets
	@grep -hE '^[a-z.-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | expand -t 20

lab: env  ## open the course in JupyterLab
	$(BIN)/jupyter lab --ServerApp.root_dir="$(CURDIR)" $(ROOT_FLAG) $(LAB_ARGS) chapters/01_symbolic_tracing.ipynb

test: env-test  ## set up, then run the whole test suite (lint, clean notebooks, every notebook)
	$(BIN)/pytest $(PYTEST_ARGS)

env:  ## create or refresh .venv from the lock (skipped when the lock is unchanged)
	@VENV=$(VENV) env/setup.sh lab

env-test:
	@VENV=$(VENV) env/setup.sh test

lock: env  ## re-resolve env/requirements.in into the lock, then derive environment.yml
	$(BIN)/uv pip compile env/requirements.in --python-version 3.11 --universal -o env/requirements.lock
	$(MAKE) environment.yml

environment.yml: env/requirements.lock env/environment_yml.py  ## derive the conda file from the lock
	python3 env/environment_yml.py > $@

chapters: env  ## regenerate the learner chapters and answers.json from solutions/chapters/
	$(PY) -m fxcourse.authoring build

strip: env  ## remove outputs and execution counts from every notebook (nbgrader metadata kept)
	$(PY) -m fxcourse.notebooks strip $(NOTEBOOKS)

check-clean: env  ## fail when a committed notebook has outputs or execution counts
	$(PY) -m fxcourse.notebooks check $(NOTEBOOKS)

lint: env  ## ruff over the Python code and the notebooks
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: env  ## apply ruff's fixes and formatting
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

.PHONY: bench-fusion
bench-fusion: env  ## benchmark Conv+BN folding on ResNet-18 (CPU, and CUDA when present); prints ratios
	$(PY) -m fxcourse.bench_fusion $(BENCH_ARGS)

# Instructor targets (nbgrader release, autograde, feedback, export) live beside the course they drive.
-include grader/grader.mk
-include grader/hub/hub.mk
