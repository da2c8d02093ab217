"""safegrade: nbgrader autograding where no learner's code runs in the process that scores it.

``preprocessors.SandboxExecute`` replaces nbgrader's Execute step (grader/nbgrader_config.py);
``batch`` grades many submissions in parallel (``python -m grader.safegrade autograde``). The
sandbox side (``worker``, ``data``, ``probing``, ``graph_data``) never imports nbgrader. See
README.md.
"""

VERSION = "3.1"  # 3.1: typed per-test results in the result files
