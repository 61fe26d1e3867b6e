"""The read benchmark's floor (`manage.py bench reads`): a view on the same stack (middleware,
WSGI server, settings) that answers bytes held in memory, so the benchmark can say how close each
real answer comes to the cheapest possible one. Routed only by benchtools.urls, the URLconf of
benchtools.settings, never in a deployment: the benchmark writes one file per answer into
AEON_BENCH_FLOOR_DIR before it starts the servers."""

from functools import cache
from pathlib import Path

from django.conf import settings
from django.http import Http404, HttpResponse


@cache
def _answer(name: str) -> tuple[bytes, str] | None:
    folder = Path(settings.AEON_BENCH_FLOOR_DIR)
    body, kind = folder / f"{name}.body", folder / f"{name}.type"
    if not (name.isidentifier() and body.is_file() and kind.is_file()):
        return None
    return body.read_bytes(), kind.read_text().strip()


def floor(request, name: str):
    answer = _answer(name)
    if answer is None:
        raise Http404("no such floor answer")
    body, content_type = answer
    return HttpResponse(body, content_type=content_type)
