"""The read benchmark's steps (`manage.py bench reads`, docs/champions.md §The read benchmark): a
PostgreSQL database per board size, the reads to measure on it, and every read at every size
measured next to its floor, cached and uncached."""

import json
import os
import re
import urllib.error
import urllib.request
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import quote_plus, urlsplit, urlunsplit

from django.conf import settings
from django.core.management.base import CommandError

from benchtools.wrk import ROOT, fetch, median_run, rounds, serve

# (name, path, kind): kind "champion" and "list" carry the goals of docs/champions.md.
TARGETS = (
    ("pod_champions", "/api/recipes/champions?hardware=" + quote_plus("single DGX Spark (GB10)")),
    ("champions", "/api/v1/champions"),
    ("recipe", "/api/v1/recipes/{recipe_id}"),
    ("benchmarks", "/api/v1/benchmarks"),
    ("benchmarks_by_class", "/api/v1/benchmarks?hardware=dgx-spark-x1"),
    ("benchmark_detail", "/api/v1/benchmarks/{benchmark_id}"),
    ("board_page", "/"),
    ("board_page_by_class", "/?hardware=dgx-spark-x1"),
    ("hardware_page", "/hardware/dgx-spark-x1/"),
    ("model_page", "/models/{model}/"),
    ("benchmark_page", "/benchmarks/{benchmark_id}/"),
    ("recipe_page", "/recipes/{recipe_id}/"),
    # Liveness, answered before the rest of the middleware (config/health.py): what a load from
    # outside compares a read with, having no floor view to ask.
    ("healthz", "/healthz"),
)

BUMP = "from board.services import bump_generation; bump_generation()"


def board_key(database_url: str, workdir: Path, keep: bool) -> Path:
    """Where the board's signing key lives: with kept databases, beside them under
    var/bench/ (the manifests they hold stay signed by the key that serves them), else in
    the work folder. Without one every recorded run logs that it is in no signed manifest."""
    if not keep:
        return workdir / "board-key.pem"
    name = urlsplit(database_url).path.lstrip("/")
    return ROOT / "var" / "bench" / f"{name}-board-key.pem"


def default_database_url() -> str:
    db = settings.DATABASES["default"]
    if db["ENGINE"] != "django.db.backends.postgresql":
        raise CommandError("needs PostgreSQL: set DATABASE_URL or --database-url")
    user, host, port = db["USER"] or "postgres", db["HOST"] or "127.0.0.1", db["PORT"] or 5432
    return f"postgres://{user}@{host}:{port}/{db['NAME']}_readbench"


def sized_database(url: str, size: int, previous: str | None, keep: bool) -> str:
    """The database of one size (`<name><size>`). Kept: reused when it exists. Otherwise
    made afresh (an existing one dropped first): a copy of the next smaller size's
    (PostgreSQL copies it in seconds; loading takes minutes), or empty for the smallest."""
    import psycopg

    parts = urlsplit(url)
    base = parts.path.lstrip("/")
    if not re.fullmatch(r"[A-Za-z0-9_]+", base) or not base.endswith("bench"):
        raise CommandError(f"refusing to use {base!r}: its name must end in 'bench'")
    name = f"{base}{size}"
    sized = urlunsplit(parts._replace(path=f"/{name}"))
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as connection:
        found = connection.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (name,)
        ).fetchone()
        if found and keep:
            return sized
        if found:
            connection.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        template = f' TEMPLATE "{urlsplit(previous).path.lstrip("/")}"' if previous else ""
        connection.execute(f'CREATE DATABASE "{name}"{template}')
    return sized


def drop_database(url: str) -> None:
    import psycopg

    parts = urlsplit(url)
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{parts.path.lstrip("/")}" WITH (FORCE)')


def benchmark_count(url: str) -> int:
    import psycopg

    with psycopg.connect(url) as connection:
        found = connection.execute("SELECT to_regclass('board_benchmark') IS NOT NULL").fetchone()[
            0
        ]
        if not found:
            return 0
        return connection.execute("SELECT count(*) FROM board_benchmark").fetchone()[0]


