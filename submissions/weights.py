"""The weight check (docs/trust-and-ranking.md §The weight check): does a run's declared weights match its Hugging Face commit?

Pure logic plus one Hub call; nothing here reads Django. The caller passes the endpoint and token
(`settings.AEON_HF_ENDPOINT`, `settings.AEON_HF_TOKEN`), stores the verdict, caches `HubAnswer`
per (repo, commit) and retries `HubUnavailable` with `backoff_seconds` (its first delay and cap
from `AEON_WEIGHT_RETRY_FIRST_SECONDS`, `AEON_WEIGHT_RETRY_MAX_SECONDS`) for
`AEON_WEIGHT_RETRY_WINDOW_SECONDS` (submissions/weight_checks.py); the constants here hold those
settings' default values.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

import httpx2
from huggingface_hub import HfApi, ModelInfo, hf_hub_url
from huggingface_hub.errors import (
    HfHubHTTPError,
    HFValidationError,
    OfflineModeIsEnabled,
    RemoteEntryNotFoundError,
)
from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

WEIGHT_EXTENSIONS = (".safetensors", ".bin", ".gguf", ".pt", ".pth", ".npz")
RETRY_WINDOW_SECONDS = 24 * 3600
FIRST_BACKOFF_SECONDS = 60
MAX_BACKOFF_SECONDS = 3600

# llama.cpp split files: `name-00001-of-00003.gguf`.
_GGUF_SPLIT = re.compile(r"^(?P<stem>.+)-(?P<part>\d{5})-of-(?P<total>\d{5})\.gguf$")
_REFUSED_STATUSES = (401, 403, 404)
CONFIG_FILE = "config.json"
# A config.json is a few kilobytes; one the Hub lists larger is not read (the facts are unknown).
MAX_CONFIG_BYTES = 1_000_000


class Verdict(StrEnum):
    PENDING = "pending"
    VERIFIED = "verified"
    MISMATCH = "mismatch"
    UNVERIFIABLE = "unverifiable"


class DifferenceKind(StrEnum):
    HASH_DIFFERS = "hash_differs"
    MISSING_ON_HUB = "missing_on_hub"
    EXTRA_ON_HUB = "extra_on_hub"


@dataclass(frozen=True)
class FileDifference:
    path: str
    kind: str  # a DifferenceKind value
    declared: str | None
    hub: str | None


@dataclass(frozen=True)
class HubAnswer:
    """What the Hub lists at one commit: weight files only, path → LFS sha256 (None if not LFS);
    the sum of their sizes (None unless the Hub lists every one); the size of `config.json`
    (None when it lists none); the repository's id as the Hub spells it ("" when not known)."""

    commit: str
    files: dict[str, str | None]
    weight_bytes: int | None = None
    config_size: int | None = None
    repo_id: str = ""


@dataclass(frozen=True)
class WeightCheck:
    verdict: Verdict
    commit: str | None
    differences: tuple[FileDifference, ...]
    note: str


class HubUnavailable(Exception):
    """Unreachable, timed out, 5xx or 429: retry later."""


class HubRefused(Exception):
    """401/403/404: gated, private, deleted or unknown revision; the run is unverifiable."""


def is_weight_file(path: str) -> bool:
    return path.endswith(WEIGHT_EXTENSIONS)


def weights_hash_of(per_file: Mapping[str, str]) -> str:
    """docs/protocol.md §Weights: sha256 of `path:sha` joined by `;`, paths sorted."""
    joined = ";".join(f"{path}:{per_file[path]}" for path in sorted(per_file))
    return hashlib.sha256(joined.encode()).hexdigest()


def backoff_seconds(
    attempt: int, first: int = FIRST_BACKOFF_SECONDS, cap: int = MAX_BACKOFF_SECONDS
) -> int:
    """Delay before retry number `attempt` (0-based): first, 2×first, 4×first … at most `cap`."""
    doublings = min(max(attempt, 0), 16)
    return min(first * 2**doublings, cap)


