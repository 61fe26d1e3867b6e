"""The weight check of a committed run (docs/trust-and-ranking.md §The weight check): recompute the manifest hash, resolve the
commit, ask Hugging Face (through a per-commit cache in the database), compare file by file,
check the drafter, and hand the verdict to the board."""

from dataclasses import asdict
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from board import services as board_services
from board.modelfacts import ModelFacts, model_facts
from board.models import Run, Verification
from board.revisions import is_commit, resolve_commit
from submissions import signals
from submissions.models import WeightCheckCache
from submissions.weights import (
    MAX_CONFIG_BYTES,
    HubAnswer,
    HubRefused,
    HubUnavailable,
    backoff_seconds,
    compare_weights,
    fetch_config,
    fetch_hub_answer,
    weights_hash_of,
)


class WeightCheckDeferred(Exception):
    """Hugging Face did not answer; try again after `countdown` seconds."""

    def __init__(self, countdown: int, note: str):
        super().__init__(note)
        self.countdown = countdown


def overdue_pending_run_ids(limit: int = 1000) -> list[str]:
    """Runs still pending past the time their next attempt was due, by a grace
    (`AEON_WEIGHT_SWEEP_GRACE_SECONDS`): a check lost on the way (a publish that failed, a
    broker restarted without its data, a worker that died, a wait longer than a task keeps) or
    one whose retries were dropped. The beat sends their checks again, every minute, so a run
    left pending by a fault leaves it within minutes. A run's next attempt is due `backoff`
    after each attempt it made (docs/trust-and-ranking.md §The weight check), counted from its
    commit. A check sent twice is harmless: the verdict is recorded once and the Hub's answer is
    cached per commit. Reads only pending runs (a partial index holds them)."""
    now = timezone.now()
    grace = timedelta(seconds=settings.AEON_WEIGHT_SWEEP_GRACE_SECONDS)
    pending = Run.objects.filter(verification=Verification.PENDING, committed_at__lt=now - grace)
    rows = pending.order_by("committed_at").values_list(
        "run_id", "committed_at", "verification_attempts"
    )
    due = []
    for run_id, committed_at, attempts in rows.iterator(chunk_size=2000):
        if committed_at + timedelta(seconds=waited_before(attempts)) + grace <= now:
            due.append(run_id)
            if len(due) >= limit:
                break
    return due


def waited_before(attempts: int) -> int:
    """Seconds from a run's commit to its next attempt after `attempts` failed ones."""
    first, cap = settings.AEON_WEIGHT_RETRY_FIRST_SECONDS, settings.AEON_WEIGHT_RETRY_MAX_SECONDS
    return sum(backoff_seconds(attempt, first, cap) for attempt in range(min(attempts, 500)))


def _hub() -> dict:
    """Where and how the board asks the Hub (AEON_HF_ENDPOINT, its token and timeout)."""
    return {
        "endpoint": settings.AEON_HF_ENDPOINT,
        "token": settings.AEON_HF_TOKEN,
        "timeout": settings.AEON_HF_TIMEOUT_SECONDS,
    }


def hub_answer(repo: str, commit: str) -> HubAnswer:
    """The Hub's weight files of `repo` at `commit`, asked once per commit and then cached.
    Raises HubRefused (cached for AEON_HF_REFUSED_CACHE_SECONDS: access can be granted later)
    or HubUnavailable (never cached)."""
    cached = WeightCheckCache.objects.filter(repo=repo, commit=commit).first()
    if cached is not None and not cached.found and _refusal_expired(cached):
        cached = None
    if cached is None:
        try:
            answer = fetch_hub_answer(repo, commit, **_hub())
        except HubRefused:
            _remember(repo, commit, found=False, files={})
            raise
        _remember(repo, commit, found=True, files=answer.files, **_facts_inputs(answer))
        return answer
    if not cached.found:
        raise HubRefused(f"{repo}@{commit}: refused by the Hub (cached answer)")
    return HubAnswer(
        commit=commit,
        files=cached.files,
        weight_bytes=cached.weight_bytes,
        config_size=cached.config_size,
        repo_id=cached.repo_id,
    )


