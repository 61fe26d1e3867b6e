"""A final's commit on PostgreSQL writes its per-case rows ahead of its run and has their foreign
key checked while its manifest is made (board/services.py `rows_written_ahead`,
`rows_checked_meanwhile`). Both rely on the constraint being deferred when a commit starts: two
finals committed inside one outer transaction (as a test case, or any caller holding one, runs
them) both commit, and their rows point at their runs."""

import json

import pytest
from django.db import connection
from django.test import Client

from board.models import Result, Run
from demo.podclient import PodClient
from tests.conftest import missing_service
from tests.podchannel import results_path, small_content
from tests.test_ingest_complexity import open_session

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def post_final(client: Client, pod: PodClient, session, content: dict):
    return client.post(
        results_path(session.run_id),
        json.dumps(pod.signed_results(session, content, final=True)),
        "application/json",
        HTTP_X_AEON_RUN_TOKEN=session.run_token,
    )


def test_two_finals_in_one_outer_transaction_both_write_their_rows_ahead():
    if connection.vendor != "postgresql":
        missing_service("needs PostgreSQL: set DATABASE_URL=postgres://…")
    assert connection.in_atomic_block  # the test's own transaction holds both commits
    client = Client()
    for rows in (3, 5):
        pod = PodClient("http://testserver")
        session = open_session(client, pod)
        answer = post_final(client, pod, session, small_content(rows))
        assert answer.status_code == 200, answer.json()
        run = Run.objects.get(run_id=session.run_id)
        assert Result.objects.filter(run=run).count() == rows
    with connection.cursor() as cursor:  # every deferred check passes at the end, too
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
