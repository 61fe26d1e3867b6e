"""A pod's recipe normalised into the content-addressed form the board keeps and serves
(docs/recipes.md, "What a recipe is"): engine, image with digest, scrubbed flags, drafter and
served context. Pure Python: ingest, the read side and tests all call it."""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass

from recipes.argv import (
    MAX_COUNT_DIGITS,
    context_len_from,
    docker_image,
    engine_args,
    max_num_seqs_from,
    option_value,
    tokens_of,
)
from recipes.scrub import scrub_flags

CONTEXT_FLOOR = 65536
ABSURD_COUNT = 10**MAX_COUNT_DIGITS
NUL_REPLACEMENT = "\ufffd"
_DIGEST = re.compile(r"[^\s@]+@sha256:[0-9a-f]{64}")
_REPO_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
_COMMIT = re.compile(r"[0-9a-f]{40}")
ENGINE_ALIASES = {"llamacpp": "llama.cpp", "llama-cpp": "llama.cpp", "llama_cpp": "llama.cpp"}


@dataclass(frozen=True)
class RecipeSpec:
    """What identifies a recipe. `id` is the sha256 of `canonical_json()`."""

    engine: str
    image: str | None
    image_digest: str | None
    flags: tuple[str, ...]
    drafter: dict | None
    context_len: int | None

    def canonical(self) -> dict:
        return {
            "engine": self.engine,
            "image": self.image,
            "image_digest": self.image_digest,
            "flags": list(self.flags),
            "drafter": self.drafter,
            "context_len": self.context_len,
        }

    def canonical_json(self) -> str:
        return json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"))

    @property
    def id(self) -> str:
        return hashlib.sha256(self.canonical_json().encode("utf-8")).hexdigest()


def recipe_dict(raw) -> dict | None:
    """A recipe as a dict; older pods send it as a JSON string."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return None
    return raw if isinstance(raw, dict) else None


def serve_argv(recipe) -> list[str]:
    """The engine's arguments as the pod ran them (unscrubbed): `flags`, or for recipes that only
    carry a `command` (SGLang and llama.cpp under docker) the engine's part of that command."""
    recipe = recipe_dict(recipe) or {}
    flags = recipe.get("flags")
    if isinstance(flags, list | str) and flags:
        return tokens_of(flags)
    return engine_args(recipe.get("command"))


def context_len_of(recipe) -> int | None:
    """Served context: the context option in the flags (or command), else `context_len`."""
    recipe = recipe_dict(recipe) or {}
    from_flags = context_len_from(serve_argv(recipe))
    if from_flags is not None:
        return from_flags
    declared = recipe.get("context_len")
    if isinstance(declared, int | float) and not isinstance(declared, bool):
        # Kept as declared, however wrong: ingest refuses a value outside its column's range.
        return int(declared) if math.isfinite(declared) else ABSURD_COUNT
    return None


def max_num_seqs_of(recipe) -> int | None:
    return max_num_seqs_from(serve_argv(recipe))


def normalise_recipe(raw) -> RecipeSpec | None:
    """The recipe a run used, or None when the bundle carries none."""
    recipe = recipe_dict(raw)
    if recipe is None:
        return None
    argv = serve_argv(recipe)
    return RecipeSpec(
        engine=_storable(_engine(recipe)),
        image=_storable(_image(recipe)),
        image_digest=_image_digest(recipe),
        flags=tuple(_storable(flag) for flag in scrub_flags(argv)),
        drafter=_storable(_drafter(recipe, argv)),
        context_len=context_len_of(recipe),
    )


def _storable(value):
    """NUL becomes U+FFFD (PostgreSQL text and jsonb refuse it), recursively."""
    if isinstance(value, str):
        return value.replace("\x00", NUL_REPLACEMENT)
    if isinstance(value, dict):
        return {key: _storable(item) for key, item in value.items()}
    return value


def _engine(recipe: dict) -> str:
    engine = recipe.get("engine")
    name = engine.strip().lower() if isinstance(engine, str) and engine.strip() else "unknown"
    return ENGINE_ALIASES.get(name, name)[:40]


def _image(recipe: dict) -> str | None:
    if recipe.get("serve_mode") in ("bare", "endpoint"):
        return None
    image = recipe.get("image")
    if not isinstance(image, str) or not image.strip():
        image = docker_image(recipe.get("command"))
    return image.strip()[:300] if isinstance(image, str) and image.strip() else None


def _image_digest(recipe: dict) -> str | None:
    digest = recipe.get("image_digest")
    if isinstance(digest, str) and _DIGEST.fullmatch(digest.strip()):
        return digest.strip()[:300]
    return None


def _drafter(recipe: dict, argv: list[str]) -> dict | None:
    """{method, repo, revision, n} from the recipe's drafter keys or the engine's own options
    (vLLM `--speculative-config`, SGLang `--speculative-*`, llama.cpp `--draft-max`)."""
    config = {}
    raw_config = option_value(argv, ("--speculative-config",))
    if raw_config:
        try:
            parsed = json.loads(raw_config)
        except ValueError:
            parsed = None
        config = parsed if isinstance(parsed, dict) else {}

    method = _first_text(
        recipe.get("spec_decode_method"),
        recipe.get("spec_decode"),
        config.get("method"),
        option_value(argv, ("--speculative-algorithm",)),
    )
    repo = _first_repo(
        recipe.get("drafter_repo"),
        config.get("model"),
        option_value(argv, ("--speculative-draft-model-path", "--speculative-draft-model")),
    )
    revision = _first_text(recipe.get("drafter_revision"))
    n = _first_count(
        recipe.get("spec_decode_n"),
        config.get("num_speculative_tokens"),
        option_value(argv, ("--speculative-num-draft-tokens", "--draft-max", "--draft")),
    )
    if method is None and repo is None and n is None:
        return None
    return {
        "method": method.lower() if method else None,
        "repo": repo,
        "revision": revision.lower()
        if revision and _COMMIT.fullmatch(revision.lower())
        else revision,
        "n": n,
    }


def _first_text(*values) -> str | None:
    for value in values:
        if isinstance(value, str) and value.strip():
            return value.strip()[:300]
    return None


def _first_repo(*values) -> str | None:
    """A Hugging Face repo id (`org/name`); paths on the operator's machine are not repos."""
    for value in values:
        if isinstance(value, str) and _REPO_ID.fullmatch(value.strip()):
            return value.strip()[:300]
    return None


def _first_count(*values) -> int | None:
    for value in values:
        if isinstance(value, bool):
            continue
        if isinstance(value, int) and value > 0:
            return value
        if isinstance(value, str) and value.strip().isdigit() and int(value) > 0:
            return int(value)
    return None
