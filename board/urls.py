from django.urls import path

from board import api, views

urlpatterns = [
    path("", views.home, name="home"),
    path("runs/<str:run_id>/", views.run_page, name="run"),
    path("api/v1/runs/<str:run_id>", api.RunDetail.as_view(), name="api-run"),
]
