# Instructor targets for the three graded exercises (nbgrader), included by the main Makefile.
# Working folders (grader/release, submitted, autograded, feedback, exports, gradebook.db) are
# git-ignored. AUTOGRADE is the grading step alone: point it at another grader to swap it.

GRADER := $(PY) grader/course_grader.py
# Grading runs learners' code only in a sandbox, whichever way it is started (grader/safegrade/
# README.md): this parallel batch, `nbgrader autograde`, or the formgrader's Autograde button.
# Limits: grader/nbgrader_config.py. Unsandboxed, at your own risk:
#   nbgrader autograde "*" --SandboxExecute.unsandboxed=True
AUTOGRADE ?= $(PY) -m grader.safegrade autograde
SUBMISSIONS ?=

.PHONY: release gradebook autograde feedback export bench-grading

release: env  ## instructor: student versions into chapters/exercises + gradebook entries
	$(GRADER) release

gradebook: env  ## instructor: gradebook entries and grader/release/ only (chapters untouched)
	$(GRADER) release --no-publish

autograde: gradebook  ## instructor: grade SUBMISSIONS=dir (<student>/<assignment>/<assignment>.ipynb), sandboxed
	$(if $(SUBMISSIONS),$(GRADER) collect "$(SUBMISSIONS)")
	$(AUTOGRADE)

feedback: env  ## instructor: HTML feedback for every graded submission, in grader/feedback
	$(GRADER) feedback

export: env  ## instructor: grades to grader/exports/grades.csv, one column per exercise
	$(GRADER) export

bench-grading: env  ## instructor: plain nbgrader autograde vs make autograde; BENCH_ARGS="--n 32"
	$(PY) -m grader.safegrade.bench $(BENCH_ARGS)
