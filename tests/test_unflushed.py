"""Bookkeeping writes that do not wait for the disk flush (config/durability.py): a statement run
by `run_unflushed` outside a transaction commits with `synchronous_commit` off, in one prepared
statement; inside a transaction it joins it, and the transaction's commit is flushed."""

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from config.durability import run_unflushed

pytestmark = pytest.mark.postgres

# A constraint trigger deferred to the commit records the setting the commit runs with.
SETUP_SQL = """
CREATE TABLE aeon_test_unflushed (x integer);
CREATE TABLE aeon_test_commit_setting (setting text);
CREATE FUNCTION aeon_test_commit_setting() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO aeon_test_commit_setting VALUES (current_setting('synchronous_commit'));
    RETURN NULL;
END
$$;
CREATE CONSTRAINT TRIGGER aeon_test_commit_setting AFTER INSERT OR UPDATE ON aeon_test_unflushed
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION aeon_test_commit_setting();
"""
CLEANUP_SQL = """
DROP TABLE IF EXISTS aeon_test_unflushed;
DROP FUNCTION IF EXISTS aeon_test_commit_setting() CASCADE;
DROP TABLE IF EXISTS aeon_test_commit_setting;
"""


@pytest.fixture
def commit_settings(postgres):
    with connection.cursor() as cursor:
        cursor.execute(CLEANUP_SQL)
        cursor.execute(SETUP_SQL)

    def read() -> list[str]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT setting FROM aeon_test_commit_setting")
            return [setting for (setting,) in cursor.fetchall()]

    try:
        yield read
    finally:
        with connection.cursor() as cursor:
            cursor.execute(CLEANUP_SQL)


def test_alone_a_statement_commits_unflushed_in_one_statement(commit_settings):
    with CaptureQueriesContext(connection) as queries:
        assert run_unflushed("INSERT INTO aeon_test_unflushed (x) VALUES (%s)", [1]) is None
        updated = run_unflushed("UPDATE aeon_test_unflushed SET x = x + 1", returning="x")

    assert updated == (2,)
    assert len(queries.captured_queries) == 2
    assert commit_settings() == ["off", "off"]
    with connection.cursor() as cursor:
        cursor.execute("SHOW synchronous_commit")
        assert cursor.fetchone() == ("on",)


def test_inside_a_transaction_it_joins_the_transactions_flushed_commit(commit_settings):
    with transaction.atomic():
        run_unflushed("INSERT INTO aeon_test_unflushed (x) VALUES (%s)", [1])
        assert run_unflushed("UPDATE aeon_test_unflushed SET x = 5", returning="x") == (5,)

    assert commit_settings() == ["on", "on"]
