from django.apps import AppConfig


class SubmissionsConfig(AppConfig):
    name = "submissions"
    verbose_name = "Pod submissions"

    def ready(self) -> None:
        from config.health import register_readiness_check
        from evidence.blobstore import blob_store

        # /readyz: the evidence store answers and takes a new file (docs/operations.md).
        register_readiness_check("blob_store", lambda: blob_store().check())
