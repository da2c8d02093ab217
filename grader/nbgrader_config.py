"""nbgrader settings of the course's graded exercises (the instructor side).

The course root is the repository root: the source notebooks (with solutions and hidden tests) are
in solutions/<assignment>/, nbgrader's working folders, exchange and gradebook under classdata/
(git-ignored, outside every package; FXCOURSE_CLASSDATA moves it: grader/course.py).
nbgrader reads the repository root's nbgrader_config.py, which loads this file, whenever it starts
there: the instructor's make targets (grader/grader.mk) and `make formgrader` do.
"""

from pathlib import Path

from grader import exercises, intake
from grader.course import Course
from grader.intake.class_exchange import ReleaseEveryFeedback, SafeExchangeCollect
from grader.late_penalty import PercentPerDayLate
from grader.learner_html import FeedbackOnly, LearnerHTML
from grader.safegrade.preprocessors import configure

# this course (the repository, or a copy of it) as its course.json and the environment say
course = Course.configured(Path(__file__).resolve().parents[1])

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)


c.CourseDirectory.course_id = course.course_id
c.CourseDirectory.root = str(course.root)
c.CourseDirectory.source_directory = str(course.relative(course.source))
c.CourseDirectory.release_directory = str(course.relative(course.release))
c.CourseDirectory.submitted_directory = str(course.relative(course.submitted))
c.CourseDirectory.autograded_directory = str(course.relative(course.autograded))
c.CourseDirectory.feedback_directory = str(course.relative(course.feedback))
# The gradebook and the exchange are the Course's: FXCOURSE_GRADEBOOK_URL points a scratch server
# (the browser test) at a throwaway gradebook; nbgrader's exchange (release_assignment, collect,
# release_feedback) lives beside the course, not in /srv, unless FXCOURSE_EXCHANGE moves it
# (fxcourse/workspace.py gives learners' workspaces the same root). Course.configured reads both.
c.CourseDirectory.db_url = course.gradebook_url
c.Exchange.root = str(course.exchange)
course.exchange.mkdir(parents=True, exist_ok=True)  # nbgrader expects the folder to exist
# Learners write into the exchange: Collect copies by intake.py's rules (no links followed, the
# folder's owner is the student, the system's time is the submission's) and Release Feedback
# releases to everyone it can, naming the others (grader/intake/class_exchange.py).
c.ExchangeFactory.collect = SafeExchangeCollect
c.ExchangeFactory.release_feedback = ReleaseEveryFeedback
# Every page nbgrader renders from a submission (the formgrader's views, feedback) shows the
# learner's HTML and markdown cleaned: nothing a learner wrote runs in the instructor's browser.
c.HTMLExporter.preprocessors = [LearnerHTML]
# A feedback folder keeps only the pages made from the notebooks (and timestamp.txt,
# submission_secret.txt): nbgrader copies a submission's other files there, a learner's .html too.
c.GenerateFeedback.post_convert_hook = FeedbackOnly(course.autograded, course.feedback)

# Grading: nbgrader's Autograde with its Execute step replaced by the sandbox, probes.py and
# checks.py never released, feedback without hidden tests (grader/safegrade/README.md); the result
# files and the grading secret where the Course puts them (Course.results, Course.secret).
configure(c, course)
# Generate (make release) writes each test cell's hidden part from its grade_id, and ends each
# released verify.py with the recording of the learner's test cells (exercises.py).
exercises.configure(c, course.release)
# The languages of the class (exercises.ClassLanguages): `make release` releases each exercise in
# each, a translation as an assignment of its own (`<exercise>-zh`). English only unless
# named here; a class with Chinese learners: c.ClassLanguages.languages = ["en", "zh"]
c.ClassLanguages.languages = ["en"]
# The limits on a running submission, for every way of grading (make autograde, nbgrader
# autograde, the formgrader's Autograde button), are declared once, with their defaults, units
# and help, in grader/safegrade/grading_limits.py (GradingLimits): six are configurable, the others
# fixed. `make autograde` prints those in force; `python -m grader.safegrade limits` all. Set one
# here to change it for the class (or --GradingLimits.<name>=... on a command line):
# cell_timeout (seconds per cell; nbgrader's Execute.timeout follows it), budget (seconds per
# submission), memory_mb (MiB beyond the sandbox's own: a memory cgroup where the machine allows
# one, otherwise RLIMIT_AS, `make autograde` prints which), nproc (processes and threads),
# file_mb (largest file written, MiB), tmp_mb (the submission's own /tmp, MiB). For example:
#   c.GradingLimits.cell_timeout = 90

# Late work (README, "Late work"): a submission's time is its timestamp.txt, the due date is the
# gradebook's (`nbgrader db assignment add NAME --duedate="2025-03-07 23:59:00 Europe/Berlin"` or
# the formgrader). nbgrader's own LateSubmissionPlugin, as the plugin class, gives late work no
# penalty (penalty_method "none") or a score of zero ("zero").
c.AssignLatePenalties.plugin_class = PercentPerDayLate
c.PercentPerDayLate.percent_per_day = 10.0

# LMS downloads (grader/intake/): the file-name pattern `make autograde SUBMISSIONS=...` uses
# unless LMS=<name> picks another of intake.lms_patterns; `nbgrader zip_collect` reads the same
# pattern and keeps its working folders in the class data, never in the repository root.
patterns = intake.lms_patterns(exercises.possible_assignments(course.root))  # any language
c.FileNameCollectorPlugin.named_regexp = patterns["plain"]
c.ZipCollectApp.downloaded_directory = str(course.relative(course.downloaded))
