"""Public pages of the board: server-rendered, readable without JavaScript, every query count
fixed whatever the number of rows shown."""

import json

from django.conf import settings
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import render

from board import glossary, lab_selectors, methodology
from board.charts import comparison_chart, crown_timeline, perf_charts
from board.models import Badge, SuiteKind, Trust
from board.public import public_evidence
from board.selectors import benchmarks as benchmark_reads
from board.selectors import catalog
from board.selectors import crowns as crown_reads
from board.selectors import recipes as recipe_reads
from board.selectors import runs as run_reads
from board.selectors.benchmarks import BenchmarkView
from board.tables import benchmark_rows, quality_rows
from recipes.diff import diff_flags, diff_recipes, flag_map
from recipes.scrub import public_output

BADGE_LABELS = dict(Badge.choices)
PAGE_SIZE = 50
MODALITIES = (SuiteKind.VISION, SuiteKind.AUDIO, SuiteKind.VIDEO)


def _filters(request) -> dict:
    """The board's filters, all kept in the URL."""
    return {
        "hardware": (request.GET.get("hardware") or "").strip(),
        "model": (request.GET.get("model") or "").strip(),
        "q": (request.GET.get("q") or "").strip()[:200],
        "ranked_only": request.GET.get("ranked") == "1",
        # Self-reported benchmarks are listed only when asked for (docs/website.md §Pages).
        "with_self_reported": request.GET.get("self_reported") == "1",
    }


def _query_without_page(request) -> str:
    params = request.GET.copy()
    params.pop("page", None)
    return params.urlencode()


def home(request):
    filters = _filters(request)
    queryset = benchmark_reads.benchmark_table(
        hardware=filters["hardware"] or None,
        model=filters["model"] or None,
        ranked="1" if filters["ranked_only"] else None,
        search=filters["q"] or None,
        without_trust=None if filters["with_self_reported"] else Trust.SELF_REPORTED,
    )
    page = Paginator(queryset, PAGE_SIZE).get_page(request.GET.get("page"))
    listed, occupied = catalog.picker_classes()
    classes = [{"cls": cls, "empty": cls.pk not in occupied} for cls in listed]
    cards = crown_reads.crown_cards_by_class(cls.pk for cls in listed)
    # The cards of the class picked; with none picked, of the first class (board order) that
    # holds a crown.
    crowned = next(
        (
            cls
            for cls in listed
            if (cls.slug == filters["hardware"] if filters["hardware"] else cls.pk in cards)
        ),
        None,
    )
    return render(
        request,
        "board/home.html",
        {
            "page": page,
            "rows": benchmark_rows(page.object_list),
            "classes": classes,
            "crowned_class": crowned,
            "crown_cards": cards.get(crowned.pk) if crowned else None,
            # With no class picked: every crowned class's throughput crown, in board order.
            "class_leaders": []
            if filters["hardware"]
            else [
                {"cls": cls, "crown": cards[cls.pk][0].crown}
                for cls in listed
                if cls.pk in cards and cards[cls.pk][0].crown
            ],
            "query": _query_without_page(request),
            **filters,
        },
    )


def hardware_index(request):
    return render(
        request,
        "board/hardware_index.html",
        {"classes": catalog.hardware_classes_with_counts()},
    )


def hardware_page(request, slug: str):
    hardware_class = catalog.hardware_class(slug)
    if hardware_class is None:
        raise Http404("no such hardware class")
    queryset = benchmark_reads.benchmark_table(hardware=slug)
    page = Paginator(queryset, PAGE_SIZE).get_page(request.GET.get("page"))
    histories = crown_reads.crown_histories(hardware_class)
    return render(
        request,
        "board/hardware.html",
        {
            "hardware_class": hardware_class,
            "canonical_url": _absolute(request, request.path),
            "crown_cards": crown_reads.crown_cards(hardware_class),
            "histories": [
                {"history": history, "chart": crown_timeline(history)} for history in histories
            ],
            "page": page,
            "rows": benchmark_rows(page.object_list),
            "query": _query_without_page(request),
        },
    )


def models_index(request):
    search = (request.GET.get("q") or "").strip()[:200]
    page = Paginator(catalog.models_with_counts(search or None), 100).get_page(
        request.GET.get("page")
    )
    return render(
        request,
        "board/models.html",
        {"page": page, "q": search, "query": _query_without_page(request)},
    )


