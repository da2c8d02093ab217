"""An instructor's server on the class hub.

JupyterHub forbids every page of a user's server to be shown inside a frame ("frame-ancestors
'none'") unless the server says otherwise; JupyterLab's Nbgrader -> Formgrader shows the
formgrader in a frame of the instructor's own lab, so the instructor's server allows frames of
its own origin (Jupyter Server's own default). Learners' servers keep JupyterHub's 'none'.
"""

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

c.ServerApp.tornado_settings = {"headers": {"Content-Security-Policy": "frame-ancestors 'self'"}}
