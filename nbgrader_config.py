"""nbgrader reads this file when it starts in the repository root (the instructor's make targets,
the formgrader in `make formgrader`). The course's settings live in grader/nbgrader_config.py.
"""

import os

load_subconfig(os.path.join(os.path.dirname(__file__), "grader", "nbgrader_config.py"))  # noqa: F821
