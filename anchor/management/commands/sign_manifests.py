"""Sign what has no manifest yet, and issue a new version where the stored one no longer says
what the board shows (docs/trust-anchor.md §Run manifests)."""

from django.core.management.base import BaseCommand, CommandError

from anchor.keys import BoardKeyError
from anchor.services import sign_all_manifests


class Command(BaseCommand):
    help = "Sign run manifests missing or out of date (after the key was missing, or an upgrade)."

    def handle(self, *args, **options):
        try:
            issued = sign_all_manifests(cause={"kind": "reconcile"})
        except BoardKeyError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"{len(issued)} manifest version(s) signed")
