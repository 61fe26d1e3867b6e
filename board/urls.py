from django.urls import path

from board import api, exports, views
from board.answer_cache import cache_pages, cached_answer

urlpatterns = [
    path("", views.home, name="home"),
    path("hardware/", views.hardware_index, name="hardware-index"),
    path("hardware/<slug:slug>/", views.hardware_page, name="hardware"),
    path("models/", views.models_index, name="models"),
    # Canonical ids are `org/name` (a Hugging Face repo) or a declared model name.
    path("models/<path:canonical_id>/", views.model_page, name="model"),
    path("benchmarks/<str:benchmark_id>/", views.benchmark_page, name="benchmark"),
    path("runs/<str:run_id>/", views.run_page, name="run"),
    path("recipes/", views.recipes_index, name="recipes-index"),
    path("recipes/<str:recipe_id>/", views.recipe_page, name="recipe"),
    path("compare/", views.compare, name="compare"),
    path("methodology/", views.methodology_page, name="methodology"),
    path("api/v1/benchmarks.csv", exports.benchmarks_csv, name="export-csv"),
    path("api/v1/benchmarks.json", exports.benchmarks_json, name="export-json"),
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
    path(
        "api/v1/recipes/<str:recipe_id>",
        cached_answer(api.RecipeDetail.as_view()),
        name="api-recipe",
    ),
]

# Public pages behind the generation cache (docs/champions.md §Cached pages), by route name, with
# the query parameters each one reads: a request carrying any other parameter is rendered and
# never stored. The pod page is not here: it shows ingest outcomes that move no generation.
PAGE_PARAMS = {
    "home": ("hardware", "model", "q", "ranked", "page"),
    "hardware-index": (),
    "hardware": ("page",),
    "models": ("q", "page"),
    "model": ("page",),
    "benchmark": (),
    "run": ("case", "category", "page"),
    "recipes-index": ("page",),
    "recipe": (),
    "compare": ("a", "b"),
    "methodology": (),
}
urlpatterns = cache_pages(urlpatterns, PAGE_PARAMS)
