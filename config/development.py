"""The development configuration, chosen explicitly: pytest's settings module (pyproject.toml).

It sets `AEON_ENV=development` before the settings load, in this process's environment, so the
servers, workers and commands a test starts inherit the same choice (docs/operations.md
§Settings). An `AEON_ENV` already set is kept.
"""

import os

os.environ.setdefault("AEON_ENV", "development")

from config.settings import *  # noqa: E402,F403
