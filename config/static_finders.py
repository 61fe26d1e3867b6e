"""plotly.js served from the copy inside the plotly Python package (no CDN): a staticfiles finder
that offers exactly that one file, as `vendor/plotly.min.js`, to `{% static %}` and collectstatic."""

from pathlib import Path

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage

PLOTLY_PACKAGE_DATA = Path(plotly.__file__).resolve().parent / "package_data"
PLOTLY_JS_NAME = "plotly.min.js"
PREFIX = "vendor"
PLOTLY_JS_PATH = f"{PREFIX}/{PLOTLY_JS_NAME}"


class PlotlyJsFinder(BaseFinder):
    """The package folder also holds a 5 MB widget bundle and data sets: list only plotly.min.js."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.storage = FileSystemStorage(location=PLOTLY_PACKAGE_DATA)
        self.storage.prefix = PREFIX  # collectstatic copies it to STATIC_ROOT/vendor/

    def check(self, **kwargs):
        return []

    def find(self, path, find_all=False, **kwargs):
        find_all = find_all or kwargs.get("all", False)
        match = str(PLOTLY_PACKAGE_DATA / PLOTLY_JS_NAME) if path == PLOTLY_JS_PATH else None
        if find_all:
            return [match] if match else []
        return match

    def list(self, ignore_patterns):
        yield PLOTLY_JS_NAME, self.storage
