"""Derive environment.yml (conda) from env/requirements.lock, so the two can never drift; the
environment is named after the course (course.json).

python env/environment_yml.py > environment.yml
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

LOCK = Path(__file__).with_name("requirements.lock")
# The environment is named after the course (course.json's id).
COURSE_ID = json.loads((Path(__file__).parents[1] / "course.json").read_text())["course_id"]
PYTHON_VERSION = "3.11"

HEADER = f"""\
# Generated from env/requirements.lock by `make environment.yml`; do not edit by hand.
# conda env create -f environment.yml && conda activate {COURSE_ID}
name: {COURSE_ID}
channels:
  - conda-forge
dependencies:
  - python={PYTHON_VERSION}
  - graphviz  # the `dot` binary used for graph pictures
  - pip
  - pip:
"""


def pinned_requirements(lock_text: str) -> list[str]:
    """The requirement lines of a uv/pip-compile lock, without comments or blank lines."""
    lines = (line.split(" #")[0].strip() for line in lock_text.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def render(lock_text: str) -> str:
    pins = "".join(f"      - {pin}\n" for pin in pinned_requirements(lock_text))
    return HEADER + pins


if __name__ == "__main__":
    sys.stdout.write(render(LOCK.read_text()))
