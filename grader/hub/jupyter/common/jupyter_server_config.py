"""Every server on the class hub (learners' and instructors'): the course kernel, no news toasts.

The hub puts this folder on JUPYTER_CONFIG_PATH, after the role's own folder (jupyterhub_config.py).
"""

import json
from pathlib import Path

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

# One kernel, the course's (course.json's, installed into the course environment).
COURSE = Path(__file__).resolve().parents[4]
kernel = json.loads((COURSE / "course.json").read_text())["kernel"]["name"]
c.KernelSpecManager.allowed_kernelspecs = {kernel}
c.MultiKernelManager.default_kernel_name = kernel
# JupyterLab's default settings for hub users (overrides.json): no news or update prompts.
c.LabApp.app_settings_dir = str(Path(__file__).resolve().parents[1] / "lab-settings")
