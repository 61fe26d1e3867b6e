"""The read API is documented at /api/schema/ and browsable at /api/docs/ from our own origin."""

import pytest


@pytest.mark.django_db
def test_the_schema_documents_the_read_api(client):
    response = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    paths = response.json()["paths"]
    for path in (
        "/api/v1/benchmarks",
        "/api/v1/benchmarks/{benchmark_id}",
        "/api/v1/hardware-classes",
        "/api/v1/runs/{run_id}",
    ):
        assert path in paths
    parameters = {p["name"] for p in paths["/api/v1/benchmarks"]["get"]["parameters"]}
    assert {"hardware", "model", "trust", "ranked", "page"} <= parameters


@pytest.mark.django_db
def test_the_docs_page_loads_its_scripts_from_our_own_origin(client):
    response = client.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "swagger-ui" in html
    assert "cdn." not in html and "unpkg" not in html


@pytest.mark.django_db
def test_api_answers_carry_an_etag_and_answer_304_when_unchanged(client):
    first = client.get("/api/v1/hardware-classes")
    assert first.status_code == 200
    assert first["Cache-Control"].startswith("public")
    etag = first["ETag"]
    again = client.get("/api/v1/hardware-classes", HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304
