"""Gunicorn's threaded worker, with its request threads taken most recently idle first.

Gunicorn's gthread worker hands each request to a `ThreadPoolExecutor`, whose idle threads take
work in turn: one pod uploading its checkpoints and final one after another is served by each
of the four threads in rotation, and each thread keeps its own database connection
(CONN_MAX_AGE), so every request meets a thread and a PostgreSQL backend that have slept the
longest. Here the thread that went idle last takes the next request (as Apache's worker MPM
picks its idle threads): sequential requests stay on one warm thread and connection, while
concurrent requests still spread over every thread. Measured in `make bench`
(docs/protocol.md §Ingest cost).

`config/gunicorn.conf.py` selects it (`WORKER_CLASS`), as the benchmarks that start gunicorn do;
everything else is gunicorn's own worker."""

import threading
from collections import deque
from concurrent.futures import Executor, Future

from gunicorn.workers import gthread

WORKER_CLASS = "config.gworker.ThreadWorker"


class LifoThreadPool(Executor):
    """An executor of at most `max_workers` threads, started as work needs them. Work submitted
    while a thread is idle goes to the thread idle since the shortest time; while every thread is
    busy it waits in submission order (first come, first served) for the next thread to finish."""

    def __init__(self, max_workers: int, thread_name_prefix: str = "request"):
        if max_workers <= 0:
            raise ValueError("max_workers must be greater than 0")
        self._max_workers = max_workers
        self._prefix = thread_name_prefix
        self._lock = threading.Lock()
        self._idle: list[_Slot] = []  # a stack: the last one pushed went idle last
        self._waiting: deque[_Work] = deque()  # work that found every thread busy
        self._threads: list[threading.Thread] = []
        self._shutdown = False

    def submit(self, fn, /, *args, **kwargs) -> Future:
        future = Future()
        work = _Work(future, fn, args, kwargs)
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")
            if self._idle:
                self._idle.pop().hand(work)
            elif len(self._threads) < self._max_workers:
                # A daemon: an idle thread never holds its process up at exit. Gunicorn stops
                # a worker only after its requests in flight end (or its graceful timeout), and
                # a request cut off there rolls back with its database connection.
                # The work goes through the thread's slot: an argument of the thread would be
                # held by it for as long as it lives.
                slot = _Slot()
                slot.work = work
                thread = threading.Thread(
                    target=self._serve,
                    args=(slot,),
                    name=f"{self._prefix}-{len(self._threads)}",
                    daemon=True,
                )
                self._threads.append(thread)
                thread.start()
            else:
                self._waiting.append(work)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._shutdown = True
            if cancel_futures:
                while self._waiting:
                    self._waiting.popleft().future.cancel()
            while self._idle:
                self._idle.pop().hand(None)  # an idle thread told to end
            threads = list(self._threads)
        if wait:
            for thread in threads:
                if thread is not threading.current_thread():
                    thread.join()

    def _serve(self, slot: "_Slot") -> None:
        work, slot.work = slot.work, None
        while work is not None:
            work.run()
            with self._lock:
                if self._waiting:
                    work = self._waiting.popleft()
                    continue
                if self._shutdown:
                    return
                work = None  # nothing of the last request is held while idle
                slot.ready.clear()
                self._idle.append(slot)
            slot.ready.wait()
            work, slot.work = slot.work, None


class _Work:
    __slots__ = ("future", "fn", "args", "kwargs")

    def __init__(self, future: Future, fn, args: tuple, kwargs: dict):
        self.future, self.fn, self.args, self.kwargs = future, fn, args, kwargs

    def run(self) -> None:
        if not self.future.set_running_or_notify_cancel():
            return
        try:
            result = self.fn(*self.args, **self.kwargs)
        except BaseException as exc:  # as ThreadPoolExecutor: the future carries it
            self.future.set_exception(exc)
        else:
            self.future.set_result(result)
        finally:
            self.fn = self.args = self.kwargs = None


class _Slot:
    """An idle thread's mailbox: the work handed to it, or None to end."""

    __slots__ = ("ready", "work")

    def __init__(self):
        self.ready = threading.Event()
        self.work: _Work | None = None

    def hand(self, work: "_Work | None") -> None:
        self.work = work
        self.ready.set()


class ThreadWorker(gthread.ThreadWorker):
    """Gunicorn's gthread worker on a `LifoThreadPool` (gunicorn's documented hook)."""

    def get_thread_pool(self) -> LifoThreadPool:
        return LifoThreadPool(self.cfg.threads)
