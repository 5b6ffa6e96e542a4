"""A lease on what one job writes: a tokenize output directory, a training run key in a work directory.

Two runs that write the same files at once corrupt each other (a nightly tokenize that overruns into the next
night's, the same training command started twice). A :class:`Lease` is a small JSON file naming its holder (host,
pid, start time, run id, last renewal), taken atomically before the job touches anything and removed when it
ends:

* taking it: under an exclusive ``flock`` of the directory that holds it (held for the few milliseconds of the
  check; no lock file is left behind), the lease is read; absent or stale, it is written (atomically: a
  temporary name, then a rename) with this run's identity; held by a live run, :class:`LeaseHeld` names that run
  and the job exits 2;
* stale: its process is gone (same host: no such pid) or it has not been renewed for :data:`STALE_SECONDS` (another
  host, or a hung process); taking it over prints one line saying whose it was;
* renewing: a daemon thread rewrites the renewal time every :data:`RENEW_SECONDS` while the job runs;
* releasing: the lease is removed if it is still this run's.

Testing aid: ``SHARDPIECE_HOLD_LEASE=PATH`` makes :meth:`Lease.acquire` create ``PATH.held`` once it holds the
lease and wait until ``PATH`` exists (a test starts a second run in between: no sleeps, no timing).

Example::

    with Lease(os.path.join(work_dir, "lease.json"), "training run key 3f2a...", progress=print):
        ...  # write the stage files
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import threading
import time
import uuid
from typing import Callable

from tokenizer.errors import ShardpieceError

STALE_SECONDS = 600.0  # a lease not renewed for this long is taken over (its holder is hung or on a lost host)
RENEW_SECONDS = 30.0
HOLD_ENV = "SHARDPIECE_HOLD_LEASE"


class LeaseHeld(ShardpieceError):
    """Another live run holds the lease (a :class:`~tokenizer.errors.ShardpieceError`: exit code 2, the user
    decides)."""


def process_alive(pid: int) -> bool:
    """Whether a process with ``pid`` exists on this host (``process_alive(os.getpid())`` -> ``True``)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, another user's
        return True
    return True


def lease_beside(path: str) -> str:
    """The lease file of a directory that readers open whole (a tokenize output): a hidden file beside it, not in
    it. ``lease_beside("/d/out/")`` -> ``"/d/.out.lease"``."""
    from tokenizer.files import hidden_beside

    return hidden_beside(path, "lease")


def describe(holder: dict) -> str:
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(holder.get("started", 0)))
    return f"pid {holder.get('pid')} on {holder.get('host')}, started {started}, run {holder.get('run_id')}"


class Lease:
    """The lease file ``path`` on ``what`` (named in messages); see the module docstring. ``now`` gives the time
    (tests pass a clock)."""

    def __init__(self, path: str, what: str, *, progress: Callable[[str], None] = lambda message: None,
                 stale_seconds: float = STALE_SECONDS, renew_seconds: float = RENEW_SECONDS,
                 now: Callable[[], float] = time.time):
        self.path, self.what, self.progress = os.path.abspath(path), what, progress
        self.stale_seconds, self.renew_seconds, self.now = stale_seconds, renew_seconds, now
        self.identity = {"host": socket.gethostname(), "pid": os.getpid(), "started": round(now(), 3),
                         "run_id": uuid.uuid4().hex[:12]}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ---------------------------------------------------------------------------------------------- the file
    def _read(self) -> dict | None:
        try:
            with open(self.path, encoding="utf-8") as handle:
                return json.load(handle)
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return {}  # unreadable (a half-written file of a killed writer): treated as stale

    def _write(self) -> None:
        from tokenizer.files import write_atomic

        record = {**self.identity, "renewed": round(self.now(), 3)}
        write_atomic(self.path, (json.dumps(record, sort_keys=True) + "\n").encode(), what="lease file")

    def stale(self, holder: dict) -> bool:
        """A lease whose holder cannot be running: an unreadable file, a dead process on this host, or no renewal
        for ``stale_seconds``."""
        if not holder.get("pid") or not holder.get("host"):
            return True
        if holder["host"] == self.identity["host"] and not process_alive(int(holder["pid"])):
            return True
        return self.now() - float(holder.get("renewed", 0)) > self.stale_seconds

    def _locked(self) -> "_DirectoryLock":
        return _DirectoryLock(os.path.dirname(self.path))

    # ---------------------------------------------------------------------------------------------- the lease
    def acquire(self) -> "Lease":
        """Take the lease (or raise :class:`LeaseHeld`), then start renewing it."""
        with self._locked():
            holder = self._read()
            if holder is not None and holder.get("run_id") != self.identity["run_id"]:
                if not self.stale(holder):
                    raise LeaseHeld(
                        f"{self.what} is in use by another run ({describe(holder)}; lease {self.path}): wait for it "
                        f"to finish, or stop it; a lease not renewed for {self.stale_seconds:.0f} s, or whose "
                        "process is gone, is taken over")
                self.progress(f"[lease] taking over the stale lease of {describe(holder) if holder else 'a run'} "
                              f"on {self.what}")
            self._write()
        self._thread = threading.Thread(target=self._renew, name="lease-renewal", daemon=True)
        self._thread.start()
        hold = os.environ.get(HOLD_ENV)
        if hold:  # testing aid (module docstring): say we hold it, then wait to be let go
            try:
                with open(hold + ".held", "w", encoding="utf-8") as handle:
                    handle.write(json.dumps(self.identity))
                while not os.path.exists(hold):
                    self._stop.wait(0.05)
            except BaseException:  # stopped while held (Ctrl-C): the caller never got the lease to release
                self.release()
                raise
        return self

    def _renew(self) -> None:
        while not self._stop.wait(self.renew_seconds):
            with self._locked():
                holder = self._read()
                if not holder or holder.get("run_id") != self.identity["run_id"]:
                    return  # taken over (this run was presumed dead): leave it to its new holder
                self._write()

    def release(self) -> None:
        """Stop renewing and remove the lease if it is still this run's."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        with self._locked():
            holder = self._read()
            if holder and holder.get("run_id") == self.identity["run_id"]:
                os.unlink(self.path)

    def __enter__(self) -> "Lease":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


class _DirectoryLock:
    """An exclusive ``flock`` on a directory (made if missing) for the span of a ``with`` block."""

    def __init__(self, directory: str):
        os.makedirs(directory, exist_ok=True)
        self.fd = os.open(directory, os.O_RDONLY)

    def __enter__(self) -> "_DirectoryLock":
        fcntl.flock(self.fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)
