"""The board's benchmark commands, development tooling outside the product: `bench_ingest`
(`make bench`: ingest against its byte floor), `bench reads` (`make bench-reads`: reads under load
next to their floor), the realistic boards they load (`reads.py`, also used by the query-count
tests) and the floor view with its own settings and URLs (`settings.py`, `urls.py`, `floor.py`).

A Django app only in development (`AEON_ENV=development` adds it to INSTALLED_APPS) or under its
own settings module `benchtools.settings`, which `bench reads` chooses for the production-config
servers it measures; the production image leaves it out (deploy/Dockerfile.dockerignore). The
product never imports it."""
