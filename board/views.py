"""Public pages of the board: server-rendered, readable without JavaScript."""

from django.http import Http404
from django.shortcuts import render

from board import selectors


def home(request):
    return render(request, "board/home.html", {"runs": selectors.recent_runs()})


def run_page(request, run_id: str):
    run = selectors.run_detail(run_id)
    if run is None:
        raise Http404("no such run")
    return render(request, "board/run.html", {"run": run, "results": run.results.all()})
