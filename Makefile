# AEON Board: `make run` serves the board with demo data; `make test` runs every test.
# Both do all set-up on a fresh machine (virtualenv, install, migrate).

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8000
STAMP := $(VENV)/.installed

.PHONY: setup run prod test lint bench bench-reads clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

# axe-core for the accessibility tests (tests/test_accessibility.py), pinned in package.json and
# package-lock.json; npm ci installs exactly the locked version into node_modules/.
NODE_STAMP := node_modules/.package-lock.json
$(NODE_STAMP): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $(NODE_STAMP)

# The settings fail closed (production) unless the development configuration is chosen: these
# targets choose it explicitly; `make prod` runs the production configuration.
run test bench bench-reads: export AEON_ENV = development

# run_demo replaces the shell (exec), so make's SIGTERM reaches it; it becomes supervisord, which
# stops the server and the demo load it starts (as `make prod` does).
run: setup
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput --verbosity 0
	$(PY) manage.py create_board_key --if-missing
	exec $(PY) manage.py run_demo --port $(PORT)

# The production configuration on this machine, no containers (docs/operations.md §make prod):
# Caddy (when installed) in front of gunicorn, a Celery worker and one beat on Redis, PostgreSQL,
# run by supervisord; every setting from the environment (PORT, DATABASE_URL, CELERY_BROKER_URL,
# …). Ctrl-C or SIGTERM stops them all.
prod: setup
	@exec $(PY) -m config.prodstack

# PYTEST_ARGS: e.g. `-n 2 --dist loadfile --no-loadscope-reorder` as .ci/run passes it, with one
# Redis database per worker in AEON_TEST_REDIS_URL (docs/README.md §The test suite).
PYTEST_ARGS ?=
test: setup $(NODE_STAMP)
	$(PY) -m playwright --version >/dev/null
	$(PY) -m pytest $(PYTEST_ARGS)

# Ingest against its byte floor as a pod meets the board: starts it as `make prod` does (gunicorn
# with config/gunicorn.conf.py, a Celery worker) on a free port against DATABASE_URL (PostgreSQL)
# with a Redis broker (CELERY_BROKER_URL, default redis://127.0.0.1:6379/0) and prints the table.
# BENCH_URL=http://… times demo jobs against a board already serving instead.
bench: setup
	$(PY) manage.py bench_ingest $(if $(BENCH_URL),--url $(BENCH_URL),)

# Reads under load (docs/champions.md): 1,000 and 10,000 benchmarks in databases of their own
# (DATABASE_URL's name + _readbench + the size, PostgreSQL), both served at once by gunicorn in
# the production configuration with a Redis answer cache, wrk against each read and its floor in
# alternating rounds; a table, and JSON under var/bench/.
AEON_BENCH_CACHE_URL ?= redis://127.0.0.1:6379/0
bench-reads: setup
	AEON_BENCH_CACHE_URL=$(AEON_BENCH_CACHE_URL) $(PY) manage.py bench reads

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

clean:
	rm -rf $(VENV) var node_modules
