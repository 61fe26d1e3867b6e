"""The data to take away (docs/lab.md §Data to take away): the versioned Parquet/CSV export read
back with pyarrow against the read API, the Atom feeds, the SVG badges (escaped, ETag, cache
headers, drawn by Chromium) and the beat entry that writes the export."""

import csv
import io
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import pyarrow.parquet as pq
import pytest
from django.conf import settings
from django.core.management import call_command

from board.badges import badge_svg
from board.datasets import SCHEMA_VERSION
from board.models import Benchmark, DatasetExport
from demo.loader import prefill_hub_cache
from tests.boardjobs import fetch, read_api
from tests.championjobs import GEMMA_816, QWEN_NEXT, RTX_5090, submit
from tests.podchannel import raw_request

pytestmark = pytest.mark.django_db

ATOM = "{http://www.w3.org/2005/Atom}"
SPARK = "dgx-spark-x1"
GEMMA = GEMMA_816.hf_repo.lower()


@pytest.fixture(autouse=True)
def hub_answers():
    prefill_hub_cache()


@pytest.fixture
def small_board(pod):
    ids = [
        submit(pod, GEMMA_816, "2026-10-03T09:00:00Z"),
        submit(pod, QWEN_NEXT, "2026-10-04T09:00:00Z"),
        submit(pod, RTX_5090, "2026-10-05T09:00:00Z"),
        submit(pod, GEMMA_816, "2026-10-06T09:00:00Z", endpoint=True),  # self-reported
    ]
    return ids


@dataclass
class Download:
    headers: dict
    payload: bytes


def download(board_url: str, path: str) -> Download:
    """GET as a client does, following a redirect (the latest file leads to its version)."""
    status, headers, payload = fetch(board_url + path)
    assert status == 200, path
    return Download(headers, payload)


def test_the_parquet_export_reads_back_with_its_schema_version_and_the_apis_row_counts(
    small_board, board_url
):
    call_command("export_dataset", stdout=io.StringIO())
    export = DatasetExport.objects.get()
    assert export.version == 1 and export.schema_version == SCHEMA_VERSION

    listed = read_api(board_url, "/api/v1/benchmarks?ranked=1").body
    ranked_ids = [row["id"] for row in listed["results"]]
    assert listed["count"] == 3 and small_board[3] not in ranked_ids  # self-reported: out
    cohorts = sum(
        len(read_api(board_url, f"/api/v1/benchmarks/{bid}").body["cohorts"]) for bid in ranked_ids
    )

    answer = download(board_url, "/api/v1/dataset/latest/benchmarks.parquet")  # follows to v1
    assert answer.headers["X-Schema-Version"] == SCHEMA_VERSION
    assert "immutable" in answer.headers["Cache-Control"]
    table = pq.read_table(io.BytesIO(answer.payload))
    assert table.schema.metadata[b"schema_version"].decode() == SCHEMA_VERSION
    assert table.schema.metadata[b"export_version"] == b"1"
    assert table.num_rows == listed["count"]
    assert sorted(table.column("id").to_pylist()) == sorted(ranked_ids)
    assert set(table.column("schema_version").to_pylist()) == {"aeon-board-benchmarks/1"}
    peaks = dict(
        zip(
            table.column("id").to_pylist(),
            table.column("peak_aggregate_tps").to_pylist(),
            strict=True,
        )
    )
    assert peaks[small_board[0]] == 816.0

    cohort_table = pq.read_table(
        io.BytesIO(download(board_url, "/api/v1/dataset/v1/cohorts.parquet").payload)
    )
    assert cohort_table.num_rows == cohorts
    recipes = pq.read_table(
        io.BytesIO(download(board_url, "/api/v1/dataset/v1/recipes.parquet").payload)
    )
    used = set(Benchmark.objects.filter(ranked=True).values_list("recipe_id", flat=True))
    assert set(recipes.column("recipe_id").to_pylist()) == used
    # The CSV twins hold the same rows.
    rows = list(
        csv.DictReader(
            io.StringIO(download(board_url, "/api/v1/dataset/v1/benchmarks.csv").payload.decode())
        )
    )
    assert sorted(row["id"] for row in rows) == sorted(ranked_ids)

    # The datasheet names the version, the files, the columns with units, and the one-liners.
    sheet = read_api(board_url, "/data/")
    assert sheet.status == 200
    for text in (
        SCHEMA_VERSION,
        "Version 1",
        "benchmarks.parquet",
        "peak_aggregate_tps",
        "tok/s",
        "pd.read_parquet",
        "read_parquet(",
        "CC BY 4.0",
    ):
        assert text in sheet.text, text

    call_command("export_dataset", stdout=io.StringIO())  # on demand, again: a new version
    assert list(DatasetExport.objects.values_list("version", flat=True)) == [2, 1]
    assert "Version 2" in read_api(board_url, "/data/").text
    assert raw_request(board_url, "GET", "/api/v1/dataset/v9/benchmarks.parquet").status == 404
    assert raw_request(board_url, "GET", "/api/v1/dataset/v1/../../x").status == 404


