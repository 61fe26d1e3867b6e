"""The board's read API (/api/v1/…), documented at /api/schema/."""

from rest_framework import generics

from board.models import Run
from board.serializers import RunSerializer


class RunDetail(generics.RetrieveAPIView):
    """One board's run with its per-case results."""

    serializer_class = RunSerializer
    lookup_field = "run_id"
    queryset = Run.objects.prefetch_related("results")
