"""The board's URLs plus the read benchmark's floor (benchtools/floor.py): the ROOT_URLCONF of
benchtools.settings only, never of a deployment."""

from django.urls import path

from benchtools.floor import floor
from config.urls import urlpatterns as board_urlpatterns

urlpatterns = [*board_urlpatterns, path("_bench/floor/<str:name>", floor)]
