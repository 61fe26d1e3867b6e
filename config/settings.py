"""Settings for AEON Board, read from the environment.

They fail closed (docs/operations.md §Settings): unless `AEON_ENV=development` is chosen
explicitly, the board runs the production configuration, which refuses to start without
`SECRET_KEY` and a site URL (or allowed hosts), keeps `DEBUG` off and serves only its own hosts.
The development configuration (`make run`, `make test`, pytest's settings module
`config.development`) needs nothing set: SQLite and blobs under `var/`, Celery eager, a
development secret.
"""

import os
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from kombu import Queue

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value not in (None, "") else default


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value in (None, ""):
        return default
    return value.strip().lower() in ("1", "true", "yes", "on")


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in env_str(name, default).split(",") if item.strip()]


AEON_ENV = env_str("AEON_ENV", "production").strip().lower() or "production"
if AEON_ENV not in ("production", "development"):
    raise ImproperlyConfigured(f"AEON_ENV must be 'production' or 'development', not {AEON_ENV!r}")
PRODUCTION = AEON_ENV == "production"
DEVELOPMENT = not PRODUCTION
DATA_DIR = Path(env_str("AEON_DATA_DIR", str(BASE_DIR / "var")))

# While this file exists /healthz answers 503 so the proxy drains this replica
# (docs/operations.md §Health and drain); give each replica its own.
AEON_DRAIN_FILE = Path(env_str("AEON_DRAIN_FILE", str(DATA_DIR / "draining")))

SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if PRODUCTION:
        raise ImproperlyConfigured(
            "SECRET_KEY must be set when AEON_ENV=production "
            "(AEON_ENV=development chooses the development configuration)"
        )
    SECRET_KEY = "development-only-not-secret"

DEBUG = env_bool("DEBUG", DEVELOPMENT)
if DEBUG and PRODUCTION:
    raise ImproperlyConfigured("DEBUG is for the development configuration only")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "submissions",
    "board",
    "recipes",
    "anchor",
]
# Development tooling, outside the product and left out of the image: the embedded demo
# (`load_demo`) and the benchmark commands (`bench_ingest`, `bench`). Production never has them.
if DEVELOPMENT:
    INSTALLED_APPS += ["demo", "benchtools"]

MIDDLEWARE = [
    "config.health.ProbeMiddleware",  # /healthz and /readyz, answered before the host check
    "config.after_answer.AfterAnswerMiddleware",  # task publishes wait for the answer's last byte
    "django.middleware.security.SecurityMiddleware",
    "config.middleware.ApiJsonErrorsMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "config.middleware.PageCommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "config.middleware.SecurityHeadersMiddleware",
    "django.middleware.http.ConditionalGetMiddleware",  # ETag and 304 on GET answers
]

ROOT_URLCONF = "config.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "board.context_processors.site",
            ],
        },
    },
]

WSGI_APPLICATION = "config.wsgi.application"

DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{DATA_DIR / 'aeon.sqlite3'}"),
        conn_max_age=env_int("DB_CONN_MAX_AGE", 0),
        # A kept connection is checked before a request uses it: after PostgreSQL restarts, the
        # first request on each kept connection reconnects instead of failing.
        conn_health_checks=True,
    )
}
# SQLite serving several pods at once (the embedded default): a write transaction takes the
# write lock when it begins (IMMEDIATE), because SQLite refuses at once, without waiting, a
# transaction that read first and then wants to write while another writer is active; WAL lets
# readers go on while one writer works; the busy timeout is how long a writer waits its turn.
AEON_SQLITE_BUSY_TIMEOUT_SECONDS = env_int("AEON_SQLITE_BUSY_TIMEOUT_SECONDS", 30)
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    Path(DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "transaction_mode": "IMMEDIATE",
            "timeout": AEON_SQLITE_BUSY_TIMEOUT_SECONDS,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL",
        }
    )

