from django.urls import path

from board import api, views

urlpatterns = [
    path("", views.home, name="home"),
    path("benchmarks/<str:benchmark_id>/", views.benchmark_page, name="benchmark"),
    path("runs/<str:run_id>/", views.run_page, name="run"),
    path("api/v1/runs/<str:run_id>", api.RunDetail.as_view(), name="api-run"),
    path("api/v1/benchmarks", api.BenchmarkList.as_view(), name="api-benchmarks"),
    path(
        "api/v1/benchmarks/<str:benchmark_id>", api.BenchmarkDetail.as_view(), name="api-benchmark"
    ),
    path("api/v1/hardware-classes", api.HardwareClassList.as_view(), name="api-hardware-classes"),
    path("api/v1/recipes/<str:recipe_id>", api.RecipeDetail.as_view(), name="api-recipe"),
]
