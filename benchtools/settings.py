"""The settings of the servers `manage.py bench reads` measures: the board's own settings as the
environment chooses them (the bench chooses production: PostgreSQL, a Redis cache, DEBUG off),
plus this app (its commands run in the bench's children) and the floor view on its own URLs.

`config/` knows nothing of the bench: only this module routes the floor, and only the bench
selects this module (`DJANGO_SETTINGS_MODULE=benchtools.settings`)."""

import os

from django.core.exceptions import ImproperlyConfigured

from config.settings import *  # noqa: F403
from config.settings import INSTALLED_APPS

if "benchtools" not in INSTALLED_APPS:
    INSTALLED_APPS = [*INSTALLED_APPS, "benchtools"]
ROOT_URLCONF = "benchtools.urls"
# The folder the bench writes one file per floor answer into before it starts the servers.
AEON_BENCH_FLOOR_DIR = os.environ.get("AEON_BENCH_FLOOR_DIR", "")
if not AEON_BENCH_FLOOR_DIR:
    raise ImproperlyConfigured(
        "benchtools.settings needs AEON_BENCH_FLOOR_DIR (set by bench reads)"
    )
