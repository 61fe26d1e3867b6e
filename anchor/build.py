"""The build the board runs (docs/trust-anchor.md §Attestations): `AEON_BUILD_HASH` when the
deployment sets it (the image build passes the commit), else a sha256 over the board's own source
files, computed once per process."""

import hashlib
from functools import lru_cache
from importlib import metadata

from django.conf import settings

SOURCE_DIRS = ("anchor", "board", "config", "evidence", "recipes", "submissions", "templates")
SOURCE_SUFFIXES = (".py", ".html", ".json")


def board_version() -> str:
    try:
        return metadata.version("aeon-board")
    except metadata.PackageNotFoundError:
        return "unknown"


def build_hash() -> str:
    return getattr(settings, "AEON_BUILD_HASH", "") or _source_hash()


@lru_cache(maxsize=1)
def _source_hash() -> str:
    digest = hashlib.sha256()
    root = settings.BASE_DIR
    for folder in SOURCE_DIRS:
        for path in sorted((root / folder).rglob("*")):
            if (
                path.suffix in SOURCE_SUFFIXES
                and path.is_file()
                and "__pycache__" not in path.parts
            ):
                digest.update(str(path.relative_to(root)).encode() + b"\0")
                digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()