def model_page(request, canonical_id: str):
    bench_model = catalog.bench_model(canonical_id)
    if bench_model is None:
        raise Http404("no such model")
    benchmarks = benchmark_reads.benchmark_table(model_id=bench_model.pk, with_categories=True)
    page = Paginator(benchmarks, PAGE_SIZE).get_page(request.GET.get("page"))
    benchmarks = list(page.object_list)
    category_names, quality = quality_rows(benchmarks)
    return render(
        request,
        "board/model.html",
        {
            "bench_model": bench_model,
            "page": page,
            "rows": benchmark_rows(benchmarks),
            "category_names": category_names,
            "quality_rows": quality,
            "speed": catalog.model_speed_by_class(bench_model),  # over all its benchmarks
            "crowns": crown_reads.model_crowns(bench_model),
            "query": _query_without_page(request),
        },
    )


def _absolute(request, path: str) -> str:
    base = settings.AEON_SITE_URL.rstrip("/")
    return f"{base}{path}" if base else request.build_absolute_uri(path)


def benchmark_page(request, benchmark_id: str):
    detail = benchmark_reads.benchmark_detail(benchmark_id)
    if detail is None:
        raise Http404("no such benchmark")
    benchmark = detail.benchmark
    mark_codes = [code for c in detail.cohorts for code in list(c.marks) + list(c.labels)]
    return render(
        request,
        "board/benchmark.html",
        {
            "detail": detail,
            "benchmark": benchmark,
            "badges": glossary.badge_terms(benchmark.badges),
            "mark_terms": glossary.mark_terms(mark_codes),
            "trust_meaning": glossary.TRUST.get(benchmark.trust, ""),
            "verification_meaning": glossary.VERIFICATION.get(benchmark.verification, ""),
            "charts": perf_charts(detail.cohorts),
            "commands": recipe_reads.benchmark_commands(detail),
            "policy": (
                recipe_reads.recipe_policy(
                    benchmark.recipe, [r.drafter_status for r in detail.runs]
                )
                if benchmark.recipe
                else None
            ),
            "pods_offer": crown_reads.pods_offer_for(benchmark),
            "reproduction": recipe_reads.benchmark_reproductions(benchmark),
            "crowns": crown_reads.crowns_held(benchmark),
            # The recipe lab (docs/lab.md): where it stands, and its neighbours one flag away.
            "standing": lab_selectors.against_champion(benchmark),
            "neighbours": lab_selectors.one_flag_away(benchmark),
            "modalities": [
                (kind.label, benchmark.modalities.get(kind.value)) for kind in MODALITIES
            ],
            "canonical_url": _absolute(request, request.path),
        },
    )


CASES_PER_PAGE = 25
ANSWER_PREVIEW_CHARS = 1_500  # longer answers are cut on the list and shown whole on their own


def run_page(request, run_id: str):
    run = run_reads.run_detail(run_id)
    if run is None:
        raise Http404("no such run")
    listed = run.extras.get("artifacts")
    artifacts = [
        {
            "title": str(item.get("title") or item.get("prompt_id") or "artifact"),
            "kind": str(item.get("kind") or ""),
            "ok": item.get("ok"),
            "has_html": bool(item.get("has_html")),
        }
        for item in (listed if isinstance(listed, list) else [])
        if isinstance(item, dict)
    ]
    case_id = (request.GET.get("case") or "")[:200]
    category = (request.GET.get("category") or "")[:100]
    page = run_reads.run_results_page(
        run, request.GET.get("page"), CASES_PER_PAGE, case_id=case_id, category=category
    )
    cases = []
    for result in page.object_list:
        answer = public_output(result.raw_text)
        whole = bool(case_id) or len(answer) <= ANSWER_PREVIEW_CHARS
        cases.append(
            {
                "result": result,
                "answer": answer if whole else answer[:ANSWER_PREVIEW_CHARS],
                "cut": 0 if whole else len(answer) - ANSWER_PREVIEW_CHARS,
                "evidence": public_evidence(result),
            }
        )
    categories = [c["category"] for c in run.quality.get("categories") or []]
    return render(
        request,
        "board/run.html",
        {
            "run": run,
            "cases": cases,
            "page": page,
            "query": _query_without_page(request),
            "artifacts": artifacts,
            "case_id": case_id,
            "category": category,
            "categories": categories,
        },
    )


def _flag_rows(left: list[str], right: list[str]) -> list[dict]:
    """Flags side by side, a row per option (recipes/diff.py reads them): what B adds, removes
    and changes against A is highlighted; the flags both share stay plain."""
    a, b = flag_map(left), flag_map(right)
    diff = diff_flags(left, right)
    state = {row["flag"]: "added" for row in diff["added"]}
    state |= {row["flag"]: "removed" for row in diff["removed"]}
    state |= {row["flag"]: "changed" for row in diff["changed"]}
    return [
        {
            "name": name,
            "a": a.get(name),
            "b": b.get(name),
            "in_a": name in a,
            "in_b": name in b,
            "state": state.get(name, "same"),
            "differs": name in state,
        }
        for name in list(a) + [n for n in b if n not in a]
    ]