def measure(env: dict, databases: dict[int, str], workdir: Path, options, say, warn) -> dict:
    """Every read at every size next to its floor, in alternating rounds, all sizes served
    at once; then every read again on servers whose answer cache keeps nothing. `options`: the
    command's; `say` and `warn` write a line of progress or of trouble."""
    sizes = sorted(databases)
    wanted = set(options["reads"])
    results: dict[str, dict] = {str(size): {} for size in sizes}
    with ExitStack() as stack:
        servers = {
            size: stack.enter_context(serve(env | {"DATABASE_URL": url}, options))
            for size, url in databases.items()
        }
        paths = {
            size: {name: path for name, path in read_paths(server.base, say) if name in wanted}
            for size, server in servers.items()
        }
        for name, _ in TARGETS:
            bodies = {}
            for size in sizes:
                if name not in paths[size]:
                    continue
                try:  # warm: fills the answer cache
                    bodies[size] = fetch(servers[size].base + paths[size][name])
                except urllib.error.HTTPError as error:
                    warn(f"  {paths[size][name]} answers {error.code}: not measured")
            if not bodies:
                continue
            # The floor answers the largest size's bytes, on that size's server.
            floor_size = max(bodies)
            body, content_type = bodies[floor_size]
            (workdir / "floor" / f"{name}.body").write_bytes(body)
            (workdir / "floor" / f"{name}.type").write_text(content_type)
            floor = servers[floor_size]._replace(
                url=f"{servers[floor_size].base}/_bench/floor/{name}"
            )
            fetch(floor.url)
            targets = {
                str(size): servers[size]._replace(url=servers[size].base + paths[size][name])
                for size in bodies
            } | {"floor": floor}
            say(
                f"  wrk {name} ({', '.join(f'{len(b)} bytes at {s}' for s, (b, _) in bodies.items())}) "
                f"and its floor, {options['rounds']} rounds"
            )
            load = list(os.getloadavg())
            runs = rounds(targets, workdir, options)
            for size, (answer_body, _) in bodies.items():
                results[str(size)][name] = {
                    "path": paths[size][name],
                    "bytes": len(answer_body),
                    "floor_bytes": len(body),
                    "load_average": load,
                    "answer": median_run(runs[str(size)]),
                    "floor": median_run(runs["floor"]),
                    "rounds": {"answer": runs[str(size)], "floor": runs["floor"]},
                }
    uncached = env | {"AEON_ANSWER_CACHE_SECONDS": "0"}
    with ExitStack() as stack:
        servers = {
            size: stack.enter_context(serve(uncached | {"DATABASE_URL": url}, options))
            for size, url in databases.items()
        }
        for name, _ in TARGETS:
            targets = {
                str(size): servers[size]._replace(
                    url=servers[size].base + results[str(size)][name]["path"]
                )
                for size in sizes
                if name in results[str(size)]
            }
            if not targets:
                continue
            say(f"  wrk {name} uncached, {options['rounds']} rounds")
            runs = rounds(targets, workdir, options)
            for size, measured in runs.items():
                results[size][name]["uncached"] = median_run(measured)
                results[size][name]["rounds"]["uncached"] = measured
    return results


def read_paths(base: str, say) -> list[tuple[str, str]]:
    champions = json.loads(fetch(base + "/api/v1/champions")[0])["champions"]
    crowned = next((c for c in champions if c["axis"] == "throughput"), None)
    found = []
    for name, path in TARGETS:
        if "{model}" in path:
            if crowned is None:
                continue
            path = path.format(model=crowned["model"])
        if "{benchmark_id}" in path:
            if crowned is None:
                continue
            path = path.format(benchmark_id=crowned["benchmark_id"])
        if "{recipe_id}" in path:
            if crowned is None or not crowned.get("recipe_id"):
                continue
            path = path.format(recipe_id=crowned["recipe_id"])
            try:
                fetch(base + path)
            except urllib.error.HTTPError:
                say(f"  skipping {path}: not served (yet)")
                continue
        found.append((name, path))
    return found
