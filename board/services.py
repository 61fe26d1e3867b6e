"""Writes of the board: recording committed runs and everything derived from them."""

from datetime import datetime

from board.jsonsafe import storable
from board.models import Result, Run
from board.perf import PerfRowError, max_num_seqs_from_flags, summarise_perf


class BundleRuleError(ValueError):
    """A signed bundle the board cannot record; `str()` starts with the JSON pointer."""


def check_bundle(*, board: str, bundle: dict) -> None:
    """Board rules a bundle must pass before it is committed (design.md §3.7 rule 1)."""
    if board != "perf":
        return
    recipe = bundle.get("recipe") if isinstance(bundle.get("recipe"), dict) else {}
    try:
        summarise_perf(bundle.get("results") or [], max_num_seqs_from_flags(recipe.get("flags")))
    except PerfRowError as exc:
        raise BundleRuleError(f"{exc.pointer}: {exc.message}") from None


ROW_FIELDS = (
    "case_id",
    "category",
    "tier",
    "status",
    "score",
    "creativity",
    "raw_output",
    "evidence",
    "speed",
)


def record_run(
    *,
    run_id: str,
    key_fingerprint: str,
    model: str,
    board: str,
    suite_id: str | None,
    bundle: dict,
    rows: list[dict],
    bundle_sha256: str,
    committed_at: datetime,
) -> Run:
    """Record one committed bundle with its rows. Call inside the ingest transaction: a failure
    here rolls the whole commit back."""
    extras = {
        k: v for k, v in bundle.items() if k not in ("results", "run_id", "run_nonce", "final")
    }
    if isinstance(extras.get("artifacts"), list):
        extras["artifacts"] = [
            {k: v for k, v in item.items() if k != "html"} | {"has_html": bool(item.get("html"))}
            for item in extras["artifacts"]
            if isinstance(item, dict)
        ]
    run = Run.objects.create(
        run_id=run_id,
        key_fingerprint=key_fingerprint,
        model_name=storable(model),
        board=board,
        suite_id=suite_id,
        job_sig=bundle.get("job_sig"),
        job_group=bundle.get("job_group"),
        committed_at=committed_at,
        bundle_sha256=bundle_sha256,
        extras=storable(extras),
        n_results=len(rows),
    )
    Result.objects.bulk_create(
        [_result_of(run, position, row) for position, row in enumerate(rows)], batch_size=500
    )
    return run


def _result_of(run: Run, position: int, row: dict) -> Result:
    return Result(
        run=run,
        position=position,
        case_id=storable(row["case_id"]),
        category=storable(row.get("category") or ""),
        tier=row.get("tier") if isinstance(row.get("tier"), int) else None,
        status=storable(row["status"]),
        score=row.get("score"),
        creativity=row.get("creativity"),
        raw_output=(row.get("raw_output") or "").encode("utf-8"),
        evidence=storable(row.get("evidence")),
        speed=storable(row.get("speed")),
        extras=storable({k: v for k, v in row.items() if k not in ROW_FIELDS}),
    )
