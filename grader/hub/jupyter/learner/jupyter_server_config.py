"""A learner's server on the class hub: nbgrader's Assignments tab, none of the grading tools.

The formgrader and the course list are the instructor's; their server extensions stay off here
(their lab plugins are turned off in labconfig/page_config.json).
"""

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

c.ServerApp.jpserver_extensions = {
    "nbgrader.server_extensions.formgrader": False,
    "nbgrader.server_extensions.course_list": False,
}
