from django.apps import AppConfig
from django.db.models.signals import post_migrate


class BoardConfig(AppConfig):
    name = "board"
    verbose_name = "Board"

    def ready(self) -> None:
        from board import suites
        from board.reference_data import seed_reference_data

        suites.connect()

        post_migrate.connect(seed_reference_data, sender=self, dispatch_uid="board-reference-data")
