"""Gunicorn's request threads, most recently idle first (config/gworker.py): the pool on its own,
then gunicorn started with the production configuration file, from outside over HTTP."""

import gc
import os
import runpy
import signal
import subprocess
import sys
import threading
import time
import urllib.request
import weakref
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path

import pytest

from config.gworker import WORKER_CLASS, LifoThreadPool
from tests.processes import alive, descendants, free_port

ROOT = Path(__file__).resolve().parent.parent
THREADS = 4


def _all_threads_started(pool) -> None:
    """Make the pool start all its threads: THREADS tasks that wait for each other."""
    barrier = threading.Barrier(THREADS, timeout=10)
    for future in [pool.submit(barrier.wait) for _ in range(THREADS)]:
        future.result(timeout=10)
    time.sleep(0.2)  # each thread, its task done, goes idle


def _threads_of_sequential_work(pool, times: int = 20) -> list[int]:
    """The thread that ran each of `times` tasks submitted one after another, each awaited."""
    idents = []
    for _ in range(times):
        idents.append(pool.submit(threading.get_ident).result(timeout=10))
        time.sleep(0.002)  # the thread goes idle again before the next task comes
    return idents


def test_work_one_after_another_stays_on_the_thread_idle_last():
    pool = LifoThreadPool(THREADS)
    try:
        _all_threads_started(pool)
        idents = _threads_of_sequential_work(pool)
        assert len(set(idents)) == 1, idents
    finally:
        pool.shutdown()
    # The same work on the standard pool meets its threads in turn (as in gunicorn's own gthread
    # worker): the case above is one where the order matters.
    standard = ThreadPoolExecutor(THREADS)
    try:
        _all_threads_started(standard)
        assert len(set(_threads_of_sequential_work(standard))) > 1
    finally:
        standard.shutdown()


def test_work_at_once_spreads_over_every_thread_and_the_rest_waits_its_turn():
    pool = LifoThreadPool(THREADS)
    barrier = threading.Barrier(THREADS, timeout=10)
    release = threading.Event()
    order, order_lock = [], threading.Lock()

    def held() -> int:
        barrier.wait()  # times out (BrokenBarrierError) unless all four run at once
        release.wait(10)
        return threading.get_ident()

    def later(n: int) -> int:
        with order_lock:
            order.append(n)
        return threading.get_ident()

    try:
        holding = [pool.submit(held) for _ in range(THREADS)]
        waiting = [pool.submit(later, n) for n in range(6)]
        time.sleep(0.2)
        assert order == [], "work ran while every thread was busy"
        assert all(not future.done() for future in waiting)
        release.set()
        held_by = {future.result(timeout=10) for future in holding}
        waited_by = {future.result(timeout=10) for future in waiting}
        assert len(held_by) == THREADS
        assert waited_by <= held_by, "a thread beyond max_workers was started"
        # Waiting work is taken first come, first served.
        assert order == list(range(6))
    finally:
        release.set()
        pool.shutdown()


def test_an_exception_reaches_its_future_and_a_cancelled_future_never_runs():
    pool = LifoThreadPool(1)
    release = threading.Event()
    ran = []
    try:
        assert pool.submit(int, "not a number").exception(timeout=10).__class__ is ValueError
        busy = pool.submit(release.wait, 10)
        cancelled = pool.submit(ran.append, "cancelled")
        after = pool.submit(ran.append, "after")
        assert cancelled.cancel()
        release.set()
        busy.result(timeout=10)
        after.result(timeout=10)
        assert ran == ["after"]
        assert pool.submit(lambda: 7).result(timeout=10) == 7  # the thread still serves
    finally:
        release.set()
        pool.shutdown()


def test_an_idle_thread_holds_nothing_of_its_last_work():
    """A request's objects (a 128 MiB body among them) go once it is answered, not when its
    thread next works."""

    class Answer:
        pass

    pool = LifoThreadPool(1)
    try:
        future = pool.submit(Answer)
        answer = weakref.ref(future.result(timeout=10))
        del future
        time.sleep(0.1)  # the thread goes idle
        gc.collect()
        assert answer() is None
    finally:
        pool.shutdown()


def test_shutdown_ends_the_threads_and_refuses_new_work():
    pool = LifoThreadPool(THREADS)
    release = threading.Event()
    _all_threads_started(pool)
    threads = list(pool._threads)
    busy = pool.submit(release.wait, 10)
    queued = [pool.submit(time.sleep, 0) for _ in range(THREADS)]  # three run, one waits
    stopper = threading.Thread(target=pool.shutdown, kwargs={"cancel_futures": True})
    stopper.start()
    time.sleep(0.1)
    assert stopper.is_alive(), "shutdown(wait=True) returned while work was running"
    release.set()
    stopper.join(10)
    assert not stopper.is_alive()
    assert busy.result() is True
    assert all(future.done() for future in queued)
    assert not any(thread.is_alive() for thread in threads)
    with pytest.raises(RuntimeError):
        pool.submit(time.sleep, 0)


def test_the_production_configuration_selects_the_worker():
    config = runpy.run_path(str(ROOT / "config" / "gunicorn.conf.py"))
    assert config["worker_class"] == WORKER_CLASS


def _gunicorn(worker_class: str | None):
    """Gunicorn from the production configuration file, one worker of four threads, serving
    tests/threads_app.py; `worker_class` None keeps the file's."""
    port = free_port()
    env = os.environ | {"PORT": str(port), "WEB_CONCURRENCY": "1", "GUNICORN_THREADS": "4"}
    command = [sys.executable, "-m", "gunicorn", "--config", "config/gunicorn.conf.py"]
    if worker_class:
        command += ["--worker-class", worker_class]
    server = subprocess.Popen(
        [*command, "tests.threads_app:app"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(200):
        try:
            with urllib.request.urlopen(base + "/", timeout=2):
                return server, base
        except OSError:
            assert server.poll() is None, "gunicorn exited"
            time.sleep(0.05)
    server.kill()
    raise AssertionError("gunicorn did not answer")


def _served_by(base: str, query: str = "") -> int:
    with urllib.request.urlopen(f"{base}/{query}", timeout=10) as answer:
        return int(answer.read())


def _threads_serving_one_client(base: str) -> set[int]:
    """Four requests at once (each thread of the worker has served one), then twenty one after
    another, as a pod sends its checkpoints and final: the threads that served the twenty."""
    with ThreadPoolExecutor(THREADS) as clients:
        at_once = [clients.submit(_served_by, base, "?sleep=0.5") for _ in range(THREADS)]
        wait(at_once)
    assert len({future.result() for future in at_once}) == THREADS
    time.sleep(0.2)
    served = set()
    for _ in range(20):
        served.add(_served_by(base))
        time.sleep(0.01)
    return served


def _stop(server: subprocess.Popen) -> None:
    below = descendants(server.pid)
    server.send_signal(signal.SIGTERM)
    server.wait(timeout=30)
    assert not any(alive(pid) for pid in below), "a gunicorn worker outlived its master"


def test_gunicorn_as_configured_serves_one_client_on_one_thread():
    server, base = _gunicorn(None)
    try:
        served = _threads_serving_one_client(base)
        # One thread, or two when a request comes before the last one's thread is idle again.
        assert len(served) <= 2, served
    finally:
        _stop(server)
    # Gunicorn's own gthread worker, for comparison: the same client meets every thread.
    server, base = _gunicorn("gthread")
    try:
        assert len(_threads_serving_one_client(base)) >= 3
    finally:
        _stop(server)
