"""Load the demo data into a running board through the pod protocol."""

from django.core.management.base import BaseCommand

from submissions.demo.loader import prefill_hub_cache, submit_demo_jobs


class Command(BaseCommand):
    help = "Submit the demo pods' signed bundles to a running board over HTTP."

    def add_arguments(self, parser):
        parser.add_argument("--url", default="http://127.0.0.1:8000", help="the board to submit to")

    def handle(self, *args, url: str, **options):
        prefill_hub_cache()
        sent = submit_demo_jobs(url, log=self.stdout.write)
        self.stdout.write(f"demo data loaded: {sent} bundles sent to {url}")
