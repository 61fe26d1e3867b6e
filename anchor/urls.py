from django.urls import path

from anchor import views

urlpatterns = [
    path(".well-known/aeon-bench.json", views.well_known, name="well-known"),
    path("api/attestation", views.attestation, name="attestation"),
    path("api/runs/<str:run_id>/manifest", views.run_manifest, name="run-manifest"),
]