def _facts_inputs(answer: HubAnswer) -> dict:
    return {
        "weight_bytes": answer.weight_bytes,
        "config_size": answer.config_size,
        "config_state": "none" if answer.config_size is None else "listed",
        "repo_id": answer.repo_id[:300],
    }


def hub_facts(repo: str, commit: str) -> ModelFacts:
    """The model facts of a verified commit (docs/cohorts.md §Rooflines): its weight bytes as the
    Hub lists them and its config.json, each asked once per commit and cached with the Hub's
    answer. Raises HubUnavailable (the check is retried) or HubRefused."""
    cached = WeightCheckCache.objects.get(repo=repo, commit=commit)
    changed: dict = {}
    if cached.config_state == "" and not cached.demo:  # cached before the board read facts
        answer = fetch_hub_answer(repo, commit, **_hub())
        changed.update(_facts_inputs(answer))
    state = changed.get("config_state", cached.config_state)
    if state == "listed":
        size = changed.get("config_size", cached.config_size)
        if size is not None and size > MAX_CONFIG_BYTES:
            changed["config_state"] = "too_large"
        else:
            try:
                config = fetch_config(repo, commit, **_hub())
            except HubRefused:
                config = None
            changed.update(config=config, config_state="found" if config else "unreadable")
    if changed:
        WeightCheckCache.objects.filter(pk=cached.pk).update(**changed)
        for name, value in changed.items():
            setattr(cached, name, value)
    config = cached.config if cached.config_state == "found" else None
    facts = model_facts(config, cached.weight_bytes, repo)
    if config is None and not facts.known:
        reason = {
            "none": "the commit lists no config.json",
            "too_large": "its config.json is too large to read",
            "unreadable": "its config.json is not a JSON object",
        }.get(cached.config_state)
        if reason:
            return ModelFacts(
                known=False, note=f"{facts.note}; {reason}", weight_bytes=facts.weight_bytes
            )
    return facts


def _refusal_expired(cached: WeightCheckCache) -> bool:
    age = timezone.now() - cached.fetched_at
    return age >= timedelta(seconds=settings.AEON_HF_REFUSED_CACHE_SECONDS)


def _remember(repo: str, commit: str, *, found: bool, files: dict, **facts) -> None:
    """Store the Hub's answer; an expired refusal is replaced by the new answer."""
    try:
        WeightCheckCache.objects.update_or_create(
            repo=repo,
            commit=commit,
            defaults={"found": found, "files": files, "fetched_at": timezone.now(), **facts},
        )
    except IntegrityError:  # a concurrent check stored the same answer
        pass


