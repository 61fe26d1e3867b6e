"""The weight check of a committed run (docs/trust-and-ranking.md §The weight check): recompute the manifest hash, resolve the
commit, ask Hugging Face (through a per-commit cache in the database), compare file by file,
check the drafter, and hand the verdict to the board."""

from dataclasses import asdict
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError
from django.utils import timezone

from anchor import services as anchor_services
from board import services as board_services
from board.models import Run, Verification
from submissions.models import WeightCheckCache
from submissions.weights import (
    HubAnswer,
    HubRefused,
    HubUnavailable,
    backoff_seconds,
    compare_weights,
    fetch_hub_answer,
    is_commit,
    resolve_commit,
    weights_hash_of,
)


class WeightCheckDeferred(Exception):
    """Hugging Face did not answer; try again after `countdown` seconds."""

    def __init__(self, countdown: int, note: str):
        super().__init__(note)
        self.countdown = countdown


def overdue_pending_run_ids() -> list[str]:
    """Runs still pending long after their checks should have ended (a lost enqueue, a broker
    restart without persistence): the beat sends their checks again. A check sent twice is
    harmless: the verdict is recorded once and the Hub's answer is cached per commit."""
    overdue = timezone.now() - timedelta(seconds=2 * settings.AEON_WEIGHT_RETRY_MAX_SECONDS)
    pending = Run.objects.filter(verification=Verification.PENDING, committed_at__lt=overdue)
    return list(pending.values_list("run_id", flat=True)[:1000])


def hub_answer(repo: str, commit: str) -> HubAnswer:
    """The Hub's weight files of `repo` at `commit`, asked once per commit and then cached.
    Raises HubRefused (cached for AEON_HF_REFUSED_CACHE_SECONDS: access can be granted later)
    or HubUnavailable (never cached)."""
    cached = WeightCheckCache.objects.filter(repo=repo, commit=commit).first()
    if cached is not None and not cached.found and _refusal_expired(cached):
        cached = None
    if cached is None:
        try:
            answer = fetch_hub_answer(
                repo,
                commit,
                endpoint=settings.AEON_HF_ENDPOINT,
                token=settings.AEON_HF_TOKEN,
                timeout=settings.AEON_HF_TIMEOUT_SECONDS,
            )
        except HubRefused:
            _remember(repo, commit, found=False, files={})
            raise
        _remember(repo, commit, found=True, files=answer.files)
        return answer
    if not cached.found:
        raise HubRefused(f"{repo}@{commit}: refused by the Hub (cached answer)")
    return HubAnswer(commit=commit, files=cached.files)


def _refusal_expired(cached: WeightCheckCache) -> bool:
    age = timezone.now() - cached.fetched_at
    return age >= timedelta(seconds=settings.AEON_HF_REFUSED_CACHE_SECONDS)


def _remember(repo: str, commit: str, *, found: bool, files: dict) -> None:
    """Store the Hub's answer; an expired refusal is replaced by the new answer."""
    try:
        WeightCheckCache.objects.update_or_create(
            repo=repo,
            commit=commit,
            defaults={"found": found, "files": files, "fetched_at": timezone.now()},
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
        verdict: str, note: str, *, commit: str | None = None, differences=(), drafter: str = ""
    ):
        board_services.record_weight_verdict(
            run_id=run_id,
            verdict=verdict,
            commit=commit,
            note=note,
            differences=[asdict(d) for d in differences],
            drafter_status=drafter,
            attempts=attempts,
            checked_at=timezone.now(),
        )
        anchor_services.after_weight_verdict(run_id, verdict)
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
    except HubRefused:
        # The same words whether the Hub refused just now or the cache remembers it, so a
        # rebuild gives back the same run.
        return record(
            Verification.UNVERIFIABLE,
            f"Hugging Face refused {run.hf_repo}@{commit}: gated, private, deleted or unknown.",
            commit=commit,
        )
    except HubUnavailable as exc:
        if timezone.now() - run.committed_at >= timedelta(
            seconds=settings.AEON_WEIGHT_RETRY_WINDOW_SECONDS
        ):
            return record(
                Verification.UNVERIFIABLE,
                f"Hugging Face unavailable for 24 h ({exc}); a moderator can check again.",
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
