"""A learner's server on the class hub: nbgrader's Assignments tab, none of the grading tools.

The hub puts this folder before env/jupyter-learner (`make lab`'s learner configuration, which
turns off the formgrader and the assignment editor) on JUPYTER_CONFIG_PATH. Here the course list
goes too; it lists the formgraders a user may open, and learners have none.
"""

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

# A setting in a file that comes first replaces the whole dictionary of a later one: the
# formgrader, turned off in env/jupyter-learner, is named again.
c.ServerApp.jpserver_extensions = {
    "nbgrader.server_extensions.formgrader": False,
    "nbgrader.server_extensions.course_list": False,
}
