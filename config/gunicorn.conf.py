"""Gunicorn in production: `make prod` and the container both start it with this file
(docs/operations.md §The web processes). Every value can be overridden from the environment."""

import os

bind = os.environ.get("GUNICORN_BIND") or (
    f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ.get('PORT', '8000')}"
)
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
# Gunicorn's stock threaded worker: a request thread reads an upload as it arrives. (A pool
# handing requests to the most recently idle thread was measured and dropped: 13.7-14.1 ms per
# 0.2 MiB final against 14.0-14.5 ms with stock threads, issue 21.)
worker_class = "gthread"
threads = int(os.environ.get("GUNICORN_THREADS", "4"))
# A pod's final upload may be 128 MiB on a slow link: the request thread reads it as it comes
# (a gthread worker keeps its heartbeat meanwhile); the pod itself gives up after 120 s and
# sends again, so a request never needs longer than this.
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "300"))
# SIGTERM (a rolling update, `make prod` stopping): uploads in flight get this long to finish.
graceful_timeout = int(os.environ.get("GUNICORN_GRACEFUL_TIMEOUT", "150"))
# Longer than the front's own idle keep-alive to gunicorn (60 s, deploy/Caddyfile): a
# connection the front reuses is never one gunicorn is closing. At 5 s, a pod that waited out a
# 503's Retry-After (5 s) had its retry sent on an upstream connection gunicorn closed at that
# moment, which the front answered 503 again (seen once in the fault test under load). On
# SIGTERM gunicorn cuts idle kept-alive connections short, so a stop does not wait for them.
keepalive = int(os.environ.get("GUNICORN_KEEPALIVE", "75"))
# A worker is recycled after this many requests, a safety net against a slow leak only. A large
# upload does not need it: after each of four 64 MiB finals a worker's resident size came back
# to 127-138 MiB (125 before them; its peak 311-320). Each recycle costs a worker's start (the
# app imported again, about 1-2 s of CPU here): at 2,000 requests, wrk (16 connections) got the
# pods' champion API at 806 and 871 req/s and /healthz at 1,742 and 2,038; with no recycling,
# 2,150 and 1,284, and 5,724 and 5,726 (10,000 benchmarks, two runs each; docs/operations.md
# §The web processes).
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "100000"))
max_requests_jitter = max_requests // 10
# Gunicorn would believe X-Forwarded-Proto from 127.0.0.1 on its own; the scheme header is
# trusted by Django only, and only when AEON_TRUSTED_PROXY_SSL_HEADER says so.
secure_scheme_headers: dict[str, str] = {}
control_socket_disable = True  # several boards on one machine would share its path
accesslog = "-"
errorlog = "-"
access_log_format = '%(h)s "%(r)s" %(s)s %(b)s %(M)s'
logconfig_dict = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "config.jsonlog.JsonFormatter"}},
    "filters": {"quiet_probes": {"()": "config.jsonlog.QuietProbes"}},
    "handlers": {
        "stdout": {
            "class": "logging.StreamHandler",
            "formatter": "json",
            "stream": "ext://sys.stdout",
        }
    },
    "root": {"handlers": ["stdout"], "level": "INFO"},
    "loggers": {
        "gunicorn.error": {"handlers": ["stdout"], "level": "INFO", "propagate": False},
        # Probes answered 200 are not logged (config.jsonlog.QuietProbes).
        "gunicorn.access": {
            "handlers": ["stdout"],
            "level": "INFO",
            "propagate": False,
            "filters": ["quiet_probes"],
        },
    },
}
