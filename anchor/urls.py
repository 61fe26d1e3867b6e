from django.urls import path

from anchor import views

urlpatterns = [
    path(".well-known/aeon-bench.json", views.WellKnown.as_view(), name="well-known"),
    path("api/attestation", views.Attestation.as_view(), name="attestation"),
    path("api/runs/<str:run_id>/manifest", views.RunManifestView.as_view(), name="run-manifest"),
]
