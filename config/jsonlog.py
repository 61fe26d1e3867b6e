"""Log records as JSON lines, one object a line (docs/operations.md §Logs).

Production logs go to stdout as JSON so a collector can parse them without guessing: `ts`,
`level`, `logger`, `message`, the exception text when there is one, and for gunicorn's access
log the request's fields (`remote`, `request`, `status`, `bytes`, `ms`).
"""

import json
import logging
from datetime import UTC, datetime

ACCESS_FIELDS = {"h": "remote", "r": "request", "s": "status", "b": "bytes", "M": "ms"}
PROBES = ("/healthz", "/readyz")


class QuietProbes(logging.Filter):
    """Gunicorn's access log without the probes answered 200: Caddy asks every replica's
    `/healthz` every 2 s (deploy/Caddyfile), which would be a line every 2 s per replica. A probe
    answered otherwise (a draining replica's 503) is still logged."""

    def filter(self, record: logging.LogRecord) -> bool:
        atoms = record.args
        if not isinstance(atoms, dict):
            return True
        return not (atoms.get("U") in PROBES and str(atoms.get("s")) == "200")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        if record.name == "gunicorn.access" and isinstance(record.args, dict):
            entry["message"] = "request"
            for atom, name in ACCESS_FIELDS.items():
                value = record.args.get(atom)
                entry[name] = int(value) if name in ("status", "ms") and _digits(value) else value
        else:
            entry["message"] = record.getMessage()
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def _digits(value) -> bool:
    return isinstance(value, str) and value.isdigit() or isinstance(value, int)
