# The learner's targets, shared by the course's Makefile and the student edition's (one source).
# Needs VENV, BIN, PY and ROOT_FLAG from the including Makefile.

# The course's language: a translation of fxcourse/languages.py when your locale is in it
# (LANG=zh_CN.UTF-8: Simplified Chinese) or when asked (`make lab LANG=zh`), English otherwise.
COURSE_LANGUAGE := $(or $(shell python3 -m fxcourse.languages for-locale "$(LANG)" 2>/dev/null),en)
TRANSLATED_LANGUAGE := $(filter-out en,$(COURSE_LANGUAGE))
# The learner's own copies of the chapters and exercises (git-ignored; `make lab` creates it),
# one folder per language: workspace/, workspace-zh/, ...
WORKSPACE ?= workspace$(if $(TRANSLATED_LANGUAGE),-$(TRANSLATED_LANGUAGE))
# WORKSPACE=~/fx-work: a shell leaves a ~ after = as it is (sh, zsh), so it is expanded here.
override WORKSPACE := $(patsubst ~/%,$(HOME)/%,$(WORKSPACE))
# JupyterLab's own interface in that language (the workspace holds its language setting).
LAB_SETTINGS_ENV := $(if $(TRANSLATED_LANGUAGE),JUPYTERLAB_SETTINGS_DIR="$(WORKSPACE)/.fxcourse/lab-settings")
LAB_ARGS ?=
# The page the lab and the URL it prints open on (not the Launcher); here, not in
# env/jupyter-learner/, whose settings the hub's learners share (their chapters are elsewhere).
# The same as fxcourse.workspace.START_PAGE, where the hub's learners land (a test compares them).
START_PAGE := 01_symbolic_tracing.ipynb
# nbgrader's instructor tools (formgrader, create-assignment) stay off in the learner's lab.
LEARNER_JUPYTER_CONFIG := $(CURDIR)/env/jupyter-learner

.PHONY: lab workspace progress env

# A lab already open on the workspace is named (its address), not started a second time; its
# lab extension (fxcourse/lab_updates.py) merges course updates into the notebooks open in it.
lab: workspace  ## open the course in JupyterLab, in your own workspace (see `make workspace`)
	@$(PY) -m fxcourse.lab_link running "$(WORKSPACE)" --language $(COURSE_LANGUAGE) || \
	JUPYTER_CONFIG_PATH="$(LEARNER_JUPYTER_CONFIG)" $(LAB_SETTINGS_ENV) \
		FXCOURSE_LANGUAGE=$(COURSE_LANGUAGE) $(BIN)/jupyter lab \
		--ServerApp.root_dir="$(WORKSPACE)" --LabApp.default_url=/lab/tree/$(START_PAGE) \
		--LabApp.extra_labextensions_path="$(LEARNER_JUPYTER_CONFIG)/labextensions" \
		$(ROOT_FLAG) $(LAB_ARGS) "$(WORKSPACE)/$(START_PAGE)"

workspace: env  ## create workspace/ (workspace-zh/ with LANG=zh, ...) or bring new chapters into it (your edits are kept, also unsaved ones in an open lab)
	$(PY) -m fxcourse.workspace sync --workspace "$(WORKSPACE)" --language $(COURSE_LANGUAGE)

progress: env  ## which try-its and exercises you have passed (as the checks said when they last ran)
	$(PY) -m fxcourse.progress --language $(COURSE_LANGUAGE) "$(WORKSPACE)"

env:  ## create or refresh .venv from the lock (skipped when the lock is unchanged)
	@VENV=$(VENV) env/setup.sh lab