def fetch_hub_answer(
    repo: str, commit: str, *, endpoint: str, token: str | None, timeout: float = 20.0
) -> HubAnswer:
    """Ask the Hub which weight files `repo` holds at `commit`, with their LFS sha256.

    Raises HubRefused (401/403/404) or HubUnavailable (network, timeout, 5xx, 429).
    """
    info = _model_info(
        repo, commit, endpoint=endpoint, token=token, timeout=timeout, files_metadata=True
    )
    if info.siblings is None or not info.sha:
        raise HubUnavailable(f"the Hub's answer for {repo}@{commit} lists no files or commit")
    weights = [sibling for sibling in info.siblings if is_weight_file(sibling.rfilename)]
    files = {
        sibling.rfilename: (sibling.lfs.sha256 if sibling.lfs else None) for sibling in weights
    }
    sizes = [_size_of(sibling) for sibling in weights]
    config = next((s for s in info.siblings if s.rfilename == CONFIG_FILE), None)
    return HubAnswer(
        commit=info.sha,
        files=files,
        weight_bytes=sum(sizes) if sizes and None not in sizes else None,
        config_size=None if config is None else (_size_of(config) or 0),
        repo_id=info.id if isinstance(info.id, str) else "",
    )


def _size_of(sibling) -> int | None:
    """The LFS size the Hub lists (the file's real size), else the git blob's size."""
    size = sibling.lfs.size if sibling.lfs else sibling.size
    return size if isinstance(size, int) and not isinstance(size, bool) and size >= 0 else None


def fetch_config(
    repo: str, commit: str, *, endpoint: str, token: str | None, timeout: float = 20.0
) -> dict | None:
    """`config.json` of `repo` at `commit`, read through huggingface_hub's own HTTP session and
    error mapping (`hf_hub_url`, `hf_raise_for_status`): one GET, no retries of its own (the
    check retries with its back-off), at most MAX_CONFIG_BYTES read. None when the commit holds
    no config.json, or it is larger or not a JSON object.

    Raises HubRefused (401/403/404 on the repo or revision) or HubUnavailable."""
    url = hf_hub_url(repo, CONFIG_FILE, revision=commit, endpoint=endpoint.rstrip("/"))
    headers = build_hf_headers(token=token or False)
    try:
        with get_session().stream(
            "GET", url, headers=headers, follow_redirects=True, timeout=timeout
        ) as response:
            if response.status_code >= 400:
                response.read()
                hf_raise_for_status(response)
            raw = b""
            for chunk in response.iter_bytes():
                raw += chunk
                if len(raw) > MAX_CONFIG_BYTES:
                    return None
    except RemoteEntryNotFoundError:  # the commit holds no config.json
        return None
    except HfHubHTTPError as error:
        raise _hub_error(error, repo, commit) from error
    except HFValidationError as error:
        raise HubRefused(f"{repo!r} is not a valid Hugging Face repo id: {error}") from error
    except (httpx2.HTTPError, httpx2.StreamError, OfflineModeIsEnabled) as error:
        raise HubUnavailable(
            f"the Hub could not be reached for {repo}@{commit}: {error}"
        ) from error
    try:
        config = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    return config if isinstance(config, dict) else None


def _hub_error(error: HfHubHTTPError, repo: str, revision: str) -> Exception:
    status = error.response.status_code if error.response is not None else None
    if status in (408, 429) or (status is not None and status >= 500):
        return HubUnavailable(f"the Hub answered {status} for {repo}@{revision}")
    if status in _REFUSED_STATUSES:
        return HubRefused(f"the Hub refused {repo}@{revision} ({status})")
    # Any other 4xx will not change on retry.
    return HubRefused(f"the Hub refused {repo}@{revision} ({status}): {error}")