# PostgreSQL binds parameters on the server (psycopg's own cursor, Django's `server_side_binding`
# option): values travel beside the statement, bytes as bytes, instead of quoted into its text by
# the client. A final's inline evidence (a 0.14 MiB body in its row) took 3.3-3.8 ms to write
# quoted (hex, twice its size, parsed back by the server) and 1.0 ms bound (median of 40 writes,
# this 2-core machine); `manage.py bench_ingest --large 0 --small 40` alternated three times each
# way: the web workers' CPU per 0.14 MiB final 35-44 ms -> 31-39 ms, their memory growth 25.8x ->
# 22x the body, the final's time within the runs' noise. Django keeps prepared statements off
# (`prepare_threshold` None) either way.
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"].setdefault("OPTIONS", {}).setdefault("server_side_binding", True)

# A read replica of the primary (docs/scale-out.md §Read replica): board reads go there, the pod
# channel, transactions, tasks and migrations never do (config/dbrouter.py). Tests run against
# the primary's test database by the same name on the replica's server.
DATABASE_REPLICA_URL = env_str("DATABASE_REPLICA_URL")
if DATABASE_REPLICA_URL:
    DATABASES["replica"] = dj_database_url.parse(
        DATABASE_REPLICA_URL, conn_max_age=env_int("DB_CONN_MAX_AGE", 0), conn_health_checks=True
    )
    if DATABASES["replica"]["ENGINE"] == "django.db.backends.postgresql":
        # An unreachable replica costs a request seconds, not minutes, then is skipped.
        DATABASES["replica"].setdefault("OPTIONS", {}).setdefault("connect_timeout", 3)
    DATABASES["replica"]["TEST"] = {"MIRROR": "default"}
    DATABASE_ROUTERS = ["config.dbrouter.ReplicaRouter"]
    MIDDLEWARE.insert(0, "config.dbrouter.ReplicaReadsMiddleware")

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("AEON_STATIC_ROOT", str(DATA_DIR / "staticfiles")))  # image: baked in
STATICFILES_DIRS = [BASE_DIR / "static"]
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    "config.static_finders.PlotlyJsFinder",  # plotly.js from the plotly package: no CDN
]
# Production: names carry a content hash (whitenoise then serves them as immutable, cached
# forever) and a gzip copy sits beside each file. Development serves the files as they are.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if PRODUCTION
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

# Pod routes read their bodies themselves with a streaming cap; Django's own cap would answer
# an HTML 400 before our JSON refusal.
DATA_UPLOAD_MAX_MEMORY_SIZE = None
AEON_MAX_RESULTS_BYTES = env_int("AEON_MAX_RESULTS_BYTES", 128 * 1024 * 1024)
AEON_MAX_SMALL_BYTES = env_int("AEON_MAX_SMALL_BYTES", 8 * 1024)

# Rate limits: requests per window, per client IP (every pod route) and per key. Production
# keeps the limits of a public board. The development defaults (AEON_ENV=development only) make
# room on one loopback address for the demo load of `make run` (about 750 requests within a
# minute or two, some 450 of them by the demo's Spark key) plus a few local pods of one's own.
AEON_RATE_WINDOW_SECONDS = env_int("AEON_RATE_WINDOW_SECONDS", 60)
AEON_RATE_LIMIT_PER_IP = env_int("AEON_RATE_LIMIT_PER_IP", 3000 if DEVELOPMENT else 600)
AEON_RATE_LIMIT_PER_KEY = env_int("AEON_RATE_LIMIT_PER_KEY", 1500 if DEVELOPMENT else 300)
AEON_MAX_OPEN_RUNS_PER_KEY = env_int("AEON_MAX_OPEN_RUNS_PER_KEY", 50)
# The daily upload quota per key (docs/protocol.md §Quotas per key): finals committed, and their
# bytes, within a rolling 24 h.
AEON_MAX_FINALS_PER_KEY_DAY = env_int("AEON_MAX_FINALS_PER_KEY_DAY", 5000 if DEVELOPMENT else 500)
AEON_MAX_FINAL_BYTES_PER_KEY_DAY = env_int(
    "AEON_MAX_FINAL_BYTES_PER_KEY_DAY", (160 if DEVELOPMENT else 16) * 1024**3
)
AEON_FORGERY_REVOKE_THRESHOLD = env_int("AEON_FORGERY_REVOKE_THRESHOLD", 5)
AEON_CHALLENGE_TTL_SECONDS = env_int("AEON_CHALLENGE_TTL_SECONDS", 300)

