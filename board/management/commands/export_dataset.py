"""`manage.py export_dataset`: write a new version of the data to take away now (docs/lab.md
§Data to take away); the beat does the same on a schedule."""

from django.core.management.base import BaseCommand

from board.datasets import write_dataset


class Command(BaseCommand):
    help = "Write the ranked board, its cohorts and recipes as Parquet and CSV (a new version)."

    def handle(self, *args, **options):
        export = write_dataset()
        for name, entry in sorted(export.files.items()):
            self.stdout.write(f"v{export.version} {name}: {entry['rows']} rows, {entry['bytes']} B")
