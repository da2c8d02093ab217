"""nbgrader reads this file when it starts in this folder (`nbgrader validate NOTEBOOK` run here):
it applies the course's settings, among them a cell timeout long enough to import torch.
"""

import os

from fxcourse import validate

load_subconfig(os.path.join(os.path.dirname(__file__), "..", "..", "nbgrader_config.py"))  # noqa: F821

# A Validate here imports torch from cold in its first cell: allow what a learner's workspace
# allows (fxcourse/validate.py), not nbgrader's 30 s. Grading sets its own (cell_timeout).
validate.configure(c)  # noqa: F821
