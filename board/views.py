"""Public pages of the board: server-rendered, readable without JavaScript."""

from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import render

from board import selectors
from board.models import Badge

BADGE_LABELS = dict(Badge.choices)


def home(request):
    hardware = request.GET.get("hardware") or ""
    model = request.GET.get("model") or ""
    ranked_only = request.GET.get("ranked") == "1"
    queryset = selectors.benchmarks(
        hardware=hardware or None, model=model or None, ranked="1" if ranked_only else None
    )
    page = Paginator(queryset, 50).get_page(request.GET.get("page"))
    return render(
        request,
        "board/home.html",
        {
            "page": page,
            "classes": selectors.hardware_classes(),
            "hardware": hardware,
            "model": model,
            "ranked_only": ranked_only,
            "badge_labels": BADGE_LABELS,
        },
    )


def benchmark_page(request, benchmark_id: str):
    benchmark = selectors.benchmark_detail(benchmark_id)
    if benchmark is None:
        raise Http404("no such benchmark")
    return render(
        request, "board/benchmark.html", {"benchmark": benchmark, "badge_labels": BADGE_LABELS}
    )


def run_page(request, run_id: str):
    run = selectors.run_detail(run_id)
    if run is None:
        raise Http404("no such run")
    return render(request, "board/run.html", {"run": run, "results": run.results.all()})
