"""A result row's keys are one list (issue 21 point 6): the pods' row schema
(`submissions.schemas.ResultRow`) declares exactly the columns a row lands in
(`board.models.Result.ROW_FIELDS`), checked as the schema module loads."""

import pytest
from django.core.exceptions import ImproperlyConfigured

from board.models import Result
from submissions.schemas import ResultRow, check_row_keys


def test_the_row_schema_declares_the_row_columns():
    assert tuple(ResultRow.model_fields) == Result.ROW_FIELDS


def test_a_row_schema_that_drifts_from_the_columns_does_not_load():
    drifted = {**ResultRow.model_fields, "latency_ms": None}
    with pytest.raises(ImproperlyConfigured, match="latency_ms"):
        check_row_keys(drifted, Result.ROW_FIELDS)
    with pytest.raises(ImproperlyConfigured):
        check_row_keys(reversed(Result.ROW_FIELDS), Result.ROW_FIELDS)
