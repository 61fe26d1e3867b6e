"""Which container images the board offers to pods (docs/recipes.md, "Images"): the engines'
stock images unless the setting AEON_RECIPE_IMAGES says otherwise. A recipe built on any other
image is offered with `image: null` and a note, so no pod pulls an image nobody vetted."""

from __future__ import annotations

from django.conf import settings

# The engines' stock images, by repository (any tag or digest of them is allowed).
STOCK_IMAGES = {
    "aeon-vllm-ultimate": "ghcr.io/aeon-7/aeon-vllm-ultimate",
    "vllm": "vllm/vllm-openai",
    "vllm-rocm": "rocm/vllm",
    "sglang": "lmsysorg/sglang",
    "llama.cpp": "ghcr.io/ggml-org/llama.cpp",
}
NOT_ALLOWED_NOTE = (
    "The pod that measured this recipe ran a container image that is not on this board's list "
    "of vetted images; apply the flags to the engine's stock image or build your own."
)


def allowed_repositories() -> frozenset[str]:
    configured = getattr(settings, "AEON_RECIPE_IMAGES", None)
    names = configured if configured else STOCK_IMAGES.values()
    return frozenset(_repository(name) for name in names)


def offered_image(image: str | None) -> tuple[str | None, str | None]:
    """(the image to offer, a note when the recipe's own image is withheld)."""
    if not image:
        return None, None
    if _repository(image) in allowed_repositories():
        return image, None
    return None, NOT_ALLOWED_NOTE


def stock_image(engine: str) -> str | None:
    """The engine's stock image with its usual tag, for commands when the recipe's is withheld."""
    repository = STOCK_IMAGES.get(engine)
    if repository is None:
        return None
    return f"{repository}:server-cuda" if engine == "llama.cpp" else f"{repository}:latest"


def _repository(image: str) -> str:
    """`docker.io/library/x:tag@sha256:…` → `x`: the repository without registry default,
    tag or digest."""
    name = image.strip().split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        name = name[: len(name) - len(last)] + last.split(":", 1)[0]
    for prefix in ("docker.io/library/", "docker.io/", "index.docker.io/", "registry-1.docker.io/"):
        if name.startswith(prefix):
            name = name[len(prefix) :]
            break
    return name.lower()
