"""Put the raw bundles of a backup folder back into the blob store in use (a restore,
docs/operations.md §Backup and restore): every bundle the restored database names and does not
hold in its own row (a body kept inline came back with the database dump)."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from evidence.blobstore import FileBlobStore, blob_store, sha256_hex
from submissions.models import RawBundle


class Command(BaseCommand):
    help = "Copy the bundles the database names from --from (a backup folder) into the store."

    def add_arguments(self, parser):
        parser.add_argument("--from", dest="source", required=True, help="backup folder")

    def handle(self, *args, source: str, **options):
        backup, target = FileBlobStore(Path(source)), blob_store()
        missing = []
        count = 0
        in_store = RawBundle.objects.filter(content__isnull=True).order_by("sha256")
        for digest in in_store.values_list("sha256", flat=True):
            try:
                data = backup.get(digest)
            except FileNotFoundError:
                missing.append(digest)
                continue
            if sha256_hex(data) != digest:
                raise CommandError(f"the backed-up bundle {digest} does not hash to its name")
            target.put(data, digest=digest)
            count += 1
        if missing:
            raise CommandError(f"{len(missing)} bundles missing from the backup, e.g. {missing[0]}")
        inline = RawBundle.objects.filter(content__isnull=False).count()
        self.stdout.write(f"evidence imported: {count} bundles ({inline} more in the database)")