def check_run_weights(run_id: str, *, force: bool = False) -> str:
    """Run the check for one run and record its verdict; returns the verdict.

    Raises WeightCheckDeferred while the Hub is unavailable and the 24 h window is open."""
    run = Run.objects.filter(run_id=run_id).first()
    if run is None:  # removed since the check was queued (e.g. by a rebuild in progress)
        return "gone"
    if run.verification != Verification.PENDING and not force:
        return run.verification
    if run.verification == Verification.NOT_APPLICABLE:
        return run.verification
    attempts = run.verification_attempts + 1
    if force:  # a moderator asks again: a repo refused before may have been opened since
        WeightCheckCache.objects.filter(found=False, repo__in=_repos_of(run)).delete()
    extras = run.extras
    per_file = (
        extras.get("weights_per_file") if isinstance(extras.get("weights_per_file"), dict) else {}
    )
    manifest = (
        extras.get("deployment_manifest")
        if isinstance(extras.get("deployment_manifest"), dict)
        else None
    )
    recipe = extras.get("recipe") if isinstance(extras.get("recipe"), dict) else {}

    def record(
        verdict: str,
        note: str,
        *,
        commit: str | None = None,
        differences=(),
        drafter: str = "",
        facts: ModelFacts | None = None,
        hub_name: str = "",
    ):
        # The verdict and the manifest version saying so commit together or not at all: a
        # failure in between (the database gone) leaves the run pending, to be checked again,
        # never verified under a signed manifest that still says pending.
        with transaction.atomic():
            board_services.record_weight_verdict(
                run_id=run_id,
                verdict=verdict,
                commit=commit,
                note=note,
                differences=[asdict(d) for d in differences],
                drafter_status=drafter,
                attempts=attempts,
                checked_at=timezone.now(),
                model_facts=facts.to_json() if facts is not None else {},
                hub_name=hub_name,
            )
            signals.weight_verdict_recorded.send(Run, run_id=run_id, verdict=verdict)
        return verdict

    if (
        not per_file
        or not run.weights_hash
        or weights_hash_of(per_file) != run.weights_hash.lower()
    ):
        return record(
            Verification.MISMATCH, "weights_hash does not recompute from weights_per_file."
        )
    commit = resolve_commit(run.hf_revision, manifest)
    if commit is None:
        return record(
            Verification.UNVERIFIABLE,
            "No commit: hf_revision is not a commit and the manifest names none.",
        )
    try:
        answer = hub_answer(run.hf_repo, commit)
        check = compare_weights(declared_hash=run.weights_hash, per_file=per_file, hub=answer)
        drafter = _drafter_status(recipe)
        # Facts only of weights that match the Hub: a verified commit is the one that ran.
        facts = hub_facts(run.hf_repo, commit) if check.verdict == Verification.VERIFIED else None
    except HubRefused:
        # The same words whether the Hub refused just now or the cache remembers it, so a
        # rebuild gives back the same run.
        return record(
            Verification.UNVERIFIABLE,
            f"Hugging Face refused {run.hf_repo}@{commit}: gated, private, deleted or unknown.",
            commit=commit,
        )
    except HubUnavailable as exc:
        window = settings.AEON_WEIGHT_RETRY_WINDOW_SECONDS
        if timezone.now() - run.committed_at >= timedelta(seconds=window):
            waited = f"{window // 3600} h" if window % 3600 == 0 else f"{window} s"
            return record(
                Verification.UNVERIFIABLE,
                f"Hugging Face unavailable for {waited} ({exc}); a moderator can check again.",
                commit=commit,
            )
        board_services.note_weight_attempt(
            run_id=run_id, attempts=attempts, note=f"Hugging Face unavailable: {exc}"
        )
        countdown = backoff_seconds(
            attempts - 1,
            settings.AEON_WEIGHT_RETRY_FIRST_SECONDS,
            settings.AEON_WEIGHT_RETRY_MAX_SECONDS,
        )
        raise WeightCheckDeferred(countdown, str(exc)) from None
    return record(
        check.verdict,
        check.note,
        commit=check.commit,
        differences=check.differences,
        drafter=drafter,
        facts=facts,
        hub_name=answer.repo_id,
    )


def _drafter_status(recipe: dict) -> str:
    """Badge for the drafter: unpinned or missing drafters are shown, never refused."""
    repo, revision = recipe.get("drafter_repo"), recipe.get("drafter_revision")
    if not isinstance(repo, str) or not repo:
        return ""
    if not is_commit(revision):
        return "unpinned"
    try:
        hub_answer(repo, revision.lower())
    except HubRefused:
        return "missing"
    return "pinned_ok"


def _repos_of(run: Run) -> list[str]:
    recipe = run.extras.get("recipe") if isinstance(run.extras.get("recipe"), dict) else {}
    return [
        repo for repo in (run.hf_repo, recipe.get("drafter_repo")) if isinstance(repo, str) and repo
    ]
