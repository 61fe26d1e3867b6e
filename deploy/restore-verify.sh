#!/usr/bin/env bash
# Restore a backup into a scratch database and blob folder, then verify it (docs/operations.md
# §Backup and restore): every bundle present, a sample of bundles re-hashed and their pods'
# signatures verified, a sample of signed manifests verified, and the restored board's
# champions compared with the live board's.
#
#   RESTORE_DATABASE_URL=postgres://…/aeon_restore LIVE_URL=https://… \
#     deploy/restore-verify.sh BACKUP_DIR
#
# The scratch database is dropped and created again: its name must end in "restore", and it
# must not be DATABASE_URL. The bundles the restored rows do not hold themselves go to
# RESTORE_BLOB_DIR (default BACKUP_DIR/restored).
# A real restore (docs/operations.md §Restore) is the same two steps pointed at the new
# production database and store.
set -euo pipefail
cd "$(dirname "$0")/.."
backup="${1:?name the backup folder}"
: "${RESTORE_DATABASE_URL:?set RESTORE_DATABASE_URL to a scratch database (name ending in restore)}"
PYTHON="${PYTHON:-python}"
name="${RESTORE_DATABASE_URL##*/}"
case "$name" in *restore) ;; *) echo "refusing: the scratch database name must end in 'restore'" >&2; exit 2 ;; esac
if [ "${DATABASE_URL:-}" = "$RESTORE_DATABASE_URL" ]; then
  echo "refusing: RESTORE_DATABASE_URL is the live DATABASE_URL" >&2; exit 2
fi
(cd "$backup" && sha256sum --check --quiet SHA256SUMS)

admin="${RESTORE_DATABASE_URL%/*}/postgres"
psql --quiet --no-psqlrc --dbname="$admin" -v ON_ERROR_STOP=1 \
  -c "DROP DATABASE IF EXISTS \"$name\" WITH (FORCE)" -c "CREATE DATABASE \"$name\""
pg_restore --no-owner --no-acl --exit-on-error --dbname="$RESTORE_DATABASE_URL" "$backup/db.dump"

export DATABASE_URL="$RESTORE_DATABASE_URL"
export AEON_BLOB_BACKEND=file AEON_BLOB_DIR="${RESTORE_BLOB_DIR:-$backup/restored}"
unset CACHE_URL  # the restored board keeps its answers to itself
export CELERY_BROKER_URL=""  # and queues nothing on the live broker
"$PYTHON" manage.py import_evidence --from "$backup/blobs"
"$PYTHON" manage.py verify_restore --sample "${SAMPLE:-50}" ${LIVE_URL:+--live "$LIVE_URL"}
