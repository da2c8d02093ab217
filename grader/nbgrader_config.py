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
if str(GRADER) not in sys.path:
    sys.path.insert(0, str(GRADER))
# nbgrader's gradebook runs the `alembic` command; make and `make lab` do not activate the venv.
os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])

import course_grader as layout  # noqa: E402
from late_penalty import PercentPerDayLate  # noqa: E402
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor  # noqa: E402
from nbgrader.converters import Autograde  # noqa: E402
from nbgrader.preprocessors import Execute, GetGrades  # noqa: E402
from nbgrader_plugins import HideHiddenTests, ResilientExecute  # noqa: E402

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

# nbgrader's exchange (release_assignment / collect) lives beside the course, not in /usr/local;
# FXCOURSE_EXCHANGE moves it (fxcourse/workspace.py gives learners' workspaces the same root).
c.Exchange.root = os.environ.get("FXCOURSE_EXCHANGE", str(GRADER / "exchange"))

# Importing torch alone can take 10 s on a busy machine; nbgrader's default is 30 s per cell.
# A cell that runs longer (an endless loop) is interrupted and fails; the rest still run.
c.Execute.timeout = 120

# A kernel that dies fails its cell and the ones after it, not the whole submission.
default_steps = Autograde.class_traits()["autograde_preprocessors"].default()
c.Autograde.autograde_preprocessors = [
    ResilientExecute if step is Execute else step for step in default_steps
]

# Feedback shows learners their failure messages, not the hidden tests' code.
c.GenerateFeedback.preprocessors = [GetGrades, CSSHTMLHeaderPreprocessor, HideHiddenTests]

# Late work (README, "Late work"): a submission's time is its timestamp.txt, the due date is the
# gradebook's (`nbgrader db assignment add NAME --duedate="2025-03-07 23:59:00 Europe/Berlin"` or
# the formgrader). nbgrader's own LateSubmissionPlugin, as the plugin class, gives late work no
# penalty (penalty_method "none") or a score of zero ("zero").
c.AssignLatePenalties.plugin_class = PercentPerDayLate
c.PercentPerDayLate.percent_per_day = 10.0

# LMS downloads (grader/intake.py): the file-name pattern `make autograde SUBMISSIONS=...` uses
# unless LMS=<name> picks another of layout.LMS_PATTERNS; `nbgrader zip_collect` reads the same
# pattern and keeps its working folders under grader/, never in the repository root.
c.FileNameCollectorPlugin.named_regexp = layout.LMS_PATTERNS["plain"]
c.ZipCollectApp.downloaded_directory = "grader/downloaded"
