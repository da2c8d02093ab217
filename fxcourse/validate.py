"""How long a learner's Validate (`nbgrader validate`, the lab's Validate button) lets one cell
run, declared once, in the learner's package, since the student edition has no grader: the
workspace's nbgrader settings (fxcourse.workspace), the student edition's and the course's
chapters/exercises/ all apply it through ``configure``. The grader's layout test holds it at or
above the grader's own cell_timeout (grader/safegrade/grading_limits.py): Validate warns, it does
not score, and there the first cell imports torch from cold (about 10 s on a busy hub, more on a
shared laptop), which the grader's sandbox has done before any cell runs.
"""

from __future__ import annotations

from traitlets import Float
from traitlets.config import Configurable


class ValidateLimits(Configurable):
    """The limits of a learner's Validate (an nbgrader configuration may set them)."""

    cell_timeout = Float(120.0, help="Seconds one cell may run in a learner's Validate")
    cell_timeout.tag(config=True, unit="s")


def configure(c) -> None:
    """nbgrader's per-cell timeout in an nbgrader configuration `c`, from ValidateLimits."""
    c.Execute.timeout = ValidateLimits(config=c).cell_timeout
