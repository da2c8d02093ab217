"""safegrade: a sandboxed, parallel autograder for nbgrader assignments.

Run it as ``python -m grader.safegrade --help``. The modules split into two groups:

* grader side (trusted, full access): ``assignment``, ``store``, ``sandbox``, ``batch``,
  ``gradebook``, ``feedback``, ``bench``, ``__main__``;
* sandbox side (run inside bubblewrap, never import nbgrader): ``zygote``, ``runner``, ``guard``.
"""

VERSION = "1.0"
