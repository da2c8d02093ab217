# Instructor targets for the graded exercises (nbgrader), included by the main Makefile.
# The class data (nbgrader's release, submitted, autograded, feedback, exports, exchange, the
# gradebook and the grading secret) lives in classdata/, git-ignored and outside every package;
# CLASSDATA=folder moves it (relative to the course, or absolute). AUTOGRADE is the grading step
# alone: point it at another grader to swap it.
CLASSDATA ?=
ifneq ($(CLASSDATA),)
export FXCOURSE_CLASSDATA := $(CLASSDATA)
endif

GRADER := $(PY) grader/course_grader.py
# Grading runs learners' code only in a sandbox, whichever way it is started (grader/safegrade/
# README.md): this parallel batch, `nbgrader autograde`, or the formgrader's Autograde button.
# Limits: grader/nbgrader_config.py. Unsandboxed, at your own risk:
#   nbgrader autograde "*" --SandboxExecute.unsandboxed=True
# GRADING_WORKERS=N: N sandboxes side by side (default: one per core); 1 grades one at a time.
GRADING_WORKERS ?=
AUTOGRADE ?= $(PY) -m grader.safegrade autograde $(if $(GRADING_WORKERS),--workers $(GRADING_WORKERS))
SUBMISSIONS ?=
# ASSIGNMENT=<exercise> limits autograde and export to one exercise (default: all).
ASSIGNMENT ?=
# LMS downloads: LMS=plain|canvas|moodle|blackboard picks a file-name pattern (default: the one in
# grader/nbgrader_config.py); LMS_TZ is the time zone of times written in file names.
LMS ?=
LMS_TZ ?= UTC
COLLECT = $(GRADER) collect "$(SUBMISSIONS)" --timezone "$(LMS_TZ)" $(if $(LMS),--lms $(LMS))
# ASSIGNMENT=<name> limits collect (from the exchange), feedback and release-feedback to one
# exercise.
ASSIGNMENT ?=
ONE_ASSIGNMENT = $(if $(ASSIGNMENT),--assignment "$(ASSIGNMENT)")

.PHONY: release gradebook collect autograde feedback release-feedback export bench-grading
.PHONY: report similarity

# nbgrader's two "release"s: this target is the formgrader's *Generate* (student versions); its
# *Release* button (nbgrader release_assignment) hands an exercise out through the exchange.
release: env  ## instructor: generate student versions (formgrader's Generate) + gradebook entries
	$(GRADER) release

gradebook: env  ## instructor: gradebook entries and classdata/release/ only (chapters untouched)
	$(GRADER) release --no-publish $(ONE_ASSIGNMENT)

# Whatever could be collected is graded; then make fails if some file of SUBMISSIONS was not
# collected (each is listed, with the reason, before the grading log), or if nothing at all is
# there to grade (`submitted` names what is missing).
autograde: gradebook  ## instructor: grade SUBMISSIONS=folder or .zip (layouts: README), LMS=...
	@status=0; $(if $(SUBMISSIONS),$(COLLECT) || status=$$?; [ $$status -lt 2 ] || exit $$status;) \
	$(GRADER) submitted $(ASSIGNMENT) || exit $$?; \
	$(AUTOGRADE) $(ASSIGNMENT) || exit $$?; \
	[ $$status -eq 0 ] || echo "make autograde: not everything was collected (see above)" >&2; \
	exit $$status

feedback: env  ## instructor: HTML feedback for every graded submission, in classdata/feedback
	$(GRADER) feedback $(ONE_ASSIGNMENT)

# From nbgrader's exchange (the hub's, or classdata/exchange): the student is the owner of the
# inbound folder, the time the one the system recorded, links never followed (README).
collect: env  ## instructor: submissions from the exchange (or SUBMISSIONS=...) into classdata/submitted
	$(if $(SUBMISSIONS),$(COLLECT),$(GRADER) collect $(ONE_ASSIGNMENT))

release-feedback: env  ## instructor: feedback through the exchange; names those it cannot release
	$(GRADER) release-feedback $(ONE_ASSIGNMENT)

export: env  ## instructor: classdata/exports/grades.csv (per exercise) and grades_by_test.csv (per test)
	$(GRADER) export $(ASSIGNMENT)

bench-grading: env  ## instructor: plain nbgrader autograde vs make autograde; BENCH_ARGS="--n 32"
	$(PY) -m grader.tools.bench $(BENCH_ARGS)

# PROGRESS=file.json adds the learners' try-it progress (the class hub's progress data).
PROGRESS ?=
report: env  ## instructor: classdata/reports/report.html + CSV: the class per exercise (after autograde)
	$(PY) -m grader.report $(if $(PROGRESS),--progress "$(PROGRESS)")

similarity: env  ## instructor: classdata/reports/similarity.html + .csv: pairs of unusually alike answers
	$(PY) -m grader.similarity
