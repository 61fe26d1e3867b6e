"""Settings for AEON Board, read from the environment.

The embedded default needs nothing set: SQLite and blobs under `var/`, Celery eager, a
development secret. `AEON_ENV=production` refuses to start without `SECRET_KEY`.
"""

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

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


AEON_ENV = env_str("AEON_ENV", "development")
PRODUCTION = AEON_ENV == "production"
DATA_DIR = Path(env_str("AEON_DATA_DIR", str(BASE_DIR / "var")))

SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if PRODUCTION:
        raise ImproperlyConfigured("SECRET_KEY must be set when AEON_ENV=production")
    SECRET_KEY = "development-only-not-secret"

DEBUG = env_bool("DEBUG", not PRODUCTION)
ALLOWED_HOSTS = [h for h in env_str("ALLOWED_HOSTS", "*" if not PRODUCTION else "").split(",") if h]
CSRF_TRUSTED_ORIGINS = [o for o in env_str("CSRF_TRUSTED_ORIGINS").split(",") if o]

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
]

MIDDLEWARE = [
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

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "staticfiles"
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
DEVELOPMENT = AEON_ENV == "development"
AEON_RATE_WINDOW_SECONDS = env_int("AEON_RATE_WINDOW_SECONDS", 60)
AEON_RATE_LIMIT_PER_IP = env_int("AEON_RATE_LIMIT_PER_IP", 3000 if DEVELOPMENT else 600)
AEON_RATE_LIMIT_PER_KEY = env_int("AEON_RATE_LIMIT_PER_KEY", 1500 if DEVELOPMENT else 300)
AEON_MAX_OPEN_RUNS_PER_KEY = env_int("AEON_MAX_OPEN_RUNS_PER_KEY", 50)
AEON_FORGERY_REVOKE_THRESHOLD = env_int("AEON_FORGERY_REVOKE_THRESHOLD", 5)
AEON_CHALLENGE_TTL_SECONDS = env_int("AEON_CHALLENGE_TTL_SECONDS", 300)

# The client IP comes from REMOTE_ADDR unless a trusted proxy sets this header (WSGI name,
# e.g. HTTP_X_FORWARDED_FOR); its right-most entry is the one our proxy appended.
AEON_TRUSTED_PROXY_HEADER = env_str("AEON_TRUSTED_PROXY_HEADER")

# Raw bundles: a folder by default, an S3-compatible bucket when AEON_BLOB_BACKEND=s3.
AEON_BLOB_BACKEND = env_str("AEON_BLOB_BACKEND", "file")
AEON_BLOB_DIR = Path(env_str("AEON_BLOB_DIR", str(DATA_DIR / "blobs")))
AEON_S3_BUCKET = env_str("AEON_S3_BUCKET")
AEON_S3_ENDPOINT_URL = env_str("AEON_S3_ENDPOINT_URL") or None
AEON_S3_PREFIX = env_str("AEON_S3_PREFIX", "bundles/")

AEON_HF_ENDPOINT = env_str("AEON_HF_ENDPOINT", "https://huggingface.co")
AEON_HF_TOKEN = env_str("AEON_HF_TOKEN") or None

# Container images offered to pods in recipes (repositories, comma-separated); empty: the
# engines' stock images (docs/recipes.md, "Images").
AEON_RECIPE_IMAGES = [
    name.strip() for name in env_str("AEON_RECIPE_IMAGES").split(",") if name.strip()
]

AEON_SITE_URL = env_str("AEON_SITE_URL", "")
AEON_DEMO = env_bool("AEON_DEMO", False)

# Cached read answers (board/answer_cache.py), keyed by the board's generation number:
# in-process memory by default, Redis when CACHE_URL is set (several web processes share it).
CACHE_URL = env_str("CACHE_URL")
if CACHE_URL:
    CACHES = {
        "default": {
            "BACKEND": "config.redis_cache.ReusedClientRedisCache",
            "LOCATION": CACHE_URL,
            # Two boards sharing one Redis never share answers: the prefix names the database.
            "KEY_PREFIX": "aeon:" + Path(str(DATABASES["default"]["NAME"])).name,
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
AEON_API_MAX_AGE = env_int("AEON_API_MAX_AGE", 30)  # Cache-Control max-age of read answers
# Set only by `manage.py bench reads`: serves the floor answers it wrote there.
AEON_BENCH_FLOOR_DIR = env_str("AEON_BENCH_FLOOR_DIR")

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
}

SECURE_CONTENT_TYPE_NOSNIFF = True
SESSION_COOKIE_SECURE = PRODUCTION
CSRF_COOKIE_SECURE = PRODUCTION
SECURE_HSTS_SECONDS = 31536000 if PRODUCTION else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = PRODUCTION
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
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
