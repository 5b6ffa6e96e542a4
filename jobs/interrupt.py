"""Ctrl-C for the commands: one line and exit 130, instead of the Spark and py4j tracebacks of a job stopped mid-call.

:func:`run_interruptible` runs a command's body on a thread of its own while the main thread waits and takes
SIGINT. The first Ctrl-C cancels the running Spark jobs (if a SparkContext is active) and raises
:class:`Interrupted` in the body as soon as it is outside a py4j call, so its ``finally`` blocks run (leases released,
the session stopped) on an intact connection; a body blocked in a Spark job gets the job's cancellation error
instead, and either way the body ends and :class:`Interrupted` comes out of :func:`run_interruptible`. A second
Ctrl-C stops the process at once (exit 130) after one line. py4j's own logging is silenced after the first Ctrl-C
(its connections may break as the jobs stop).

Used only from the main thread of a process whose SIGINT handler is Python's default; otherwise the body runs
directly. Example: ``run_interruptible(lambda: 7)`` -> ``7``.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import sys
import threading
from typing import Callable, TypeVar

T = TypeVar("T")
EXIT_INTERRUPTED = 130
_POLL_SECONDS = 0.2  # how often the waiting main thread looks for a Ctrl-C's request (a wait, not a time limit)


class Interrupted(KeyboardInterrupt):
    """The command was stopped by Ctrl-C (SIGINT)."""


def _inside_py4j(thread: threading.Thread) -> bool:
    """Whether ``thread`` is executing py4j's code now (a call into the JVM; raising there breaks its connection)."""
    frame = sys._current_frames().get(thread.ident)
    while frame is not None:
        if str(frame.f_globals.get("__name__", "")).startswith("py4j"):
            return True
        frame = frame.f_back
    return False


def _raise_in(thread: threading.Thread) -> None:
    """Raise :class:`Interrupted` in ``thread`` at its next Python instruction."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(Interrupted))


def _cancel_spark_jobs() -> None:
    """Cancel the jobs of this process's SparkContext, if there is one (pyspark is never imported here)."""
    context_module = sys.modules.get("pyspark.core.context") or sys.modules.get("pyspark.context")
    context = getattr(getattr(context_module, "SparkContext", None), "_active_spark_context", None)
    if context is not None:
        try:
            context.cancelAllJobs()
        except Exception:  # the JVM may be starting or gone; the body's own error says the rest
            pass


def run_interruptible(body: Callable[[], T], on_second: Callable[[], None] = lambda: None) -> T:
    """``body()``, stoppable by Ctrl-C as the module docstring says; ``on_second`` runs (to print its line) before
    a second Ctrl-C ends the process with exit 130."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return body()
    outcome: dict = {}

    def target() -> None:
        try:
            outcome["value"] = body()
        except BaseException as exc:  # handed to the main thread, which raises it there
            outcome["error"] = exc

    worker = threading.Thread(target=target, name="shardpiece-command", daemon=True)
    state = {"requested": False, "delivered": False}

    def on_sigint(signum, frame) -> None:
        if state["requested"]:
            on_second()
            os._exit(EXIT_INTERRUPTED)
        state["requested"] = True
        logging.getLogger("py4j").setLevel(logging.CRITICAL + 1)

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        worker.start()
        while worker.is_alive():
            worker.join(_POLL_SECONDS)  # the handler does not raise: it only marks the request, seen here
            if state["requested"] and worker.is_alive() and not state["delivered"]:
                if _inside_py4j(worker):
                    _cancel_spark_jobs()  # again each time: a job started after the last cancel stops too
                else:
                    _raise_in(worker)
                    state["delivered"] = True
    finally:
        signal.signal(signal.SIGINT, previous)
    if "error" in outcome:
        if state["requested"]:
            raise Interrupted() from outcome["error"]
        raise outcome["error"]
    return outcome["value"]
