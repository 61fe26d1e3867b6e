from django.urls import path

from board import api, views
from board.answer_cache import cached_answer

urlpatterns = [
    path("", views.home, name="home"),
    path("benchmarks/<str:benchmark_id>/", views.benchmark_page, name="benchmark"),
    path("runs/<str:run_id>/", views.run_page, name="run"),
    path("api/v1/runs/<str:run_id>", api.RunDetail.as_view(), name="api-run"),
    path("api/v1/benchmarks", cached_answer(api.BenchmarkList.as_view()), name="api-benchmarks"),
    path(
        "api/v1/benchmarks/<str:benchmark_id>",
        cached_answer(api.BenchmarkDetail.as_view()),
        name="api-benchmark",
    ),
    path(
        "api/v1/hardware-classes",
        cached_answer(api.HardwareClassList.as_view()),
        name="api-hardware-classes",
    ),
    path("api/v1/champions", cached_answer(api.ChampionList.as_view()), name="api-champions"),
    path(
        "api/recipes/champions",
        cached_answer(api.ChampionRecipes.as_view()),
        name="api-champion-recipes",
    ),
]
