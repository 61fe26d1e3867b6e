"""Load the demo data into a running board through the pod protocol."""

from django.core.management.base import BaseCommand, CommandError

from demo.loader import prefill_hub_cache, submit_demo_jobs


class Command(BaseCommand):
    help = "Submit the demo pods' signed bundles to a running board over HTTP."

    def add_arguments(self, parser):
        parser.add_argument("--url", default="http://127.0.0.1:8000", help="the board to submit to")

    def handle(self, *args, url: str, **options):
        prefill_hub_cache()
        load = submit_demo_jobs(url, log=self.stdout.write)
        if not load.complete:
            raise CommandError(f"the demo load stopped: {load.stopped_by} ({load.summary()})")
        self.stdout.write(f"Demo data loaded into {url}: {load.summary()}")