def _recipe_rows(a: BenchmarkView, b: BenchmarkView) -> list[dict]:
    """The recipes' other parts side by side; with both recipes registered, what differs is
    what recipes/diff.py says differs."""
    recipe_a, recipe_b = a.benchmark.recipe, b.benchmark.recipe
    if recipe_a is not None and recipe_b is not None:
        spec_a, spec_b = recipe_a.public_spec(), recipe_b.public_spec()
        differing = {row["field"] for row in diff_recipes(spec_a, spec_b)["fields"]}
        return [
            {
                "name": name.replace("_", " "),
                "a": _shown(getattr(spec_a, name)),
                "b": _shown(getattr(spec_b, name)),
                "differs": name in differing,
            }
            for name in RECIPE_FIELDS
        ]
    left, right = a.recipe or {}, b.recipe or {}
    return [
        {
            "name": name.replace("_", " "),
            "a": left.get(name),
            "b": right.get(name),
            "differs": left.get(name) != right.get(name),
        }
        for name in ("engine", "image", "context_len")
    ]


RECIPE_FIELDS = ("engine", "image", "image_digest", "drafter", "context_len")


def _recipe_diff(a: BenchmarkView, b: BenchmarkView) -> dict:
    """What B's recipe adds, removes and changes against A's (recipes/diff.py), as a list."""
    if a.benchmark.recipe is not None and b.benchmark.recipe is not None:
        return diff_recipes(a.benchmark.recipe.public_spec(), b.benchmark.recipe.public_spec())
    diff = diff_flags((a.recipe or {}).get("flags") or [], (b.recipe or {}).get("flags") or [])
    diff["fields"] = []
    diff["identical"] = not any(diff[key] for key in ("added", "removed", "changed"))
    return diff


def _shown(value):
    """A recipe field as a cell shows it: the drafter as compact JSON, not a Python repr."""
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, separators=(", ", ": "))
    return value


COMPARE_SUGGESTIONS = 11


def compare(request):
    ids = {side: (request.GET.get(side) or "").strip()[:32] for side in ("a", "b")}
    details = {
        side: benchmark_reads.benchmark_detail(value) if value else None
        for side, value in ids.items()
    }
    missing = [side for side, value in ids.items() if value and details[side] is None]
    a, b = details["a"], details["b"]
    context = {"ids": ids, "a": a, "b": b, "missing": missing, "badge_labels": BADGE_LABELS}
    if a and not b and not ids["b"]:
        # Suggestions for B: the same model on the same class first, newest first.
        context["suggestions"] = [
            candidate
            for candidate in benchmark_reads.benchmarks(
                hardware=a.benchmark.hardware_class.slug, model=a.benchmark.model.canonical_id
            )[:COMPARE_SUGGESTIONS]
            if candidate.pk != a.benchmark.pk
        ]
    if a and b:
        recipe_a, recipe_b = a.recipe or {}, b.recipe or {}
        context["flag_rows"] = _flag_rows(recipe_a.get("flags") or [], recipe_b.get("flags") or [])
        context["recipe_rows"] = _recipe_rows(a, b)
        context["recipe_ids"] = (a.benchmark.recipe_id, b.benchmark.recipe_id)
        context["recipe_diff"] = _recipe_diff(a, b)
        names = []
        for side in (a, b):
            for category in side.benchmark.categories:
                if category["category"] not in names:
                    names.append(category["category"])
        scores = [{c["category"]: c for c in side.benchmark.categories} for side in (a, b)]
        context["category_rows"] = [
            {"name": name, "a": scores[0].get(name), "b": scores[1].get(name)} for name in names
        ]
        context["chart"] = comparison_chart(
            [
                (f"A · {a.benchmark.model.canonical_id}", a.cohorts),
                (f"B · {b.benchmark.model.canonical_id}", b.cohorts),
            ]
        )
    return render(request, "board/compare.html", context)


def methodology_page(request):
    return render(request, "board/methodology.html", {"sections": methodology.sections()})


def recipes_index(request):
    page = Paginator(recipe_reads.recipes_in_use(), 100).get_page(request.GET.get("page"))
    return render(request, "board/recipes.html", {"page": page})


def recipe_page(request, recipe_id: str):
    usage = recipe_reads.recipe_usage(recipe_id[:64])
    if usage is None:
        raise Http404("no such recipe")
    served = usage.benchmarks
    return render(
        request,
        "board/recipe.html",
        {
            "usage": usage,
            "recipe_json": usage.recipe.public_json(),
            "canonical_url": _absolute(request, request.path),
            "models": list(dict.fromkeys(b.model.canonical_id for b in served)),
            "classes": list({b.hardware_class.slug: b.hardware_class for b in served}.values()),
            "rows": benchmark_rows(served),
        },
    )