def compare_weights(
    *, declared_hash: str | None, per_file: dict[str, str] | None, hub: HubAnswer
) -> WeightCheck:
    """docs/trust-and-ranking.md §The weight check, rules 1 and 3: the declared hash recomputes, and the files match the Hub's."""
    per_file = per_file or {}
    problems: list[str] = []
    if not per_file:
        problems.append("The run declares no weight files.")
    if not declared_hash:
        problems.append("The run declares no weights_hash.")
    elif weights_hash_of(per_file).lower() != declared_hash.lower():
        problems.append("weights_hash does not recompute from weights_per_file.")

    differences = _file_differences(per_file, hub.files)
    if differences:
        problems.append(_describe(differences))
    if problems:
        return WeightCheck(Verdict.MISMATCH, hub.commit, differences, " ".join(problems))

    unchecked = sum(1 for path in per_file if hub.files.get(path) is None)
    note = f"{len(per_file)} weight file(s) match the Hub at {hub.commit}"
    if unchecked:
        note += f"; {unchecked} not stored in Git LFS, so their hashes were not compared"
    return WeightCheck(Verdict.VERIFIED, hub.commit, (), f"{note}.")


def _model_info(
    repo: str,
    revision: str,
    *,
    endpoint: str,
    token: str | None,
    timeout: float,
    files_metadata: bool = False,
) -> ModelInfo:
    # token=False: never fall back to a token saved on the machine running the board.
    api = HfApi(endpoint=endpoint.rstrip("/"), token=token or False)
    try:
        return api.model_info(
            repo, revision=revision, files_metadata=files_metadata, timeout=timeout
        )
    except HfHubHTTPError as error:
        raise _hub_error(error, repo, revision) from error
    except HFValidationError as error:
        raise HubRefused(f"{repo!r} is not a valid Hugging Face repo id: {error}") from error
    except (httpx2.RequestError, OfflineModeIsEnabled) as error:
        raise HubUnavailable(
            f"the Hub could not be reached for {repo}@{revision}: {error}"
        ) from error
    except (ValueError, KeyError, TypeError) as error:  # a body that is not the Hub's JSON
        raise HubUnavailable(f"the Hub's answer for {repo}@{revision} was unreadable") from error


def _file_differences(
    per_file: Mapping[str, str], hub_files: Mapping[str, str | None]
) -> tuple[FileDifference, ...]:
    differences: list[FileDifference] = []
    expected = _gguf_group_parts(per_file) if _is_gguf_only(hub_files) else set(hub_files)
    for path in sorted(set(per_file) | expected):
        declared = per_file.get(path)
        on_hub = path in hub_files
        hub_sha = hub_files.get(path)
        if declared is None:
            differences.append(
                FileDifference(path, DifferenceKind.EXTRA_ON_HUB.value, None, hub_sha)
                if on_hub
                # A split part neither declared nor on the Hub: the group is incomplete.
                else FileDifference(path, DifferenceKind.MISSING_ON_HUB.value, None, None)
            )
        elif not on_hub:
            differences.append(
                FileDifference(path, DifferenceKind.MISSING_ON_HUB.value, declared, None)
            )
        elif hub_sha is not None and hub_sha.lower() != declared.lower():
            differences.append(
                FileDifference(path, DifferenceKind.HASH_DIFFERS.value, declared, hub_sha)
            )
    return tuple(differences)


def _is_gguf_only(hub_files: Iterable[str]) -> bool:
    paths = list(hub_files)
    return bool(paths) and all(path.endswith(".gguf") for path in paths)


def _gguf_group_parts(per_file: Iterable[str]) -> set[str]:
    """Every part of each split group the run declares: a GGUF run must declare them all.

    A GGUF repo usually holds many quantisations and a run uses one, so Hub files outside the
    run's groups are not differences.
    """
    parts: set[str] = set()
    for path in per_file:
        match = _GGUF_SPLIT.match(path)
        if match is not None:
            stem, total = match["stem"], match["total"]
            parts.update(
                f"{stem}-{part:0{len(total)}d}-of-{total}.gguf" for part in range(1, int(total) + 1)
            )
    return parts


def _describe(differences: tuple[FileDifference, ...]) -> str:
    labels = {
        DifferenceKind.HASH_DIFFERS.value: "hash differs",
        DifferenceKind.MISSING_ON_HUB.value: "missing on the Hub",
        DifferenceKind.EXTRA_ON_HUB.value: "on the Hub but not declared",
    }
    listed = ", ".join(f"{d.path} ({labels[d.kind]})" for d in differences)
    return f"{len(differences)} file difference(s): {listed}."
