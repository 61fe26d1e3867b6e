"""The embedded demo: pre-fill the Hugging Face answer cache for the demo models (labelled as
demo data) and submit their comprehensive jobs through the real signed pod protocol over HTTP.

The demo pods behave like real pods (they retry what a retry can fix, docs/protocol.md
§Transport). A load that still fails stops at the first bundle that could not be delivered and
says so; whatever was committed stays, and the next load skips it (it asks the board for every
bundle's `job_sig` first)."""

import hashlib
import secrets
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from demo.bundles import (
    DEMO_JOBS,
    TEXT_SUITE_ID,
    DemoJob,
    hub_facts_of,
    job_bundles,
    text_checkpoints,
    weights_for,
)
from demo.podclient import PodClient, PodNetworkError
from submissions.models import WeightCheckCache


class DemoLoadStopped(Exception):
    """A demo bundle could not be delivered even after the pod's retries."""


@dataclass
class DemoLoad:
    """What one demo load did. `stopped_by` says why it stopped early (None: all loaded)."""

    sent: int = 0
    already_loaded: int = 0
    jobs: int = 0
    waited_out: Counter = field(default_factory=Counter)
    checkpoints_refused: Counter = field(default_factory=Counter)
    stopped_by: str | None = None
    seconds: float = 0.0

    @property
    def complete(self) -> bool:
        return self.stopped_by is None

    def summary(self) -> str:
        parts = [f"{self.sent} bundles sent"]
        if self.already_loaded:
            parts.append(f"{self.already_loaded} already on the board")
        if self.waited_out:
            retried = ", ".join(f"{what} ×{n}" for what, n in sorted(self.waited_out.items()))
            parts.append(f"retried like a pod after {retried}")
        if self.checkpoints_refused:
            refused = ", ".join(
                f"{what} ×{n}" for what, n in sorted(self.checkpoints_refused.items())
            )
            parts.append(f"checkpoints refused ({refused}; their finals carried the rows)")
        return f"{self.jobs} demo jobs in {self.seconds:.0f} s: " + "; ".join(parts)


def prefill_hub_cache() -> int:
    """Record the demo models' weights as the Hub's answer, flagged demo: no network needed.
    With them the model facts the demo knows (`data/hub_facts.json`): weight bytes and
    config.json, so its benchmarks get rooflines (docs/cohorts.md §Rooflines)."""
    count = 0
    for job in DEMO_JOBS:
        model = job.model
        per_file, _ = weights_for(model)
        weight_bytes, config = hub_facts_of(model.hf_repo)
        facts = {
            "weight_bytes": weight_bytes,
            "config": config,
            "config_state": "found" if config is not None else "none",
        }
        entries = [(model.hf_repo, model.hf_revision, per_file, facts)]
        if model.drafter_repo:
            entries.append(
                (model.drafter_repo, model.drafter_revision, {"model.safetensors": None}, {})
            )
        for repo, commit, files, known in entries:
            _, created = WeightCheckCache.objects.get_or_create(
                repo=repo,
                commit=commit,
                defaults={"found": True, "files": files, "demo": True, **known},
            )
            count += created
    return count


def demo_pod(
    base_url: str, pod_name: str, on_retry: Callable[..., None] | None = None
) -> PodClient:
    """One demo pod per name, its key derived from a secret kept under the data folder."""
    secret_file = Path(settings.DATA_DIR) / "demo-pod.secret"
    if not secret_file.exists():
        secret_file.parent.mkdir(parents=True, exist_ok=True)
        secret_file.write_text(secrets.token_hex(32))
    seed = hashlib.sha256(f"{secret_file.read_text().strip()}:{pod_name}".encode()).digest()
    return PodClient.from_seed(
        base_url, seed, timeout=120, retry_like_a_pod=True, on_retry=on_retry
    )


def submit_demo_jobs(base_url: str, log: Callable[[str], None] = print) -> DemoLoad:
    """Submit every demo bundle not yet on the board, in the demo's commit order."""

    def on_retry(method: str, path: str, what: str, attempt: int, wait: float) -> None:
        log(f"    {method} {path}: {what}; the pod retries in {wait:g} s (attempt {attempt})")

    load = DemoLoad()
    began = time.monotonic()
    try:
        for job in DEMO_JOBS:
            pod = demo_pod(base_url, job.pod, on_retry)
            try:
                _submit_job(pod, job, load, log)
            finally:
                load.waited_out.update(pod.waited_out)
                load.checkpoints_refused.update(pod.checkpoints_refused)
    except DemoLoadStopped as exc:
        load.stopped_by = str(exc)
    except (PodNetworkError, RuntimeError) as exc:  # open_run refused, or no answer at all
        load.stopped_by = f"{type(exc).__name__}: {exc}"
    load.seconds = time.monotonic() - began
    return load


def _submit_job(pod: PodClient, job: DemoJob, load: DemoLoad, log) -> None:
    sent = 0
    for board, suite_id, model_name, bundle in job_bundles(job.model, started=job.started):
        status = pod.job_status(bundle["job_sig"])
        if status.status != 200:
            raise DemoLoadStopped(f"the board did not answer a job status: {status.status}")
        if status.body.get("exists"):
            load.already_loaded += 1
            continue
        checkpoints = text_checkpoints(bundle) if suite_id == TEXT_SUITE_ID else None
        answer = pod.submit_run(model_name, suite_id, board, bundle, checkpoints)
        if answer.status != 200:
            raise DemoLoadStopped(
                f"{job.model.display_name}: the {suite_id} bundle was answered {answer.status} "
                f"{answer.reason or ''} {answer.body.get('note', '')}".rstrip()
            )
        load.sent += 1
        sent += 1
    load.jobs += 1
    if sent:
        log(f"  {job.model.display_name} (pod {job.pod}): {sent} bundles")
