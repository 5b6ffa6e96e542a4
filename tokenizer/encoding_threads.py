"""The process's encoding threads: kept from call to call (a batch pays no thread start-up), each handed one job
at a time by the batch that checks it out. A job is handed over and joined through two plain locks, the least a
thread can wait on: a thread pool's futures and queues cost more than the rest of a two-thread batch's set-up, on
the cold caches a batch call often starts with.

    >>> threads = check_out(1)
    >>> threads[0].start_job(lambda: None)
    >>> threads[0].join_job() is None
    True
    >>> check_in(threads)
"""

from __future__ import annotations

import itertools
import os
import threading
from typing import Callable

_IDLE: list[EncodingThread] = []  # checked in, waiting for a job
_IDLE_LOCK = threading.Lock()
_NUMBERS = itertools.count()


class EncodingThread:
    """A daemon thread that runs the jobs handed to it (:meth:`start_job`), one at a time; :meth:`join_job` waits
    for the job and gives what it raised."""

    __slots__ = ("_job", "_error", "_job_ready", "_job_done")

    def __init__(self) -> None:
        self._job: Callable[[], object] | None = None
        self._error: BaseException | None = None
        self._job_ready, self._job_done = threading.Lock(), threading.Lock()
        self._job_ready.acquire()
        self._job_done.acquire()
        threading.Thread(target=self._run, name=f"shardpiece-encode-{next(_NUMBERS)}", daemon=True).start()

    def _run(self) -> None:
        while True:
            self._job_ready.acquire()
            try:
                self._job()
            except BaseException as error:  # (handed to the caller by join_job)
                self._error = error
            self._job = None
            self._job_done.release()

    def start_job(self, job: Callable[[], object]) -> None:
        """Run ``job()`` on this thread; the caller must :meth:`join_job` it before starting another."""
        self._job, self._error = job, None
        self._job_ready.release()

    def join_job(self) -> BaseException | None:
        """Wait for the job; what it raised, or None."""
        self._job_done.acquire()
        error, self._error = self._error, None
        return error


def check_out(count: int) -> list[EncodingThread]:
    """``count`` idle encoding threads for one caller (started if there are fewer idle); :func:`check_in` them
    once their jobs are joined. Several callers at once each get threads of their own."""
    with _IDLE_LOCK:
        taken = _IDLE[len(_IDLE) - count:] if count <= len(_IDLE) else list(_IDLE)
        del _IDLE[len(_IDLE) - len(taken):]
    return taken + [EncodingThread() for _ in range(count - len(taken))]


def check_in(threads: list[EncodingThread]) -> None:
    """Give back threads from :func:`check_out` whose jobs are all joined."""
    with _IDLE_LOCK:
        _IDLE.extend(threads)


def _forget_threads_after_fork() -> None:
    global _IDLE_LOCK
    _IDLE.clear()  # (a forked child has none of its parent's threads)
    _IDLE_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget_threads_after_fork)
