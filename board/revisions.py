"""Which Hugging Face commit a run's weights are at: the one definition the weight check
(submissions/weight_checks.py) and the recipe and benchmark pages (board/selectors/recipes.py)
both use. Pure: nothing here reads Django."""

import re

_COMMIT = re.compile(r"[0-9a-fA-F]{40}")


def is_commit(revision: str | None) -> bool:
    return isinstance(revision, str) and _COMMIT.fullmatch(revision) is not None


def resolve_commit(hf_revision: str | None, deployment_manifest: dict | None) -> str | None:
    """The commit to check: `hf_revision` when it is one, else the manifest's verified revision."""
    if is_commit(hf_revision):
        return hf_revision.lower()
    verification = (deployment_manifest or {}).get("verification")
    revision = verification.get("revision") if isinstance(verification, dict) else None
    return revision.lower() if is_commit(revision) else None
