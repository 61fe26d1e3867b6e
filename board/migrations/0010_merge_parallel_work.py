# Joins the four migrations made side by side in one session (facts, reproductions, the pending index, the lab).

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("board", "0009_h19a_model_facts"),
        ("board", "0009_h19b_reproduction_keys_copies"),
        ("board", "0009_h20b_run_pending_index"),
        ("board", "0009_h22_recipe_lab"),
    ]

    operations = []
