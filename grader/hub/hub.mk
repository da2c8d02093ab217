# The class hub (grader/hub/README.md), included by the main Makefile. Run as root: every
# account's server runs as that account. Settings: FXHUB_* variables (grader/hub/settings.py).
# The hub and every server run the hub's own environment, built from the same lock on a Python
# that every account can run (the course's .venv may sit on one only its owner can reach).

HUB_VENV ?= .venv-hub
HUB_PYTHON ?= /usr/bin/python3
HUB_PY := $(HUB_VENV)/bin/python

.PHONY: hub hub-env hub-accounts hub-service hub-remove hub-sizing test-hub

hub: hub-env  ## instructor: a JupyterHub for a class on this machine (accounts, exchange, formgrader)
	$(HUB_PY) grader/hub/classroom.py setup
	$(HUB_VENV)/bin/jupyterhub -f grader/hub/jupyterhub_config.py; status=$$?; \
		$(HUB_PY) grader/hub/classroom.py stop-proxy; exit $$status

# New learners while the hub runs: `make hub-accounts FXHUB_LEARNERS=<all of them>` creates the
# missing accounts, in the learners' system group; they log in at once (no restart).
hub-accounts: hub-env  ## instructor: create the accounts of FXHUB_LEARNERS, also while the hub runs
	$(HUB_PY) grader/hub/classroom.py setup

# The FXHUB_* values of this command line go into the unit: `make hub-service FXHUB_LEARNERS=...`
# (make exports command-line variables to the recipe).
SYSTEMD_UNIT_DIR ?= /etc/systemd/system
hub-service: hub-env  ## instructor: run `make hub` as a systemd service, started at boot (root)
	$(HUB_PY) grader/hub/classroom.py service --unit-dir $(SYSTEMD_UNIT_DIR) --hub-venv $(HUB_VENV)

hub-env:  ## create or refresh the hub's environment $(HUB_VENV) from the lock
	@VENV=$(HUB_VENV) PYTHON=$(HUB_PYTHON) env/setup.sh lab

hub-remove: hub-env  ## instructor: delete the accounts, homes and exchange that `make hub` created
	$(HUB_PY) grader/hub/classroom.py remove

hub-sizing: env  ## instructor: measure grading and a learner's kernel here, print a class's sizing
	$(PY) -m grader.tools.sizing $(SIZING_ARGS)

test-hub: env-test hub-env  ## a whole class cycle on the hub in a real browser (root; CI runs it)
	FXCOURSE_HUB_TEST=1 $(BIN)/pytest $(PYTEST_ARGS) tests/test_hub.py
