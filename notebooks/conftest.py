"""The notebooks' checked outputs are those of the demo service's seeded data.

Their kernels inherit this process's environment: without the account
variables, ``connect()`` starts the demo service.
"""

import os

for name in ("STOPLIST_NB_URL", "STOPLIST_NB_TOKEN"):
    os.environ.pop(name, None)
