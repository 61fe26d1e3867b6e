"""Reads of runs: one run, its cases a page or a batch at a time, and what a final-submit answer
carries (docs/protocol.md §The final, docs/website.md §Reading a run)."""

from django.core.paginator import EmptyPage, Page, PageNotAnInteger, Paginator
from django.db.models.functions import Length

from board.models import Result, Run


def commit_summary(run_id: str) -> dict:
    """The extra fields of a final-submit answer (docs/protocol.md §The final)."""
    return run_commit_summary(Run.objects.select_related("benchmark").get(run_id=run_id))


def run_commit_summary(run: Run) -> dict:
    """The same fields, of a run at hand (with its benchmark)."""
    return {
        "trust_tier": run.trust,
        "verification": run.verification,
        "n_results": run.n_results,
        "benchmark_id": run.benchmark.public_id if run.benchmark else None,
        "url": f"/runs/{run.run_id}/",
    }


def public_run(run_id: str) -> Run | None:
    """A run visitors may see, with its benchmark; its cases are read a page at a time
    (`run_results_page`, `run_result_batches`), never all at once."""
    return Run.objects.public().select_related("benchmark").filter(run_id=run_id).first()


def run_detail(run_id: str) -> Run | None:
    return Run.objects.public().select_related("benchmark__model").filter(run_id=run_id).first()


def _nearest_page(paginator: Paginator, number) -> int:
    """Django's `get_page` choice: the first page for junk, the last for a page past it."""
    try:
        return paginator.validate_number(number)
    except PageNotAnInteger:
        return 1
    except EmptyPage:
        return paginator.num_pages


def run_results_page(
    run: Run, number, per_page: int, *, case_id: str = "", category: str = "", strict=False
) -> Page:
    """One page of a run's cases in position order (docs/website.md §Reading a run).

    Unfiltered, a page is a range of positions (a run's cases are numbered 0 … n_results - 1)
    read from the (run, position) index and counted by `n_results`: one query, whatever the run
    holds. Filtered by case or category: a count and a page, two queries. `strict` (the API)
    raises PageNotAnInteger or EmptyPage for a page that is not one; otherwise (the HTML page)
    the nearest page is shown, as Django's `get_page` does."""
    results = Result.objects.filter(run=run).order_by("position")
    if case_id:
        results = results.filter(case_id=case_id)
    elif category:
        results = results.filter(category=category)
    paginator = Paginator(results, per_page)
    if case_id or category:
        return paginator.page(number) if strict else paginator.get_page(number)
    paginator.count = run.n_results  # known: no COUNT over the run's rows
    number = paginator.validate_number(number) if strict else _nearest_page(paginator, number)
    start = (number - 1) * per_page
    rows = list(results.filter(position__gte=start, position__lt=start + per_page))
    return Page(rows, number, paginator)


def run_result_batches(run: Run, size: int, max_bytes: int):
    """Every case of a run in position order, at most `size` at a time and, past the first
    case of a batch, at most `max_bytes` of model output: per `size` cases one query for their
    output lengths, then one per batch. One batch is held at a time (the public bundle streams
    them), so a run of a few huge answers costs no more than one of many small ones."""
    for start in range(0, run.n_results, size):
        lengths = Result.objects.filter(
            run=run, position__gte=start, position__lt=start + size
        ).values_list("position", Length("raw_output"))
        ranges, first, held = [], start, 0
        for position, length in lengths.order_by("position"):
            if position > first and held + (length or 0) > max_bytes:
                ranges.append((first, position))
                first, held = position, 0
            held += length or 0
        ranges.append((first, start + size))
        for low, high in ranges:
            yield list(
                Result.objects.filter(run=run, position__gte=low, position__lt=high).order_by(
                    "position"
                )
            )


def public_runs_by_id(run_ids) -> dict[str, dict]:
    """The runs among these that visitors may see, by id, with their board and model (one
    query, whatever their number)."""
    rows = (
        Run.objects.public()
        .filter(run_id__in=list(run_ids))
        .values("run_id", "board", "model_name", "benchmark__public_id")
    )
    return {row["run_id"]: row for row in rows}
