"""What public surfaces may show of what pods send (docs/recipes.md, "Scrubbing"): no host paths,
raw commands, private or credential flags, tokens, job signatures or start stamps; the drafter
path rewritten to /drafter byte for byte as pods expect it.

Every page, API answer and export that shows something a pod sent goes through here.
"""

from __future__ import annotations

import json
import re

from recipes.argv import Arg, read_argv, write_argv
from recipes.secret_scan import is_credential_name, looks_like_token

# Options naming the operator's machine or the served model: dropped with their value.
PRIVATE_OPTIONS = frozenset(
    {
        "--served-model-name",
        "--host",
        "--port",
        "--alias",
        "-a",
        "--model-path",
        "-m",
        "--model",
        "--model-draft",
        "-md",
        "--uds",
    }
)
# Recipe keys that hold host paths, raw argv or local names; never published.
PRIVATE_RECIPE_KEYS = frozenset(
    {"command", "docker_run", "drafter", "container_name", "served_alias", "port"}
)
# Keys never published wherever they sit: raw argv (host paths) and the job's identity.
PRIVATE_KEYS = frozenset({"command", "docker_run"})
PRIVATE_TOP_KEYS = frozenset({"job_sig", "job_group"})
# The job's start stamp (job_sig is derived from it): any key naming a start time.
START_STAMP_KEY = re.compile(
    r"^(?:job[_-]?)?(?:start|started|start[_-]?time|started[_-]?at|start[_-]?ts|t[_-]?start)$",
    re.IGNORECASE,
)
DRAFTER_PATH = "/drafter"
CONTAINER_PATHS = ("/model", "/drafter")  # where recipes mount the weights: not host paths
REDACTED_PATH = "[host path]"

# A path in free text: `~/…`, `C:\…`, or `/a/b…` with at least two segments; never inside a word
# or a URL ("tok/s", "N/A", "http://host/v1").
_SEGMENT = r"[^\s/\\\"'`<>|:;,()\[\]{}]"
_TEXT_PATH = re.compile(
    rf"(?<![\w.:/\\~-])(?:~[\w.-]*[/\\]{_SEGMENT}*(?:[/\\]{_SEGMENT}*)*"
    rf"|[A-Za-z]:[\\/]{_SEGMENT}*(?:[\\/]{_SEGMENT}*)*"
    rf"|/{_SEGMENT}+(?:/{_SEGMENT}*)+)"
)
# The part of a path that names the operator's account (`/home/alice`, `/Users/bob`, `/root`,
# `C:\Users\carol`): model output keeps its paths, with that part written as `~`.
_HOME_PREFIX = re.compile(
    r"(?<![\w.-])(?:/home/[^/\s\"'`<>|;,()\[\]{}]+|/Users/[^/\s\"'`<>|;,()\[\]{}]+"
    r"|/root(?=[/\s\"']|$)|[A-Za-z]:\\Users\\[^\\\s\"'`<>|;,()\[\]{}]+)"
)
_HOME_HINTS = ("/home/", "/Users/", "/root", ":\\Users\\")
# A flag value that is a path: at its start or after `=`, `:` or `,` (`key=/home/x`).
_VALUE_PATH = re.compile(
    r"(?:^|(?<=[=:,;\s\"']))(?:~[\w.-]*(?:/|$)|\.{1,2}/|/|[A-Za-z]:[\\/])[^\s\"',;]*"
)


# --- host paths ---------------------------------------------------------------------------------


def mask_host_paths(text: str) -> str:
    """Free text with every filesystem path but the container mounts replaced."""
    if "/" not in text and "\\" not in text:
        return text
    return _TEXT_PATH.sub(_redact_unless_container, text)


def mask_home_paths(text: str) -> str:
    """Model output with the operator's account names taken out of its paths (`/home/alice/x`
    becomes `~/x`); the paths themselves are content and stay."""
    if not any(hint in text for hint in _HOME_HINTS):
        return text
    return _HOME_PREFIX.sub("~", text)


def public_name(text: str) -> str:
    """A declared name (a local model, a label) as published: a bare path on the operator's
    machine keeps only its last part, paths inside other text are masked."""
    stripped = text.strip()
    if stripped and not any(char.isspace() for char in stripped) and holds_host_path(stripped):
        return re.split(r"[/\\]", stripped.rstrip("/\\"))[-1] or REDACTED_PATH
    return mask_host_paths(text)


def holds_host_path(value: str) -> bool:
    """A flag value that is, or contains, a path other than the container mounts."""
    for match in _VALUE_PATH.finditer(value):
        path = match.group(0)
        start = match.start()
        if value[max(0, start - 1) : start + 2] == "://" or path.startswith("//"):
            continue  # a URL
        if not _is_container_path(path):
            return True
    return False


def _redact_unless_container(match: re.Match) -> str:
    path = match.group(0)
    return path if _is_container_path(path) else REDACTED_PATH


def _is_container_path(path: str) -> bool:
    return any(path == root or path.startswith(root + "/") for root in CONTAINER_PATHS)


# --- flags --------------------------------------------------------------------------------------


