"""What a run's signed manifest says (docs/trust-anchor.md §Run manifests), built from the stored
run: identity, suite hash, scores, environment, weights, engine provenance and the run's current
standing. Only what public pages may show goes in (docs/recipes.md, "Scrubbing"): no job_sig,
job_group or start stamps, no raw commands or host paths, no token-looking strings.
"""

import hashlib

from board.models import Run
from evidence.signing import canonical_json
from recipes.scrub import public_value, scrub_extras
from recipes.secret_scan import looks_like_token

FORMAT = "aeon-bench.run-manifest"
FORMAT_VERSION = 1
WITHHELD = "[withheld]"
# The parts of a version that describe the version itself, not the run.
ENVELOPE_KEYS = ("v", "kind", "version", "previous", "issued_at", "change")


def manifest_content(run: Run, *, key_status: str) -> dict:
    """The run as the board vouches for it now; `key_status` is its pod key's status."""
    benchmark = run.benchmark
    extras = scrub_extras(run.extras or {})
    recipe = benchmark.recipe if benchmark is not None else None
    raw_recipe = extras.get("recipe") if isinstance(extras.get("recipe"), dict) else {}
    per_file = extras.get("weights_per_file")
    content = {
        "run": {
            "run_id": run.run_id,
            "benchmark_id": benchmark.public_id if benchmark is not None else None,
            "board": run.board,
            "kind": run.kind,
            "suite_id": run.suite_id,
            "harness": run.harness or None,
            "model": run.model_name,
            "canonical_model": benchmark.model.canonical_id if benchmark is not None else None,
            "target_class": run.target_class or None,
            "hardware": {
                "label": run.hardware_label,
                "class": benchmark.hardware_class.slug if benchmark is not None else None,
                "claimed": run.claimed_hardware,
            },
            "pod": run.key_fingerprint,
            "committed_at": run.committed_at.isoformat(),
            "bundle_sha256": run.bundle_sha256,
            "n_results": run.n_results,
        },
        "suite_hash": extras.get("suite_hash"),
        "quality": public_value(run.quality) or None,
        "performance": public_value(_performance(run.perf)),
        "environment": extras.get("environment"),
        "weights": {
            "hf_repo": run.hf_repo or None,
            "hf_revision": run.hf_revision or None,
            "commit": run.commit or None,
            "weights_hash": run.weights_hash or None,
            "weights_per_file": per_file if isinstance(per_file, dict) else None,
        },
        "engine": {
            "engine": raw_recipe.get("engine"),
            "serve_mode": raw_recipe.get("serve_mode"),
            "recipe": recipe.public_json() if recipe is not None else None,
            "drafter_status": run.drafter_status or None,
        },
        "standing": {
            "trust": run.trust,
            "verification": run.verification,
            "attestation_method": run.attestation_method or None,
            "run_flagged": run.flagged,
            "benchmark_flagged": bool(benchmark and benchmark.flagged),
            "hold": _hold(run),
            "pod_key": key_status,
        },
    }
    return _without_tokens(content)


def _performance(perf: dict) -> dict | None:
    """The headline figures, each naming its cohort (docs/cohorts.md); the full rows are on the
    run page."""
    if not perf:
        return None
    return {key: perf.get(key) for key in ("peak", "single_stream", "latency")}


def _hold(run: Run) -> str:
    if not run.secret_detected:
        return "none"
    return "cleared" if run.secret_cleared else "held"


def _without_tokens(value):
    """Belt and braces over the scrubbing: a string that looks like a credential is replaced,
    so a manifest never carries one, even for a run a moderator published."""
    if isinstance(value, str):
        return WITHHELD if looks_like_token(value) else value
    if isinstance(value, dict):
        return {key: _without_tokens(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_tokens(item) for item in value]
    return value


def content_of(document: dict) -> dict:
    return {key: value for key, value in document.items() if key not in ENVELOPE_KEYS}


def changed_fields(before: dict, after: dict, prefix: str = "") -> list[dict]:
    """Every leaf that differs between two contents, as {field, from, to}; whole values below
    lists."""
    changes = []
    for key in sorted(set(before) | set(after)):
        old, new = before.get(key), after.get(key)
        name = f"{prefix}{key}"
        if isinstance(old, dict) and isinstance(new, dict):
            changes += changed_fields(old, new, prefix=f"{name}.")
        elif old != new:
            changes.append({"field": name, "from": old, "to": new})
    return changes


def document_for(
    *,
    content: dict,
    run_id: str,
    version: int,
    previous_sha256: str | None,
    issued_at: str,
    change: dict | None,
) -> dict:
    return {
        "v": FORMAT_VERSION,
        "kind": FORMAT,
        "version": version,
        "previous": (
            {"version": version - 1, "sha256": previous_sha256} if previous_sha256 else None
        ),
        "issued_at": issued_at,
        "change": change,
        **content,
        "run": content["run"] | {"run_id": run_id},
    }


def document_bytes(document: dict) -> bytes:
    return canonical_json(document)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
