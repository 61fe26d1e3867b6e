"""Tasks that rewrite derived rows (config/celery.py `durable_task`) retry on a worker while the
database is unreachable; run inline (eager, the embedded default) they run inside the request
that committed, where a database they cannot reach is logged and left to the next commit, once,
instead of retried at once in a loop that held the request for as long as the lock."""

import psycopg
import pytest
from django.db import connection

from board import tasks
from board.models import HardwareClass


@pytest.fixture
def locked_class(postgres):
    """A hardware class whose row another connection holds locked (FOR UPDATE)."""
    box = HardwareClass.objects.create(slug="locked-box", name="Locked box", family="other")
    db = connection.settings_dict
    other = psycopg.connect(
        host=db["HOST"] or "127.0.0.1",
        port=db["PORT"] or 5432,
        user=db["USER"] or "postgres",
        dbname=db["NAME"],
    )
    other.execute(
        f"SELECT id FROM {HardwareClass._meta.db_table} WHERE id = %s FOR UPDATE", [box.pk]
    )
    yield box
    other.rollback()
    other.close()


def test_an_inline_rewrite_that_cannot_take_its_lock_is_left_to_the_next_commit(
    locked_class, caplog
):
    assert tasks.recompute_read_models.app.conf.task_always_eager
    with connection.cursor() as cursor:
        cursor.execute("SET lock_timeout = '100ms'")  # the lock wait fails, as SQLite's busy one
    with caplog.at_level("WARNING", logger="aeon.tasks"):
        tasks.recompute_read_models.delay(locked_class.pk, None)

    left = [r for r in caplog.records if "left to the next commit" in r.getMessage()]
    assert len(left) == 1, caplog.text  # one attempt, not a retry loop inside the request
    assert left[0].getMessage().startswith("board.tasks.recompute_read_models")