def scrub_flags(flags) -> list[str]:
    """Flags as they may be published and applied by pods (docs/recipes.md, "Scrubbing";
    docs/protocol.md §Champion recipes): no positionals, no private or credential options, no token or
    host-path values; the speculative config pointing at /drafter in compact JSON. The written
    form of each option (`--x v` or `--x=v`) is kept."""
    scrubbed: list[Arg] = []
    for arg in read_argv(flags):
        if not arg.is_option or arg.name in PRIVATE_OPTIONS or is_credential_name(arg.name):
            continue
        if looks_like_token(arg.name) or "/" in arg.name or "\\" in arg.name:
            continue  # `-m/home/x.gguf`: a value glued to its option
        value = arg.value
        if value is not None:
            value = _public_flag_value(arg.name, value)
            if value is None:
                continue
        scrubbed.append(Arg(arg.name, value, arg.inline))
    return write_argv(scrubbed)


def _public_flag_value(name: str, value: str) -> str | None:
    """The value as published, or None when the option must go."""
    if looks_like_token(value):
        return None
    config = _json_object(value)
    if config is not None:
        if name == "--speculative-config" and isinstance(config, dict) and "model" in config:
            config["model"] = DRAFTER_PATH
        cleaned = _without_private_entries(config)
        if name == "--speculative-config" or cleaned != config or holds_host_path(value):
            return json.dumps(cleaned, separators=(",", ":"))
        return value
    return None if holds_host_path(value) else value


def _json_object(value: str):
    if value[:1] not in ("{", "["):
        return None
    try:
        parsed = json.loads(value)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict | list) else None


def _without_private_entries(value):
    """A JSON value without entries holding a host path, a token or a credential."""
    if isinstance(value, dict):
        return {
            key: _without_private_entries(item)
            for key, item in value.items()
            if not is_credential_name(str(key)) and not _private_scalar(item)
        }
    if isinstance(value, list):
        return [_without_private_entries(item) for item in value if not _private_scalar(item)]
    return value


def _private_scalar(value) -> bool:
    return isinstance(value, str) and (looks_like_token(value) or holds_host_path(value))


# --- recipes and everything else a run shows ----------------------------------------------------


def scrub_recipe(recipe) -> dict | None:
    """A recipe without host paths, raw commands or credentials."""
    if not isinstance(recipe, dict):
        return None
    public = {
        key: value
        for key, value in recipe.items()
        if key not in PRIVATE_RECIPE_KEYS and not is_credential_name(str(key))
    }
    if "flags" in public:
        public["flags"] = scrub_flags(public["flags"] if isinstance(public["flags"], list) else [])
    if isinstance(public.get("custom_flags"), list):
        public["custom_flags"] = [
            " ".join(scrub_flags([entry]))
            for entry in public["custom_flags"]
            if scrub_flags([entry])
        ]
    preset = public.get("family_preset")
    if isinstance(preset, dict) and isinstance(preset.get("flags"), list):
        public["family_preset"] = preset | {"flags": scrub_flags(preset["flags"])}
    return public_value(public)


def scrub_extras(extras: dict) -> dict:
    """A run's top-level extras as a public surface may show them: recipes scrubbed, no job
    signature, group or start stamp, no raw command anywhere, host paths masked."""
    public = {}
    for key, value in extras.items():
        if key in PRIVATE_TOP_KEYS or START_STAMP_KEY.match(str(key)):
            continue
        if key == "recipe":
            value = scrub_recipe(value)
        elif key == "deployment_manifest" and isinstance(value, dict) and "recipe" in value:
            value = value | {"recipe": scrub_recipe(value["recipe"])}
        public[key] = public_value(value)
    return public


def public_value(value):
    """Any JSON value a pod sent, as published: keys holding raw argv, credentials or a start
    stamp dropped, host paths in strings masked."""
    if isinstance(value, str):
        return mask_host_paths(value)
    if isinstance(value, dict):
        return {
            mask_host_paths(str(key)): public_value(item)
            for key, item in value.items()
            if key not in PRIVATE_KEYS
            and not START_STAMP_KEY.match(str(key))
            and not (isinstance(item, str) and is_credential_name(str(key)))
        }
    if isinstance(value, list):
        return [public_value(item) for item in value]
    return value


def public_output(value):
    """Model output (raw completions, evidence): home directories masked, the rest as sent."""
    if isinstance(value, str):
        return mask_home_paths(value)
    if isinstance(value, dict):
        return {key: public_output(item) for key, item in value.items()}
    if isinstance(value, list):
        return [public_output(item) for item in value]
    return value


def public_timeline(evidence):
    """A sustained-load timeline with its wall-clock stamps as seconds since its first sample:
    absolute times would date the job's start, from which its signatures are derived."""
    if not isinstance(evidence, dict) or not isinstance(evidence.get("points"), list):
        return evidence
    stamps = [
        point["t"]
        for point in evidence["points"]
        if isinstance(point, dict) and _is_number(point.get("t"))
    ]
    if not stamps:
        return evidence
    first = min(stamps)
    points = [
        point | {"t": round(point["t"] - first, 3)}
        if isinstance(point, dict) and _is_number(point.get("t"))
        else point
        for point in evidence["points"]
    ]
    return evidence | {"points": points}


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
