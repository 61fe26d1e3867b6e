"""Verify the stored signed manifests against the board's published keys only: signatures,
canonical bytes, hashes and version chains (docs/trust-anchor.md §Checking a manifest). Exits non-zero on any problem."""

from django.core.management.base import BaseCommand, CommandError

from anchor.keys import BoardKeyError
from anchor.verify import check_all


class Command(BaseCommand):
    help = "Verify every stored manifest version (or those of --sample N random runs)."

    def add_arguments(self, parser):
        parser.add_argument("--sample", type=int, help="check the versions of N random runs")

    def handle(self, *args, sample: int | None, **options):
        try:
            checked, problems = check_all(sample=sample)
        except BoardKeyError as exc:
            raise CommandError(f"no published keys to check against: {exc}") from None
        for problem in problems:
            self.stderr.write(f"{problem.run_id} v{problem.version}: {problem.what}")
        if problems:
            raise CommandError(f"{len(problems)} problem(s) in {checked} manifest version(s)")
        self.stdout.write(f"{checked} manifest version(s) verified")
