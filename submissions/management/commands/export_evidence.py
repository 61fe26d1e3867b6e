"""Copy every raw bundle the database names into a folder (backups, docs/operations.md §Backup
and restore): the bodies kept in their rows and those in the blob store alike, so that the
folder alone holds every bundle. Works the same on the folder and the bucket backend: the
database lists the evidence, the store only has to read what is not in the database."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evidence.blobstore import FileBlobStore, sha256_hex
from submissions.models import RawBundle
from submissions.selectors import raw_bundle


class Command(BaseCommand):
    help = "Copy every stored raw bundle into --to (a folder laid out as the folder backend)."

    def add_arguments(self, parser):
        parser.add_argument("--to", required=True, help="destination folder")

    def handle(self, *args, to: str, **options):
        target = FileBlobStore(Path(to))
        copied = kept = 0
        for digest in RawBundle.objects.order_by("sha256").values_list("sha256", flat=True):
            if target.exists(digest):
                kept += 1
                continue
            data = raw_bundle(digest)
            if sha256_hex(data) != digest:
                raise CommandError(f"the stored bundle {digest} does not hash to its name")
            target.put(data, digest=digest)
            copied += 1
        self.stdout.write(f"evidence exported: {copied} bundles copied, {kept} already there")