# The board's own ed25519 signing key, a PEM (PKCS8) file made by `manage.py create_board_key`
# (docs/trust-anchor.md). Development defaults to one under the data folder; any other
# configuration has no default and is not ready until it is set.
AEON_BOARD_KEY_FILE = env_str(
    "AEON_BOARD_KEY_FILE", str(DATA_DIR / "board-key.pem") if DEVELOPMENT else ""
)
# The keys it replaced (`manage.py rotate_board_key`); unset: retired-board-keys.json beside it.
AEON_BOARD_RETIRED_KEYS_FILE = env_str("AEON_BOARD_RETIRED_KEYS_FILE")

# The client IP comes from REMOTE_ADDR unless a trusted proxy sets this header (WSGI name,
# e.g. HTTP_X_FORWARDED_FOR); its right-most entry is the one our proxy appended.
AEON_TRUSTED_PROXY_HEADER = env_str("AEON_TRUSTED_PROXY_HEADER")

# Raw bundles: a folder by default, an S3-compatible bucket when AEON_BLOB_BACKEND=s3.
AEON_BLOB_BACKEND = env_str("AEON_BLOB_BACKEND", "file")
AEON_BLOB_DIR = Path(env_str("AEON_BLOB_DIR", str(DATA_DIR / "blobs")))
AEON_S3_BUCKET = env_str("AEON_S3_BUCKET")
AEON_S3_ENDPOINT_URL = env_str("AEON_S3_ENDPOINT_URL") or None
AEON_S3_PREFIX = env_str("AEON_S3_PREFIX", "bundles/")
AEON_S3_REGION = env_str("AEON_S3_REGION") or None  # else boto3's own (AWS_DEFAULT_REGION)
if AEON_BLOB_BACKEND not in ("file", "s3"):
    raise ImproperlyConfigured("AEON_BLOB_BACKEND must be file or s3")
if AEON_BLOB_BACKEND == "s3" and not AEON_S3_BUCKET:
    raise ImproperlyConfigured("AEON_BLOB_BACKEND=s3 needs AEON_S3_BUCKET")
# Bodies over 8 MiB wait here, outside the store, until their signature verified
# (docs/protocol.md §Evidence and the ingest log); empty: `.spool` in AEON_BLOB_DIR.
AEON_SPOOL_DIR = env_str("AEON_SPOOL_DIR", "")
# A body of at most this many bytes is kept in its RawBundle row instead (docs/protocol.md
# §Evidence and the ingest log): written with the database's own commit, no file or object write
# on the request path. 0: every body goes to the blob store.
AEON_INLINE_EVIDENCE_BYTES = env_int("AEON_INLINE_EVIDENCE_BYTES", 1024 * 1024)
if AEON_INLINE_EVIDENCE_BYTES < 0:
    raise ImproperlyConfigured("AEON_INLINE_EVIDENCE_BYTES must be 0 or more")

AEON_HF_ENDPOINT = env_str("AEON_HF_ENDPOINT", "https://huggingface.co")
AEON_HF_TOKEN = env_str("AEON_HF_TOKEN") or None

# Container images offered to pods in recipes (repositories, comma-separated); empty: the
# engines' stock images (docs/recipes.md, "Images").
AEON_RECIPE_IMAGES = [
    name.strip() for name in env_str("AEON_RECIPE_IMAGES").split(",") if name.strip()
]

AEON_SITE_URL = env_str("AEON_SITE_URL", "")
# The build the trust endpoints name (docs/trust-anchor.md); unset: a hash of the source files.
AEON_BUILD_HASH = env_str("AEON_BUILD_HASH")
AEON_DEMO = env_bool("AEON_DEMO", False)

# Cached read answers (board/answer_cache.py), keyed by the board's generation number:
# in-process memory by default, Redis when CACHE_URL is set (several web processes share it;
# a Redis of its own with a memory limit and an LRU policy, never the broker's: docs/operations.md
# §The answer cache).
CACHE_URL = env_str("CACHE_URL")
if CACHE_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": CACHE_URL,
            # Two boards sharing one Redis never share answers: the prefix names the database.
            "KEY_PREFIX": "aeon:" + Path(str(DATABASES["default"]["NAME"])).name,
            # A cache that does not answer costs a read a second at most, then the read is
            # served from the database (board/answer_cache.py).
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": "aeon-answers",
            "OPTIONS": {"MAX_ENTRIES": 5000},
        }
    }
