"""nbgrader for an instructor on the class hub: the course folder in their home.

`make hub` (classroom.py) keeps that folder's copy of the course up to date, its course.json naming
the shared exchange; its nbgrader_config.py is the course's own, which takes the exchange from the
Course (grader/course.py).
"""

import os

load_subconfig(os.path.join(os.environ["FXHUB_COURSE_DIR"], "nbgrader_config.py"))  # noqa: F821
