"""The beat's sweep (docs/operations.md §Background work): a run still pending long after its
weight check should have ended gets its check sent again, and a fresh one is left alone."""

from datetime import timedelta

import pytest
from django.utils import timezone

from board.models import Run
from demo.bundles import demo_model
from submissions.tasks import sweep_pending_weight_checks
from tests.boardjobs import core_job, put_on_hub, submit_job

GEMMA = demo_model("gemma-4-26b-a4b-dflash-spark")


@pytest.mark.django_db
def test_the_sweep_sends_again_only_the_checks_that_are_overdue(pod, hub, settings):
    hub.fail_next(GEMMA.hf_repo, 503, times=50)  # Hugging Face down: the checks defer
    answers = submit_job(pod, core_job(GEMMA))
    run_ids = [answer.body["run_id"] for answer in answers]
    assert set(Run.objects.values_list("verification", flat=True)) == {"pending"}
    hub.recover(GEMMA.hf_repo)
    put_on_hub(hub, GEMMA)

    assert sweep_pending_weight_checks() == 0  # just committed: their retries are running

    overdue = timezone.now() - timedelta(seconds=2 * settings.AEON_WEIGHT_RETRY_MAX_SECONDS + 60)
    Run.objects.filter(run_id=run_ids[0]).update(committed_at=overdue)
    assert sweep_pending_weight_checks() == 1
    verdicts = dict(Run.objects.values_list("run_id", "verification"))
    assert verdicts == {run_ids[0]: "verified", run_ids[1]: "pending"}
