"""The learner's lab (`make lab`, and the hub's learners): the course's kernel only, and the
default, as course.json names it (env/setup.sh installs it). jupyter_server_config.json beside
this file holds the rest."""

import json
from pathlib import Path

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

kernel = json.loads((Path(__file__).resolve().parents[2] / "course.json").read_text())["kernel"]
c.KernelSpecManager.allowed_kernelspecs = [kernel["name"]]
c.MultiKernelManager.default_kernel_name = kernel["name"]
