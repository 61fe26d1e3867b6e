"""Small evidence in its row (AEON_INLINE_EVIDENCE_BYTES): a nullable binary column, compressed
with lz4 on a PostgreSQL server built with it (14 and later). lz4 compresses a 0.2 MiB JSON body
several times faster than PostgreSQL's default pglz, which would cost the ingest a few ms; a
server without lz4 keeps its default, silently. SQLite stores a BLOB."""

from django.db import migrations, models

# EXECUTE: a server before 14 does not know the syntax, one without lz4 refuses the method; both
# are caught here, at run time, and the column keeps the server's default compression.
LZ4_SQL = """
DO $$
BEGIN
    EXECUTE 'ALTER TABLE submissions_rawbundle ALTER COLUMN content SET COMPRESSION lz4';
EXCEPTION WHEN feature_not_supported OR syntax_error OR undefined_object THEN
    NULL;
END
$$
"""


def lz4_where_supported(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(LZ4_SQL)


class Migration(migrations.Migration):
    dependencies = [
        ("submissions", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="rawbundle",
            name="content",
            field=models.BinaryField(null=True),
        ),
        migrations.RunPython(lz4_where_supported, migrations.RunPython.noop, elidable=True),
    ]
