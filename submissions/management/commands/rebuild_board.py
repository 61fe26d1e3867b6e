"""Re-derive the whole board from the stored raw bundles."""

from django.core.management.base import BaseCommand

from submissions.rebuild import rebuild_board


class Command(BaseCommand):
    help = "Rebuild every benchmark, run, cohort and score from the stored raw bundles."

    def handle(self, *args, **options):
        count = rebuild_board()
        self.stdout.write(f"rebuilt {count} runs from their bundles")
