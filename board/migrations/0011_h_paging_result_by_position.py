# A run's cases read a page at a time, by position (docs/website.md §Reading a run).

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("board", "0010_merge_parallel_work"),
    ]

    operations = [
        migrations.AddIndex(
            model_name="result",
            index=models.Index(fields=["run", "position"], name="result_run_position"),
        ),
    ]
