"""A WSGI app for tests of gunicorn's request threads (tests/test_gworker.py): it answers the
ident of the thread that served the request, after sleeping `?sleep=<seconds>` if asked."""

import threading
import time
from urllib.parse import parse_qs


def app(environ, start_response):
    asked = parse_qs(environ.get("QUERY_STRING", "")).get("sleep", ["0"])[0]
    time.sleep(float(asked))
    body = str(threading.get_ident()).encode()
    start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
    return [body]
