from django.apps import AppConfig


class SubmissionsConfig(AppConfig):
    name = "submissions"
    verbose_name = "Pod submissions"

    def ready(self) -> None:
        from config.health import register_readiness_check
        from evidence.blobstore import blob_store
        from submissions.ingest.evidence import check_spool

        # /readyz: the evidence store answers and takes a new file, and so does the spool of
        # big bodies (docs/operations.md).
        register_readiness_check("blob_store", lambda: blob_store().check())
        register_readiness_check("spool", check_spool)
