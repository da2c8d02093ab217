# The course's commands. Start with `make lab` (learners) or `make test` (everything checked).
# Every target that needs Python first runs env/setup.sh, which (re)builds .venv only when
# env/requirements.lock has changed since the last install.

VENV ?= .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
NOTEBOOKS = $(shell git ls-files '*.ipynb' 2>/dev/null || find chapters solutions -name '*.ipynb')
# Jupyter refuses to start as root unless told to (containers, CI machines).
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)
PYTEST_ARGS ?=
# pytest-xdist workers; tests that share a server or a gradebook are grouped (xdist_group).
TEST_WORKERS ?= 2
.DEFAULT_GOAL := help

.PHONY: help formgrader test env-test lock strip check-clean lint format chapters student-edition

# lab, workspace, env: the learner's targets, shared with the student edition.
include env/learner.mk

help:  ## list the targets
	@grep -hE '^[a-z.-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/:.*## /\t/' | expand -t 20

# The formgrader's lab as the class hub's: the course kernel only, no news or update prompts.
COURSE_KERNEL = $(shell python3 -c 'import json; print(json.load(open("course.json"))["kernel"]["name"])')
FORMGRADER_LAB = --KernelSpecManager.allowed_kernelspecs=$(COURSE_KERNEL) \
	--MultiKernelManager.default_kernel_name=$(COURSE_KERNEL) \
	--LabApp.app_settings_dir="$(CURDIR)/grader/hub/jupyter/lab-settings"
formgrader: env  ## instructor: JupyterLab at the repository root, with nbgrader's formgrader
	@$(PY) -m fxcourse.workspace exchange >/dev/null
	$(BIN)/jupyter lab --ServerApp.root_dir="$(CURDIR)" $(FORMGRADER_LAB) $(ROOT_FLAG) $(LAB_ARGS)

test: env-test  ## set up, then run the test suite (lint, clean notebooks, grading, browser) but the end-to-end repeats
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadgroup -m "not end_to_end" $(PYTEST_ARGS)

.PHONY: test-end-to-end
test-end-to-end: env-test  ## what make test leaves out (CI runs it): chapters 6-12's try-its, plain nbgrader's grading
	$(BIN)/pytest -n $(TEST_WORKERS) --dist loadgroup -m end_to_end $(PYTEST_ARGS)

.PHONY: test-checkpoints
test-checkpoints: env-test  ## every checkpoint: the answer passed on 20 runs of fresh cases, each mistake refused on 3 (slow)
	FXCOURSE_ANSWER_RUNS=$(or $(ANSWER_RUNS),20) FXCOURSE_MISTAKE_RUNS=$(or $(MISTAKE_RUNS),3) \
	FXCOURSE_CASE_SEEDS=$(or $(ANSWER_RUNS),20) FXCOURSE_CHECK_SEEDS=$(or $(ANSWER_RUNS),20) \
		$(BIN)/pytest -n $(TEST_WORKERS) tests/test_compiler_cases.py tests/test_depth_checkpoints.py \
		tests/test_early_checkpoints.py tests/test_fusion_checkpoints.py tests/test_tryits.py \
		tests/test_export_cases.py tests/test_practice_cases.py tests/test_dynamo_cases.py \
		-k "checkpoints_say or compiler_cases or depth_checkpoints or early_checkpoints or fusion_checkpoints or export_cases or practice_cases or dynamo_cases" \
		$(PYTEST_ARGS)

env-test:
	@VENV=$(VENV) env/setup.sh test

# jsonschema's optional IRI syntax check (jupyter-events asks for it): it builds a Lark grammar
# whenever nbformat is imported, 2-4 s of every grader command, kernel manager and nbgrader step.
# Without it jsonschema skips the "iri" format, which no schema of the course's tools relies on.
LOCK_LEFT_OUT = --no-emit-package lark --no-emit-package rfc3987-syntax
lock: env  ## re-resolve env/requirements.in into the lock, then derive environment.yml
	$(BIN)/uv pip compile env/requirements.in --python-version 3.11 --universal $(LOCK_LEFT_OUT) \
		-o env/requirements.lock
	$(MAKE) environment.yml

environment.yml: env/requirements.lock env/environment_yml.py course.json  ## derive the conda file from the lock
	python3 env/environment_yml.py > $@

student-edition: env  ## dist/student-edition/: the learners' copy (ANSWERS=no: no try-it answers; LANG=zh: Chinese README first)
	$(PY) -m courseware.edition $(if $(filter no,$(ANSWERS)),--no-answers) --language $(COURSE_LANGUAGE)

chapters: env  ## regenerate the learner chapters and answers.json from solutions/
	$(PY) -m courseware.authoring build

strip: env  ## remove outputs and execution counts from every notebook (nbgrader metadata kept)
	$(PY) -m courseware.notebooks strip $(NOTEBOOKS)

check-clean: env  ## fail when a committed notebook has outputs or execution counts
	$(PY) -m courseware.notebooks check $(NOTEBOOKS)

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

.PHONY: site
site: env  ## dist/site/: the course as a website (chapters executed, cached in build/site/)
	$(PY) -m courseware.website build

.PHONY: translations test-site
translations: env  ## after editing an English source: bring the catalogs of every translation (fxcourse/languages.py) up to date
	$(PY) -m courseware.i18n update

test-site: env-test site  ## build the website, then read it in a real browser (CI runs it)
	FXCOURSE_SITE_TEST=1 $(BIN)/pytest $(PYTEST_ARGS) tests/test_website.py tests/test_site.py
	FXCOURSE_SITE_TEST=1 $(BIN)/pytest -n $(TEST_WORKERS) $(PYTEST_ARGS) tests/test_site_english.py

# A variable on the command line that no makefile reads is refused when it is a slip of one that
# is read (`make autograde SUBMISSION=...` would grade what is already there), else warned about.
GIVEN_VARIABLES := $(foreach name,$(.VARIABLES),$(if $(filter command line,$(origin $(name))),$(name)))
ifneq ($(and $(strip $(GIVEN_VARIABLES)),$(wildcard grader/make_variables.py)),)
$(eval $(shell python3 grader/make_variables.py $(MAKEFILE_LIST) -- $(GIVEN_VARIABLES)))
endif
