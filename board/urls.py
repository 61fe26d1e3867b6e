from django.urls import path

from board import api, badges, data_views, exports, feeds, lab_views, views
from board.answer_cache import cache_pages, cached_answer

# The query parameters each cached API answer reads (board/api.py): the answer cache keys on
# these alone (board/answer_cache.py). The others read none.
API_PARAMS = {
    "api-benchmarks": ("hardware", "model", "trust", "ranked", "page", "page_size"),
    "api-champions": ("hardware", "axis", "model"),
    "api-champion-recipes": ("hardware", "model"),
}

urlpatterns = [
    path("", views.home, name="home"),
    path("hardware/", views.hardware_index, name="hardware-index"),
    path("hardware/<slug:slug>/", views.hardware_page, name="hardware"),
    path(
        "hardware/<slug:slug>/champions.atom",
        feeds.ClassChampionsFeed(),
        name="feed-class-champions",
    ),
    path("models/", views.models_index, name="models"),
    path(
        "models/<path:canonical_id>/benchmarks.atom",
        feeds.ModelBenchmarksFeed(),
        name="feed-model-benchmarks",
    ),
    # A model on one class (the recipe lab, docs/lab.md): before the model's own catch-all path.
    path(
        "models/<path:canonical_id>/hardware/<slug:slug>/",
        lab_views.model_class_page,
        name="lab-model-class",
    ),
    # Canonical ids are `org/name` (a Hugging Face repo) or a declared model name.
    path("models/<path:canonical_id>/", views.model_page, name="model"),
    path("benchmarks/<str:benchmark_id>/", views.benchmark_page, name="benchmark"),
    path("runs/<str:run_id>/", views.run_page, name="run"),
    path("recipes/", views.recipes_index, name="recipes-index"),
    path("recipes/<str:recipe_id>/", views.recipe_page, name="recipe"),
    path("compare/", views.compare, name="compare"),
    path("methodology/", views.methodology_page, name="methodology"),
    path("lab/", lab_views.lab_index, name="lab-index"),
    path("lab/flags/<str:flag>/", lab_views.flag_page, name="lab-flag"),
    path("badges/<path:canonical_id>/<slug:slug>.svg", badges.badge, name="badge"),
    path("data/", data_views.datasheet, name="datasheet"),
    path(
        "api/v1/dataset/v<int:version>/<str:name>",
        data_views.dataset_file,
        name="dataset-file",
    ),
    path("api/v1/dataset/latest/<str:name>", data_views.latest_file, name="dataset-latest"),
    path("api/v1/benchmarks.csv", exports.benchmarks_csv, name="export-csv"),
    path("api/v1/benchmarks.json", exports.benchmarks_json, name="export-json"),
    path("api/v1/runs/<str:run_id>", api.RunDetail.as_view(), name="api-run"),
    path(
        "api/v1/benchmarks",
        cached_answer(api.BenchmarkList.as_view(), params=API_PARAMS["api-benchmarks"]),
        name="api-benchmarks",
    ),
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
    path(
        "api/v1/champions",
        cached_answer(api.ChampionList.as_view(), params=API_PARAMS["api-champions"]),
        name="api-champions",
    ),
    path(
        "api/recipes/champions",
        cached_answer(api.ChampionRecipes.as_view(), params=API_PARAMS["api-champion-recipes"]),
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
    "home": ("hardware", "model", "q", "ranked", "self_reported", "page"),
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
    "lab-model-class": (),
    "lab-index": (),
    "lab-flag": (),
    "feed-model-benchmarks": (),
    "feed-class-champions": (),
    "badge": (),
    "datasheet": (),
}
urlpatterns = cache_pages(urlpatterns, PAGE_PARAMS)
