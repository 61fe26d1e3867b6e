"""The board's read API (/api/v1/…), documented at /api/schema/."""

from django.utils.decorators import method_decorator
from django.views.decorators.cache import cache_control
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics
from rest_framework.exceptions import NotFound
from rest_framework.pagination import PageNumberPagination
from rest_framework.response import Response

from board import selectors
from board.serializers import (
    BenchmarkDetailSerializer,
    BenchmarkSerializer,
    HardwareClassSerializer,
    RecipeDetailSerializer,
    RunSerializer,
)

PUBLIC_CACHE = method_decorator(cache_control(public=True, max_age=30), name="get")


class Pages(PageNumberPagination):
    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 200


@PUBLIC_CACHE
class RunDetail(generics.RetrieveAPIView):
    """One board's run with its per-case results."""

    serializer_class = RunSerializer
    lookup_field = "run_id"
    queryset = selectors.public_runs_with_results()


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
@PUBLIC_CACHE
class BenchmarkList(generics.ListAPIView):
    """Comprehensive runs, newest first; filters: hardware, model, trust, ranked."""

    serializer_class = BenchmarkSerializer
    pagination_class = Pages

    def get_queryset(self):
        params = self.request.query_params
        return selectors.benchmarks(
            hardware=params.get("hardware"),
            model=params.get("model"),
            trust=params.get("trust"),
            ranked=params.get("ranked"),
        )


@PUBLIC_CACHE
class BenchmarkDetail(generics.RetrieveAPIView):
    """One comprehensive run with its cohorts (all, with their marks) and its runs."""

    serializer_class = BenchmarkDetailSerializer
    lookup_field = "public_id"
    lookup_url_kwarg = "benchmark_id"

    def get_object(self):
        detail = selectors.benchmark_detail(self.kwargs["benchmark_id"])
        if detail is None:
            raise NotFound("no such benchmark")
        return detail.benchmark


@PUBLIC_CACHE
class HardwareClassList(generics.ListAPIView):
    """The hardware classes on the board: the presets, and every class holding a published
    benchmark; presets first."""

    serializer_class = HardwareClassSerializer
    pagination_class = None
    queryset = selectors.hardware_classes()


@PUBLIC_CACHE
class RecipeDetail(generics.GenericAPIView):
    """A recipe: its JSON (as pods apply it), the benchmarks that used it ("used by 4 runs on 3
    pods"), the commands that reproduce it per model, and the diff against the nearest earlier
    recipe of each model and hardware class it ran on."""

    serializer_class = RecipeDetailSerializer

    def get(self, request, recipe_id: str):
        usage = selectors.recipe_usage(recipe_id)
        if usage is None:
            raise NotFound("no such recipe")
        return Response(self.get_serializer(usage).data)
