"""The course's rule for late work, as an nbgrader late-submission plugin.

nbgrader's autograde compares a submission's time (its timestamp.txt) with the assignment's due
date in the gradebook (plus any extension) and, when it is late, asks the configured plugin
(`c.AssignLatePenalties.plugin_class`) for each notebook's penalty, which the export subtracts.
"""

from __future__ import annotations

import math

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Float


class PercentPerDayLate(LateSubmissionPlugin):
    """Deduct `percent_per_day` of the notebook's score for every started day past the due date
    (1 minute late costs one day's share), never more than the score itself."""

    percent_per_day = Float(10.0, help="percent of the score lost per started day late").tag(
        config=True
    )

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float):
        days = math.ceil(total_seconds_late / 86400)
        return min(score, score * days * self.percent_per_day / 100)
