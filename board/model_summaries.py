"""A model's summary on one hardware class (ModelClassSummary): which of its published
benchmarks there holds the best figure of each kind the model page shows. Pure: the class
recompute (board/class_recompute.py) and migration 0006, which filled the table, both use it."""

from datetime import UTC, datetime

NEVER = datetime(1970, 1, 1, tzinfo=UTC)  # before every submission

MODEL_PAGE_FIGURES = {
    "best_peak": ("peak_tps", False),
    "best_single": ("single_stream_tps", False),
    "best_latency": ("ttft_ms", True),
}


def _best_by(rows: list[dict], name: str, lowest: bool) -> int | None:
    """The pk of the row with the best `name`; a tie goes to the latest submitted (one not
    submitted first), then to the highest pk: the tables' order."""
    candidates = [row for row in rows if row[name] is not None]
    candidates.sort(
        key=lambda row: (row["submitted_at"] is None, row["submitted_at"] or NEVER, row["pk"]),
        reverse=True,
    )
    pick = min if lowest else max  # both keep the first of equals
    return pick(candidates, key=lambda row: row[name])["pk"] if candidates else None


def summary_fields(rows: list[dict]) -> dict:
    """A model's summary on one class from its published benchmarks there (each a dict of
    pk, ranked, submitted_at and the figures); pure."""
    ranked = [row for row in rows if row["ranked"]]
    pool = ranked or rows
    return {
        "benchmark_count": len(rows),
        "ranked_count": len(ranked),
        "latest_at": max(
            (row["submitted_at"] for row in rows if row["submitted_at"]), default=None
        ),
        **{
            f"{field}_id": _best_by(pool, name, lowest)
            for field, (name, lowest) in MODEL_PAGE_FIGURES.items()
        },
    }
