"""nbgrader for a learner on the class hub: fetch and submit through the shared exchange.

Assignments are fetched into the learner's home (the server's root folder).
"""

import os

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

c.Exchange.root = os.environ["FXHUB_EXCHANGE_ROOT"]
