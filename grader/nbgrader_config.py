"""nbgrader settings of the course's graded exercises (the instructor side).

The course root is the repository root: the source notebooks (with solutions and hidden tests) are
in solutions/<assignment>/, nbgrader's working folders and gradebook under grader/ (git-ignored).
nbgrader reads the repository root's nbgrader_config.py, which loads this file, whenever it starts
there: the instructor's make targets (grader/grader.mk) and the formgrader in `make lab` do.
"""

import os
import sys
from pathlib import Path

GRADER = Path(__file__).resolve().parent
ROOT = GRADER.parent
for folder in (GRADER, ROOT):  # course_grader (the layout) and grader.safegrade
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
# nbgrader's gradebook runs the `alembic` command; make and `make lab` do not activate the venv.
os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])

import course_grader as layout  # noqa: E402
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor  # noqa: E402
from nbgrader.converters import Autograde  # noqa: E402
from nbgrader.preprocessors import Execute, GetGrades  # noqa: E402

from grader.safegrade.preprocessors import HideHiddenTests, SandboxExecute  # noqa: E402

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

c.CourseDirectory.course_id = layout.COURSE_ID
c.CourseDirectory.root = str(ROOT)
c.CourseDirectory.source_directory = str(layout.SOURCE)
c.CourseDirectory.release_directory = str(layout.RELEASE)
c.CourseDirectory.submitted_directory = str(layout.SUBMITTED)
c.CourseDirectory.autograded_directory = str(layout.AUTOGRADED)
c.CourseDirectory.feedback_directory = str(layout.FEEDBACK)
# FXCOURSE_GRADEBOOK_URL points a scratch server (the browser test) at a throwaway gradebook.
c.CourseDirectory.db_url = os.environ.get(
    "FXCOURSE_GRADEBOOK_URL", f"sqlite:///{ROOT / layout.GRADEBOOK}"
)
# Each exercise's probes.py and checks.py (beside its source notebook) are never released.
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback"]
c.CourseDirectory.ignore += ["probes.py", "checks.py"]

# nbgrader's exchange (release_assignment / collect) lives beside the course, not in /usr/local.
c.Exchange.root = str(GRADER / "exchange")

# Grading: nbgrader's Autograde, with its Execute step replaced by the sandbox (SandboxExecute;
# grader/safegrade/README.md). The limits live here, for every way of grading (make autograde,
# nbgrader autograde, the formgrader's Autograde button). A cell that runs longer than
# Execute.timeout is interrupted and fails; a submission gets SandboxExecute.budget in all.
c.Execute.timeout = 60
c.SandboxExecute.budget = 120
default_steps = Autograde.class_traits()["autograde_preprocessors"].default()
c.Autograde.autograde_preprocessors = [
    SandboxExecute if step is Execute else step for step in default_steps
]
# A test cell a learner deleted is put back (and graded) rather than left without a score.
c.OverwriteCells.add_missing_cells = True
# The hidden part of each test cell imports grader.safegrade and finds the exercise's probe and
# check through these (kernel.py); the kernels nbgrader starts inherit them.
os.environ["SAFEGRADE_COURSE"] = str(ROOT)
os.environ["SAFEGRADE_SOURCE"] = str(ROOT / layout.SOURCE)

# Feedback shows learners their failure messages, not the hidden tests' code.
c.GenerateFeedback.preprocessors = [GetGrades, CSSHTMLHeaderPreprocessor, HideHiddenTests]
