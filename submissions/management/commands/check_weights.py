"""Run the weight check again: for one run, or for every run still pending."""

from django.core.management.base import BaseCommand, CommandError

from board.models import Run, Verification
from submissions.weight_checks import WeightCheckDeferred, check_run_weights


class Command(BaseCommand):
    help = "Check a run's weights against Hugging Face again (moderators), or sweep pending runs."

    def add_arguments(self, parser):
        parser.add_argument(
            "run_ids", nargs="*", help="runs to check again, whatever their verdict"
        )
        parser.add_argument("--pending", action="store_true", help="check every run still pending")

    def handle(self, *args, run_ids: list[str], pending: bool, **options):
        if not run_ids and not pending:
            raise CommandError("name run ids or pass --pending")
        targets = list(run_ids)
        if pending:
            targets += Run.objects.filter(verification=Verification.PENDING).values_list(
                "run_id", flat=True
            )
        for run_id in targets:
            if not Run.objects.filter(run_id=run_id).exists():
                raise CommandError(f"no run {run_id}")
            try:
                verdict = check_run_weights(run_id, force=run_id in run_ids)
            except WeightCheckDeferred as deferred:
                verdict = f"pending (Hugging Face unavailable: {deferred})"
            self.stdout.write(f"{run_id}: {verdict}")