AEON_ANSWER_CACHE_SECONDS = env_int("AEON_ANSWER_CACHE_SECONDS", 3600)
# Answers are stored under at most this many keys, whatever the requests carry: junk query
# strings cannot grow the cache's key count past it (board/answer_cache.py).
AEON_ANSWER_CACHE_SLOTS = env_int("AEON_ANSWER_CACHE_SLOTS", 8192)
AEON_API_MAX_AGE = env_int("AEON_API_MAX_AGE", 30)  # Cache-Control max-age of read answers

# Celery: eager (in-process) unless a broker is configured.
# Eager mode still builds a producer pool: give it the in-memory transport, not a default AMQP host.
CELERY_TASK_ALWAYS_EAGER = not env_str("CELERY_BROKER_URL")
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL") or "memory://"
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A task taken by a worker that dies before acknowledging it (acks_late) goes back to the queue
# once this long has passed; longer than the longest task and retry countdown (5 min: longer
# waits are left to the sweep), or Redis would hand a waiting retry to a second worker
# (docs/operations.md §Background work).
# Workers look for such tasks every 10 s (one cheap Redis query), not every 100 s.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env_int("AEON_BROKER_VISIBILITY_TIMEOUT", 600),
    "unacked_restore_throttle": 1,
}
# The worker logs through our LOGGING (JSON lines in production), not a handler of its own.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Two queues, both consumed by every worker: weight checks never wait behind read-model rewrites.
CELERY_TASK_QUEUES = [Queue(name, routing_key=name) for name in ("celery", "weights")]
CELERY_TASK_ROUTES = {"submissions.tasks.*": {"queue": "weights"}}
# The single beat: weight checks pending past their next attempt's time by the grace are sent
# again (a lost enqueue, a broker restart, a fault), so a run leaves pending within minutes.
CELERY_BEAT_SCHEDULE = {
    "sweep-pending-weight-checks": {
        "task": "submissions.tasks.sweep_pending_weight_checks",
        "schedule": env_int("AEON_WEIGHT_SWEEP_SECONDS", 60),
    },
    # Expired challenges, stale sessions, orphan evidence, expired unsigned quarantine, store
    # temporary files (submissions/cleanup.py, docs/operations.md §Cleanup).
    "clean-up-pod-channel": {
        "task": "submissions.tasks.clean_up_pod_channel",
        "schedule": env_int("AEON_CLEANUP_SECONDS", 3600),
    },
    # A new version of the ranked board as Parquet and CSV (docs/lab.md §Data to take away).
    "export-dataset": {
        "task": "board.tasks.export_dataset",
        "schedule": env_int("AEON_DATASET_EXPORT_SECONDS", 6 * 3600),
    },
}
AEON_WEIGHT_SWEEP_GRACE_SECONDS = env_int("AEON_WEIGHT_SWEEP_GRACE_SECONDS", 180)
# The sweep sends one run's check again at most this often (a check it sent may still be queued).
AEON_WEIGHT_SWEEP_RESEND_SECONDS = env_int("AEON_WEIGHT_SWEEP_RESEND_SECONDS", 300)

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.AllowAny"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "UNAUTHENTICATED_USER": None,
    "EXCEPTION_HANDLER": "config.api_errors.drf_exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "AEON Board API",
    "DESCRIPTION": "Read API of the AEON Bench leaderboard and the pod submission protocol v1.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # Swagger UI from our own static files: no CDN, and the CSP allows only 'self'.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # No deep links: Swagger UI puts each operation's link inside its expand button, a control
    # nested in a control that keyboards and screen readers cannot reach (axe, nested-interactive).
    "SWAGGER_UI_SETTINGS": {"deepLinking": False},
}

