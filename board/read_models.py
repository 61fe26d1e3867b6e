"""What follows a change the board shows: the generation move and the recompute of the read
models, once per transaction, after it commits (docs/champions.md)."""

import importlib
import logging
import threading
from contextlib import contextmanager
from functools import partial

from celery import current_app
from django.db import transaction
from django.db.models import F

from board.answer_cache import advance_shared_generation, fresh_generation
from board.class_recompute import recompute_class
from board.models import (
    Benchmark,
    BoardGeneration,
    HardwareClass,
)
from config import coalesce
from config.after_answer import publish_after_answer

logger = logging.getLogger("aeon.board")


_deferred = threading.local()


@contextmanager
def read_models_deferred():
    """Within this block, commits do not recompute read models one by one (a rebuild or a bulk
    load records thousands of runs); the caller calls `recompute_all_read_models()` after."""
    previous = getattr(_deferred, "active", False)
    _deferred.active = True
    try:
        yield
    finally:
        _deferred.active = previous


def read_models_changed(*, hardware_class_id: int | None, model_id: int | None) -> None:
    """What a page or an API answer shows changed in (class, model): once the transaction
    commits, the generation moves once (raw answers are fresh now) and one recompute of the
    affected read models is queued per (class, model), however often a transaction says so
    (the recompute moves the generation again once the read models are rewritten). Neither can
    fail the transaction's answer: it committed already (`_after_commit`)."""
    if getattr(_deferred, "active", False):
        return
    changed = _changes_of_transaction()
    if hardware_class_id is not None or model_id is not None:
        changed.add((hardware_class_id, model_id))


class _Changes(set):
    """The (class, model) pairs one transaction changed, published once it commits."""

    published = False

    def publish(self) -> None:
        self.published = True
        _after_commit(bump_generation)
        recompute = _recompute_task()
        for hardware_class_id, model_id in sorted(self, key=str):
            _after_commit(partial(publish_after_answer, recompute, hardware_class_id, model_id))


RECOMPUTE_TASK = "board.tasks.recompute_read_models"


def _recompute_task():
    """The recompute task, by name from Celery's registry (board/tasks.py imports this module,
    never the other way round); its module is imported first when no one has yet (a web
    process). By its name, under Python's import lock, and not by Celery's
    `import_default_modules`: Celery guards its autodiscovery with a flag, not a lock, so a
    thread that comes while another is in it returns having imported nothing, and the first
    concurrent commits of a fresh web process raised NotRegistered (seen under `make prod`;
    about one run in three of 32 threads started at once, tests/test_task_lookup.py)."""
    if RECOMPUTE_TASK not in current_app.tasks:
        importlib.import_module(RECOMPUTE_TASK.rpartition(".")[0])
    return current_app.tasks[RECOMPUTE_TASK]


def _changes_of_transaction() -> _Changes:
    """The changes the current transaction has collected so far, published once it commits (a
    new set, registered with its commit, when it has none yet: after a commit or a rollback the
    connection's hooks are cleared, and so is the set with them; a set published already, whose
    hook a test ran without a commit, is never added to again)."""
    conn = transaction.get_connection()
    for _savepoints, hook, _robust in conn.run_on_commit:
        changes = getattr(hook, "__self__", None)
        if isinstance(changes, _Changes) and not changes.published:
            return changes
    changes = _Changes()
    transaction.on_commit(changes.publish, robust=True)
    return changes


def _after_commit(work) -> None:
    """Work that follows a commit: a failure (the cache or the broker unreachable) is logged,
    never raised into the committed request's answer. A generation move lost that way is made
    good by the next one (the recompute's own, or the next commit's); a recompute lost that way
    by the next commit in that class (`manage.py rebuild_board` rewrites them all); a weight
    check by the beat's sweep (docs/operations.md §Background work)."""
    try:
        work()
    except Exception:
        logger.exception("work after a commit failed (the commit stands): %r", work)


# A (class, model) whose stored read models an answer found stale is queued for a recompute at
# most once in this long, where the broker's Redis holds the marker (`config.coalesce`): a
# record that a recompute still writes in a shape its reader refuses (a bug) must not have every
# uncached answer queue another.
STALE_RECOMPUTE_SECONDS = 600


def recompute_stale(pairs) -> None:
    """Read models an answer found written by an older build (a crown that no longer fits its
    shape, left out of the answer): a recompute of each (class, model) queued once the answer is
    sent, at most once per STALE_RECOMPUTE_SECONDS (with eager tasks, the embedded default, no
    marker stands: each such answer recomputes inline), a failure to queue logged. Until it has
    run, the answers leave those records out."""
    if not pairs:  # every answer of a board in its shape
        return
    recompute = _recompute_task()
    for hardware_class_id, model_id in sorted(set(pairs), key=str):
        if coalesce.claim(f"stale:{hardware_class_id}:{model_id}", STALE_RECOMPUTE_SECONDS):
            _after_commit(partial(publish_after_answer, recompute, hardware_class_id, model_id))


def bump_generation() -> None:
    """A new generation number (in the database, and in the shared cache when there is one):
    every answer cached under the old one is stale."""
    if not BoardGeneration.objects.filter(pk=1).update(number=F("number") + 1):
        BoardGeneration.objects.get_or_create(pk=1, defaults={"number": fresh_generation()})
    advance_shared_generation()


def recompute_read_models(*, hardware_class_id: int | None, model_id: int | None) -> None:
    """Rewrite what a change in (class, model) can affect: the class's class-wide crowns and
    summary, and its crowns and reproductions for the model. The model's best composite sets the
    quality floor on every class, so every other class holding the model is redone as well."""
    class_ids = {hardware_class_id} if hardware_class_id is not None else set()
    if model_id is not None:
        class_ids |= set(
            Benchmark.objects.filter(model_id=model_id)
            .values_list("hardware_class_id", flat=True)
            .distinct()
        )
    with transaction.atomic():
        for hardware_class in locked_classes(class_ids):
            recompute_class(hardware_class, None if model_id is None else {model_id})
        transaction.on_commit(partial(_after_commit, bump_generation))


def locked_classes(class_ids):
    """The classes, locked for a recompute to the end of the transaction, in one order: one
    recompute per class at a time (the row lock orders concurrent tasks). FOR NO KEY UPDATE (on
    PostgreSQL), not FOR UPDATE: a commit that inserts a benchmark of the class takes the row's
    KEY SHARE lock for its foreign key, which FOR UPDATE blocks, so a final sent while the
    previous final's recompute ran waited for it: 155-161 ms against 38.5-38.9 ms at rest;
    with FOR NO KEY UPDATE, 39.5-47.9 ms against 36.0-38.9 ms (medians of 25 small finals a
    run, `make bench` alternating `--back-to-back` with the default, this 2-core machine at
    load average 1; tests/test_recompute_lock.py)."""
    return (
        HardwareClass.objects.select_for_update(no_key=True).filter(pk__in=class_ids).order_by("pk")
    )


def recompute_all_read_models() -> None:
    """Rewrite every read model from the benchmark table (after a rebuild or a bulk load)."""
    with transaction.atomic():
        for hardware_class in HardwareClass.objects.select_for_update(no_key=True).order_by("pk"):
            recompute_class(hardware_class, None)
        transaction.on_commit(partial(_after_commit, bump_generation))
