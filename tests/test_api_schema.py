"""/api/schema/ answers every request when several generate it at once in a fresh process
(config/api_schema.py): before its lock, 7 of 8 such requests were answered 500 (drf-spectacular
loads its extensions lazily and not thread-safely). A fresh interpreter, since the extensions
stay loaded once one request has generated the schema."""

from tests.processes import fresh_interpreter

CONCURRENT_FIRST_REQUESTS = """
import sys, threading
import django
django.setup()
from django.test import Client
threads = int(sys.argv[1])
start, statuses = threading.Barrier(threads), []
def fetch():
    client = Client()
    start.wait()
    statuses.append(client.get("/api/schema/", HTTP_HOST="127.0.0.1").status_code)
running = [threading.Thread(target=fetch) for _ in range(threads)]
for thread in running:
    thread.start()
for thread in running:
    thread.join()
print(sorted(statuses))
"""


def test_eight_first_requests_at_once_are_all_answered():
    assert fresh_interpreter(CONCURRENT_FIRST_REQUESTS, "8") == str([200] * 8)
