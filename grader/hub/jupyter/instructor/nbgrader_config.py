"""nbgrader for an instructor on the class hub: the course folder in their home.

`make hub` (classroom.py) keeps that folder's copy of the course up to date and writes its
nbgrader_config.py, which loads the course's own settings and points them at the shared exchange.
"""

import os

load_subconfig(os.path.join(os.environ["FXHUB_COURSE_DIR"], "nbgrader_config.py"))  # noqa: F821
