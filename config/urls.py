from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularSwaggerSplitView

from config.api_schema import SchemaView

# An exception no view caught; the database unreachable answers 503 there (config/middleware.py).
handler500 = "config.middleware.server_error"

urlpatterns = [
    path("", include("submissions.urls")),
    path("", include("board.urls")),
    path("", include("anchor.urls")),
    path("admin/", admin.site.urls),
    path("api/schema/", SchemaView.as_view(), name="api-schema"),
    # The split view loads its start-up script from ?script instead of inlining it: CSP 'self'.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
]
