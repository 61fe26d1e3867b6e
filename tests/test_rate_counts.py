"""A request's rate count is one statement (submissions/ingest/rate_limits.py): the window's row
upserted with its count returned, on PostgreSQL and SQLite alike; the count is exact."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from config.api_errors import Reason
from submissions.ingest.outcomes import Refusal
from submissions.ingest.rate_limits import check_rate_limit
from submissions.models import RateCounter

pytestmark = pytest.mark.django_db


def counted(scope: str, limit: int = 10) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        check_rate_limit(scope, limit)
    return [query["sql"] for query in queries.captured_queries]


def test_a_window_first_request_creates_its_row_and_forgets_older_windows():
    statements = counted("ip:192.0.2.1")
    # The upsert, then the deletion of the windows before the previous one (first hit only).
    assert len(statements) == 2, statements
    assert statements[0].startswith("INSERT") and "ON CONFLICT" in statements[0]
    assert statements[1].startswith("DELETE")
    assert RateCounter.objects.get(scope="ip:192.0.2.1").count == 1


def test_later_requests_of_the_window_are_one_statement_each_and_counted_exactly():
    counted("key:abc")
    for expected in range(2, 6):
        statements = counted("key:abc")
        assert len(statements) == 1, statements
        assert RateCounter.objects.get(scope="key:abc").count == expected


def test_the_request_past_the_limit_is_refused_and_still_counted():
    for _ in range(3):
        check_rate_limit("key:full", 3)
    with pytest.raises(Refusal) as refused:
        check_rate_limit("key:full", 3)
    assert refused.value.reason == Reason.RATE_LIMITED
    assert refused.value.retry_after >= 1
    assert RateCounter.objects.get(scope="key:full").count == 4
