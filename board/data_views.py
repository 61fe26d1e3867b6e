"""The data to take away (docs/lab.md §Data to take away): the datasheet page and the downloads
of the latest and of each versioned export (board/datasets.py)."""

from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from board import datasets
from board.models import DatasetExport
from config.api_errors import Reason, json_error
from evidence.blobstore import BlobStoreUnavailable


def datasheet(request):
    export = datasets.latest_export()
    files = []
    if export is not None:
        files = [
            {"name": name, **entry, "url": reverse("dataset-file", args=[export.version, name])}
            for name, entry in export.files.items()
        ]
    return render(
        request,
        "board/datasheet.html",
        {
            "export": export,
            "files": files,
            "schema_version": datasets.SCHEMA_VERSION,
            "licence": datasets.LICENCE,
            "tables": [
                {
                    "name": name,
                    "columns": [
                        {"name": column, "type": str(kind), "meaning": meaning}
                        for column, (kind, meaning) in columns.items()
                    ],
                }
                for name, columns in datasets.COLUMNS.items()
            ],
            "site": datasets.site_url() or request.build_absolute_uri("/").rstrip("/"),
        },
    )


@require_GET
def dataset_file(request, version: int, name: str):
    export = DatasetExport.objects.filter(version=version).first()
    try:
        found = datasets.export_file(export, name) if export is not None else None
    except FileNotFoundError:
        found = None
    except BlobStoreUnavailable:
        return json_error(Reason.UNAVAILABLE, "the evidence store is unavailable", 503)
    if found is None:
        return json_error(Reason.NOT_FOUND, "no such export file", 404)
    data, entry = found
    response = HttpResponse(data, content_type=entry["media_type"])
    response["Content-Disposition"] = f'attachment; filename="aeon-board-v{version}-{name}"'
    response["ETag"] = f'"{entry["sha256"]}"'
    response["Cache-Control"] = "public, max-age=31536000, immutable"  # a version never changes
    response["X-Schema-Version"] = export.schema_version
    return response


@require_GET
def latest_file(request, name: str):
    export = datasets.latest_export()
    if export is None or name not in export.files:
        return json_error(Reason.NOT_FOUND, "no export of this file yet", 404)
    response = HttpResponseRedirect(reverse("dataset-file", args=[export.version, name]))
    response["Cache-Control"] = "public, max-age=60"
    return response
