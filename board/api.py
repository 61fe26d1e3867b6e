"""The board's read API (/api/v1/…), documented at /api/schema/."""

from django.core.paginator import EmptyPage
from django.utils.decorators import method_decorator
from django.views.decorators.cache import cache_control
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics
from rest_framework.exceptions import NotFound, ParseError
from rest_framework.pagination import PageNumberPagination
from rest_framework.response import Response
from rest_framework.views import APIView

from board import read_models
from board.champion_shapes import ChampionList, PodChampionList
from board.champions import Axis
from board.openapi import ShapeExtension  # noqa: F401 (drf-spectacular: registered on import)
from board.selectors import benchmarks as benchmark_reads
from board.selectors import catalog
from board.selectors import crowns as crown_reads
from board.selectors import recipes as recipe_reads
from board.selectors import runs as run_reads
from board.serializers.benchmarks import (
    BenchmarkDetailSerializer,
    BenchmarkSerializer,
    HardwareClassSerializer,
)
from board.serializers.recipes import RecipeDetailSerializer
from board.serializers.runs import RunPageSerializer

PUBLIC_CACHE = method_decorator(cache_control(public=True, max_age=30), name="get")


class Pages(PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200


RESULTS_PAGE_SIZE = 50
MAX_RESULTS_PAGE_SIZE = 200


def _whole_number(request, name: str, default: int) -> int:
    value = request.query_params.get(name)
    if value is None or value == "":
        return default
    if not (value.isascii() and value.isdigit()) or len(value) > 9 or int(value) < 1:
        raise ParseError(f"{name}: a whole number from 1")
    return int(value)


def _page_link(request, number: int) -> str:
    """A link to another page of the same answer: the path and query, relative to the site
    (absolute addresses come from AEON_SITE_URL, never from the request's Host)."""
    params = request.GET.copy()
    params["page"] = str(number)
    return f"{request.path}?{params.urlencode()}"


@PUBLIC_CACHE
class RunDetail(generics.GenericAPIView):
    """One board's run with a page of its per-case results, in position order
    (`results_page` counts them and links the next and previous pages)."""

    serializer_class = RunPageSerializer

    @extend_schema(
        parameters=[
            OpenApiParameter("page", OpenApiTypes.INT, description="page of results, from 1"),
            OpenApiParameter(
                "page_size",
                OpenApiTypes.INT,
                description=f"results per page: {RESULTS_PAGE_SIZE} unless asked, "
                f"at most {MAX_RESULTS_PAGE_SIZE}",
            ),
        ]
    )
    def get(self, request, run_id: str):
        run = run_reads.public_run(run_id)
        if run is None:
            raise NotFound("no such run")
        page_size = min(
            _whole_number(request, "page_size", RESULTS_PAGE_SIZE), MAX_RESULTS_PAGE_SIZE
        )
        try:
            page = run_reads.run_results_page(
                run, _whole_number(request, "page", 1), page_size, strict=True
            )
        except EmptyPage:
            raise NotFound(
                f"no such page: this run's results fill {_pages(run, page_size)}"
            ) from None
        links = {
            "next": _page_link(request, page.next_page_number()) if page.has_next() else None,
            "previous": (
                _page_link(request, page.previous_page_number()) if page.has_previous() else None
            ),
        }
        context = self.get_serializer_context() | {"page": page, "links": links}
        return Response(self.get_serializer(run, context=context).data)


def _pages(run, page_size: int) -> str:
    pages = max(1, -(-run.n_results // page_size))
    return f"{pages} page{'s' if pages != 1 else ''} of {page_size}"


@extend_schema(
    parameters=[
        OpenApiParameter("hardware", OpenApiTypes.STR, description="hardware class slug"),
        OpenApiParameter(
            "model", OpenApiTypes.STR, description="canonical model id (case-insensitive)"
        ),
        OpenApiParameter("trust", OpenApiTypes.STR, enum=["attested", "self_reported", "pending"]),
        OpenApiParameter("ranked", OpenApiTypes.BOOL),
    ]
)
class BenchmarkList(generics.ListAPIView):
    """Comprehensive runs, newest first; filters: hardware, model, trust, ranked."""

    serializer_class = BenchmarkSerializer
    pagination_class = Pages

    def get_queryset(self):
        params = self.request.query_params
        return benchmark_reads.benchmarks(
            hardware=params.get("hardware"),
            model=params.get("model"),
            trust=params.get("trust"),
            ranked=params.get("ranked"),
        )


class BenchmarkDetail(generics.RetrieveAPIView):
    """One comprehensive run with its cohorts (all, with their marks) and its runs."""

    serializer_class = BenchmarkDetailSerializer
    lookup_field = "public_id"
    lookup_url_kwarg = "benchmark_id"

    def get_object(self):
        detail = benchmark_reads.benchmark_detail(self.kwargs["benchmark_id"])
        if detail is None:
            raise NotFound("no such benchmark")
        return detail.benchmark


class HardwareClassList(generics.ListAPIView):
    """The hardware classes on the board: the presets, and every class holding a published
    benchmark; presets first."""

    serializer_class = HardwareClassSerializer
    pagination_class = None
    queryset = catalog.hardware_classes()


class RecipeDetail(generics.GenericAPIView):
    """A recipe: its JSON (as pods apply it), the benchmarks that used it ("used by 4 runs on 3
    pods"), the commands that reproduce it per model, and the diff against the nearest earlier
    recipe of each model and hardware class it ran on."""

    serializer_class = RecipeDetailSerializer

    def get(self, request, recipe_id: str):
        usage = recipe_reads.recipe_usage(recipe_id)
        if usage is None:
            raise NotFound("no such recipe")
        return Response(self.get_serializer(usage).data)


MAX_QUERY_LENGTH = 300


def _query(request, name: str) -> str | None:
    value = request.query_params.get(name)
    if value is not None and len(value) > MAX_QUERY_LENGTH:
        raise ParseError(f"{name}: at most {MAX_QUERY_LENGTH} characters")
    return value or None


HARDWARE_MATCHING = (
    "the query equals or is contained in the raw hardware label or the class name "
    "(case-insensitive), or normalises to the same hardware class (never to Unlabeled)"
)


class ChampionRecipes(APIView):
    """The champion recipes pods fetch: per hardware class and model, the throughput champion's
    recipe, grouped by hardware label with the best throughput first. Flags are scrubbed and
    the speculative config points at /drafter; `started_at` is in epoch seconds."""

    @extend_schema(
        operation_id="pod_champion_recipes",
        parameters=[
            OpenApiParameter("hardware", OpenApiTypes.STR, description=HARDWARE_MATCHING),
            OpenApiParameter(
                "model", OpenApiTypes.STR, description="canonical id or hf_repo (case-insensitive)"
            ),
        ],
        responses=PodChampionList,
    )
    def get(self, request):
        stale = []
        entries = crown_reads.pod_champion_recipes(
            hardware=_query(request, "hardware"), model=_query(request, "model"), stale=stale
        )
        read_models.recompute_stale(stale)
        return Response(entries.as_json())


class ChampionList(APIView):
    """Per hardware class (board order) and axis, the champion: value with its cohort, model,
    benchmark, recipe JSON, reproductions and the history of the crown. With `model`, that
    model's crowns on each class instead of the class-wide ones."""

    @extend_schema(
        operation_id="champions",
        parameters=[
            OpenApiParameter(
                "hardware",
                OpenApiTypes.STR,
                description=f"a hardware class slug, or a label: {HARDWARE_MATCHING}",
            ),
            OpenApiParameter("axis", OpenApiTypes.STR, enum=[axis.value for axis in Axis]),
            OpenApiParameter(
                "model", OpenApiTypes.STR, description="canonical id or hf_repo (case-insensitive)"
            ),
        ],
        responses=ChampionList,
    )
    def get(self, request):
        axis = _query(request, "axis")
        if axis is not None and axis not in {a.value for a in Axis}:
            raise ParseError(f"axis: one of {', '.join(a.value for a in Axis)}")
        stale = []
        crowns = crown_reads.champion_crowns(
            hardware=_query(request, "hardware"),
            axis=axis,
            model=_query(request, "model"),
            stale=stale,
        )
        read_models.recompute_stale(stale)
        return Response(crowns.as_json())
