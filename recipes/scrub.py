"""Finding secrets in what pods send (design.md §3.9): a recipe, environment or manifest holding
a token-looking string is withheld from public view. Only where it sits is ever reported."""

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
