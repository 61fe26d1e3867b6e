#!/usr/bin/env bash
# Back up the board (docs/operations.md §Backup and restore): the database with pg_dump (custom
# format), then the evidence, every raw bundle the database names, written into the backup folder
# by `manage.py export_evidence` from its database row (small bundles) or out of the blob store in
# use (folder or bucket). The dump comes first: evidence is written before the rows that name it,
# so every bundle the dump names is there to copy.
#
#   DATABASE_URL=postgres://… deploy/backup.sh [DEST]     (default: $BACKUP_DIR/<UTC time>)
#
# Run it where the board's settings are (the app container, or beside `make prod` with the
# same environment). PYTHON names the interpreter (default: python).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${DATABASE_URL:?set DATABASE_URL to the live database}"
PYTHON="${PYTHON:-python}"
dest="${1:-${BACKUP_DIR:-var/backups}/$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$dest"

pg_dump --format=custom --no-owner --no-acl --dbname="$DATABASE_URL" --file="$dest/db.dump"
"$PYTHON" manage.py export_evidence --to "$dest/blobs"
(cd "$dest" && sha256sum db.dump > SHA256SUMS)
echo "backup written to $dest"
