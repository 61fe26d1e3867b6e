"""Derived copies of pod JSON made storable: PostgreSQL jsonb refuses NUL and NaN.

The raw signed bundle keeps the original; these copies only feed pages and the API.
"""

import math

NUL_REPLACEMENT = "\ufffd"


def storable(value):
    """NUL in strings → U+FFFD, non-finite floats → None, recursively (ingest caps depth at 64)."""
    if isinstance(value, str):
        return value.replace("\x00", NUL_REPLACEMENT)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {storable(k): storable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [storable(v) for v in value]
    return value
