"""Pod routes, matched verbatim: no trailing slash (a redirect would lose the bundle); and the
public pages about pods and their evidence."""

from django.urls import path

from submissions import pages, views

urlpatterns = [
    path("api/v1/enroll/challenge", views.enroll_challenge, name="pod-enroll-challenge"),
    path("api/v1/enroll", views.enroll, name="pod-enroll"),
    path("api/v1/runs", views.open_run, name="pod-open-run"),
    path("api/v1/runs/<str:run_id>/results", views.results, name="pod-results"),
    path("api/v1/jobs/<str:job_sig>", views.job_status, name="pod-job-status"),
    path("pods/<str:fingerprint>/", pages.pod_page, name="pod"),
    path("runs/<str:run_id>/bundle.json", pages.run_bundle, name="run-bundle"),
    path("runs/<str:run_id>/public.json", pages.run_public_bundle, name="run-public-bundle"),
]