def test_the_beat_writes_the_export_on_a_schedule():
    entry = settings.CELERY_BEAT_SCHEDULE["export-dataset"]
    assert entry["task"] == "board.tasks.export_dataset" and entry["schedule"] > 0
    from board.tasks import export_dataset

    assert export_dataset.name == entry["task"]
    export_dataset.apply()  # the task itself, as the beat sends it
    assert DatasetExport.objects.count() == 1


def test_the_feeds_parse_as_atom(small_board, board_url):
    champions = read_api(board_url, f"/hardware/{SPARK}/champions.atom")
    assert champions.status == 200
    root = ET.fromstring(champions.text)
    assert root.tag == f"{ATOM}feed"
    entries = root.findall(f"{ATOM}entry")
    titles = [e.find(f"{ATOM}title").text for e in entries]
    assert any(t.startswith("throughput crown: " + GEMMA) and "816.0 tok/s" in t for t in titles)
    assert any(t.startswith("quality crown: " + QWEN_NEXT.hf_repo.lower()) for t in titles)
    for entry in entries:
        assert entry.find(f"{ATOM}link").get("href").startswith("http")
        assert entry.find(f"{ATOM}updated").text

    model = read_api(board_url, f"/models/{GEMMA}/benchmarks.atom")
    root = ET.fromstring(model.text)
    assert root.tag == f"{ATOM}feed"
    links = [e.find(f"{ATOM}link").get("href") for e in root.findall(f"{ATOM}entry")]
    assert len(links) == 2 and all("/benchmarks/" in link for link in links)
    assert read_api(board_url, "/models/no/such/benchmarks.atom").status == 404


def test_a_badge_says_the_best_throughput_and_quality_with_an_etag(small_board, board_url):
    path = f"/badges/{GEMMA}/{SPARK}.svg"
    answer = download(board_url, path)
    assert answer.headers["Content-Type"].startswith("image/svg+xml")
    assert answer.headers["ETag"].startswith('"')
    assert "public" in answer.headers["Cache-Control"]
    svg = ET.fromstring(answer.payload)
    text = " ".join(t.text for t in svg.iter("{http://www.w3.org/2000/svg}text"))
    assert "Single DGX Spark" in text and "816 tok/s" in text and "quality" in text
    again = raw_request(board_url, "GET", path, headers={"If-None-Match": answer.headers["ETag"]})
    assert again.status == 304
    unranked = download(board_url, f"/badges/{GEMMA}/nvidia-rtx-5090-x1.svg")
    assert b"not ranked" in unranked.payload
    assert raw_request(board_url, "GET", "/badges/no/such/dgx-spark-x1.svg").status == 404


def test_a_badge_escapes_what_it_is_given():
    hostile = '<script>alert("x")</script> & <b>'
    svg = badge_svg(hostile, hostile, True)
    assert "<script>" not in svg and "<b>" not in svg
    root = ET.fromstring(svg)  # still well-formed XML
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert texts == [hostile, hostile]  # shown as text, verbatim
