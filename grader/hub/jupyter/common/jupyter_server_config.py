"""Every server on the class hub (learners' and instructors'): the course kernel, no news toasts.

The hub puts this folder on JUPYTER_CONFIG_PATH, after the role's own folder (jupyterhub_config.py).
"""

from pathlib import Path

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

# One kernel, the course's ("Python 3 (fx-course)", installed into the course environment).
c.KernelSpecManager.allowed_kernelspecs = {"fx-course"}
c.MultiKernelManager.default_kernel_name = "fx-course"
# JupyterLab's default settings for hub users (overrides.json): no news or update prompts.
c.LabApp.app_settings_dir = str(Path(__file__).resolve().parents[1] / "lab-settings")
