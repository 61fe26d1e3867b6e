"""Finding secrets in what pods send (design.md §3.9): a recipe, environment or manifest holding
a token-looking string is withheld from public view. Only where it sits is ever reported."""

import json
import re

TOKEN_PATTERNS = (
    re.compile(r"hf_[A-Za-z0-9]{30,}"),  # Hugging Face tokens
    re.compile(r"sk-[A-Za-z0-9_\-]{20,}"),  # OpenAI-style keys
    re.compile(r"gh[pousr]_[A-Za-z0-9]{30,}"),  # GitHub tokens
    re.compile(r"AKIA[0-9A-Z]{16}"),  # AWS access key ids
    re.compile(r"xox[baprs]-[A-Za-z0-9\-]{10,}"),  # Slack tokens
)
CREDENTIAL_FLAGS = frozenset(
    {
        "--api-key",
        "--hf-token",
        "--token",
        "--access-token",
        "--auth-token",
        "--password",
        "--secret",
    }
)
CREDENTIAL_KEYS = re.compile(r"(token|secret|password|api[_-]?key|credential)", re.IGNORECASE)
# A long unbroken run of base64/hex-like characters with digits and letters mixed: a raw secret.
LONG_SECRET = re.compile(
    r"(?<![A-Za-z0-9/+_\-])(?=[A-Za-z0-9_\-]*\d)(?=[A-Za-z0-9_\-]*[A-Za-z])[A-Za-z0-9_\-]{40,}(?![A-Za-z0-9/+_\-])"
)
HEX_DIGEST = re.compile(r"^[0-9a-f]{40}$|^[0-9a-f]{64}$")


def looks_like_token(text: str) -> bool:
    if any(pattern.search(text) for pattern in TOKEN_PATTERNS):
        return True
    return any(not HEX_DIGEST.match(match.group(0)) for match in LONG_SECRET.finditer(text))


def find_secrets(value, pointer: str = "") -> list[str]:
    """JSON pointers of every token-looking string and every credential flag's value in `value`."""
    found: list[str] = []
    stack = [(value, pointer, None)]
    while stack:
        item, where, key = stack.pop()
        if isinstance(item, dict):
            for child_key, child in item.items():
                stack.append((child, f"{where}/{_escape(str(child_key))}", str(child_key)))
        elif isinstance(item, list):
            for index, child in enumerate(item):
                previous = item[index - 1] if index and isinstance(item[index - 1], str) else None
                if previous in CREDENTIAL_FLAGS and isinstance(child, str) and child:
                    found.append(f"{where}/{index}")
                    continue
                stack.append((child, f"{where}/{index}", None))
        elif isinstance(item, str):
            credential_value = key is not None and CREDENTIAL_KEYS.search(key) and len(item) >= 8
            if credential_value or looks_like_token(item) or _inline_credential_flag(item):
                found.append(where)
    return sorted(found)


def _inline_credential_flag(text: str) -> bool:
    """`--api-key=…` or `--hf-token …` inside a command string."""
    for flag in CREDENTIAL_FLAGS:
        match = re.search(re.escape(flag) + r"[=\s]+(\S+)", text)
        if match and match.group(1) and not match.group(1).startswith("-"):
            return True
    return False


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


# What a public surface never shows: names and places of the operator's machine, and raw argv.
PRIVATE_FLAGS = frozenset(
    {"--served-model-name", "--host", "--port", "--alias", "--model-path", "-m"}
)
PRIVATE_RECIPE_KEYS = frozenset(
    {"command", "docker_run", "drafter", "container_name", "served_alias", "port"}
)
DRAFTER_PATH = "/drafter"


def scrub_flags(flags: list | None) -> list[str]:
    """Flags as they may be published and applied by pods (design.md §3.9, protocol.md §5)."""
    scrubbed: list[str] = []
    items = [str(item) for item in flags or []]
    index = 0
    while index < len(items):
        item = items[index]
        name, sep, inline = item.partition("=")
        takes_value = not sep and index + 1 < len(items) and not items[index + 1].startswith("--")
        value = inline if sep else (items[index + 1] if takes_value else None)
        step = 2 if takes_value else 1
        if (
            name in PRIVATE_FLAGS
            or name in CREDENTIAL_FLAGS
            or (value is not None and looks_like_token(value))
        ):
            index += step
            continue
        if name == "--speculative-config" and value is not None:
            value = _drafter_config(value)
        scrubbed.extend([f"{name}={value}"] if sep else ([name, value] if takes_value else [name]))
        index += step
    return scrubbed


def _drafter_config(value: str) -> str:
    """A speculative config with its drafter path rewritten to /drafter, compact JSON."""
    try:
        config = json.loads(value)
    except ValueError:
        return value
    if isinstance(config, dict) and "model" in config:
        config["model"] = DRAFTER_PATH
    return json.dumps(config, separators=(",", ":"))


def scrub_recipe(recipe) -> dict | None:
    """A recipe without host paths, raw commands or credentials."""
    if not isinstance(recipe, dict):
        return None
    public = {key: value for key, value in recipe.items() if key not in PRIVATE_RECIPE_KEYS}
    if "flags" in public:
        public["flags"] = scrub_flags(public["flags"] if isinstance(public["flags"], list) else [])
    if isinstance(public.get("custom_flags"), list):  # "--name value" strings: split, then scrub
        parts = [part for item in public["custom_flags"] for part in str(item).split(" ", 1)]
        public["custom_flags"] = scrub_flags(parts)
    if isinstance(public.get("family_preset"), dict) and isinstance(
        public["family_preset"].get("flags"), list
    ):
        public["family_preset"] = public["family_preset"] | {
            "flags": scrub_flags(public["family_preset"]["flags"])
        }
    return public


def scrub_extras(extras: dict) -> dict:
    """A run's top-level extras as a public surface may show them."""
    public = dict(extras)
    if "recipe" in public:
        public["recipe"] = scrub_recipe(public["recipe"])
    manifest = public.get("deployment_manifest")
    if isinstance(manifest, dict) and "recipe" in manifest:
        public["deployment_manifest"] = manifest | {"recipe": scrub_recipe(manifest["recipe"])}
    return public
