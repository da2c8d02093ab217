"""nbgrader reads this file when it starts in this folder (`nbgrader validate NOTEBOOK` run here):
it applies the course's settings, among them a cell timeout long enough to import torch.
"""

import os

load_subconfig(os.path.join(os.path.dirname(__file__), "..", "..", "nbgrader_config.py"))  # noqa: F821