# Absolute URLs (the run page given to pods, canonical and OpenGraph links, exports) are built
# from this configured address, never from a request's Host header. In production it comes from
# AEON_SITE_URL, or else https:// and the first of ALLOWED_HOSTS; development may leave it empty
# and then answers with the address the request came to.
AEON_SITE_URL = AEON_SITE_URL.strip().rstrip("/")
if AEON_SITE_URL:
    _site = urlsplit(AEON_SITE_URL)
    if _site.scheme not in ("http", "https") or not _site.hostname or _site.path:
        raise ImproperlyConfigured(
            f"AEON_SITE_URL must be a scheme and host such as https://aeon-bench.com, "
            f"not {AEON_SITE_URL!r}"
        )
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS")
if not ALLOWED_HOSTS:
    if AEON_SITE_URL:
        ALLOWED_HOSTS = [urlsplit(AEON_SITE_URL).hostname]
    elif DEVELOPMENT:
        ALLOWED_HOSTS = ["*"]
    else:
        raise ImproperlyConfigured(
            "set AEON_SITE_URL (e.g. https://aeon-bench.com) or ALLOWED_HOSTS "
            "when AEON_ENV=production"
        )
if PRODUCTION and not AEON_SITE_URL:
    _first = ALLOWED_HOSTS[0].lstrip(".")
    if _first in ("", "*"):
        raise ImproperlyConfigured("set AEON_SITE_URL: ALLOWED_HOSTS names no single host")
    AEON_SITE_URL = f"https://{_first}"
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS") or (
    [AEON_SITE_URL] if AEON_SITE_URL else []
)

SECURE_CONTENT_TYPE_NOSNIFF = True
# Behind a TLS proxy the request reaches us over plain HTTP: Django sees it as secure (HSTS,
# secure redirects) only through the scheme header our proxy sets, and only when configured,
# because any client can send that header to a board reached directly. The value is the WSGI
# name, e.g. HTTP_X_FORWARDED_PROTO; the proxy must overwrite the header, never pass it on.
AEON_TRUSTED_PROXY_SSL_HEADER = env_str("AEON_TRUSTED_PROXY_SSL_HEADER").strip()
SECURE_PROXY_SSL_HEADER = (
    (AEON_TRUSTED_PROXY_SSL_HEADER, "https") if AEON_TRUSTED_PROXY_SSL_HEADER else None
)
SECURE_SSL_REDIRECT = env_bool("AEON_SSL_REDIRECT", False)
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
# Cookies are secure in production unless the site itself is plain http (`make prod` on
# loopback): the admin must still be able to log in there.
_plain_http_site = AEON_SITE_URL.startswith("http://")
SESSION_COOKIE_SECURE = PRODUCTION and not _plain_http_site
CSRF_COOKIE_SECURE = PRODUCTION and not _plain_http_site
SECURE_HSTS_SECONDS = 31536000 if PRODUCTION else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = PRODUCTION
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

# Production logs JSON lines on stdout (docs/operations.md §Logs); development plain text.
AEON_LOG_FORMAT = env_str("AEON_LOG_FORMAT", "json" if PRODUCTION else "text")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "config.jsonlog.JsonFormatter"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            **({"formatter": "json"} if AEON_LOG_FORMAT == "json" else {}),
        }
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        "django.server": {"level": "WARNING"},
        # Eager tasks (the embedded default) would print a line per task into `make run`.
        **({"celery.app.trace": {"level": "WARNING"}} if CELERY_TASK_ALWAYS_EAGER else {}),
    },
}

# Weight checks: Hugging Face unreachable → retry with backoff for 24 h, then unverifiable.
AEON_WEIGHT_RETRY_FIRST_SECONDS = env_int("AEON_WEIGHT_RETRY_FIRST_SECONDS", 60)
AEON_WEIGHT_RETRY_MAX_SECONDS = env_int("AEON_WEIGHT_RETRY_MAX_SECONDS", 3600)
AEON_WEIGHT_RETRY_WINDOW_SECONDS = env_int("AEON_WEIGHT_RETRY_WINDOW_SECONDS", 24 * 3600)
AEON_HF_TIMEOUT_SECONDS = env_int("AEON_HF_TIMEOUT_SECONDS", 20)
# A refusal (gated, private, expired token) may be lifted: remember it this long, not forever.
AEON_HF_REFUSED_CACHE_SECONDS = env_int("AEON_HF_REFUSED_CACHE_SECONDS", 3600)
