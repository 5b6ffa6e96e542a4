"""The one way shardpiece writes a whole file: atomically, with the mode a plain ``open()`` would give it.

Every file the project writes in one piece (models, exports, manifests, saved configs, markers, stage files of the
work directory, the tokenize job's summary) goes through :func:`write_atomic`: the bytes go to a temporary file in
the target's directory, are flushed to disk, and the temporary file is renamed over the target, so a reader sees
the old file or the whole new one, never a part. The new file gets ``0o666 & ~umask`` as its mode (0644 under the
usual umask 022, 0600 under 077), as ``open(path, "wb")`` would; ``tempfile.mkstemp`` alone would leave it 0600,
unreadable to other accounts (a Spark executor running as another user, a colleague).

Streamed outputs (Parquet and Megatron shards) are written with ``open()`` under a temporary name and renamed by
their writers, and so get the same mode.

    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "a.txt")
    >>> write_atomic(path, b"hello"); open(path, "rb").read()
    b'hello'
"""

from __future__ import annotations

import errno
import os
import tempfile
import threading
from typing import BinaryIO, Callable

from tokenizer.errors import OutputWriteError

_UMASK_LOCK = threading.Lock()


def proc_field(path: str, key: str) -> str | None:
    """The first word after ``key:`` in a Linux ``/proc`` file of ``Key: value`` lines (``/proc/meminfo``,
    ``/proc/self/status``), or ``None`` where the file or the line is missing.
    Example: ``proc_field("/proc/self/status", "Umask")`` -> ``"0022"``."""
    prefix = key + ":"
    try:
        with open(path, encoding="ascii") as handle:
            for line in handle:
                if line.startswith(prefix):
                    words = line.split()
                    return words[1] if len(words) > 1 else None
    except (OSError, UnicodeDecodeError):
        return None
    return None


def current_umask() -> int:
    """The process's umask (e.g. ``0o022``), read without changing it where Linux shows it in ``/proc``."""
    field = proc_field("/proc/self/status", "Umask")
    try:
        if field is not None:
            return int(field, 8)
    except ValueError:
        pass
    with _UMASK_LOCK:  # elsewhere the only way to read it is to set it and set it back
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def new_file_mode() -> int:
    """The mode ``open(path, "w")`` gives a new file: ``0o666 & ~umask`` (``0o644`` under umask ``0o022``)."""
    return 0o666 & ~current_umask()


def write_atomic(path: str | os.PathLike, data: bytes | Callable[[BinaryIO], None], what: str = "output") -> None:
    """Write ``data`` to ``path`` atomically (see the module docstring); parent directories are created. ``data``
    may be a function that writes to the open file (a large value streamed, never held as one more copy).

    An ``OSError`` (full disk, no permission, read-only filesystem) becomes :class:`OutputWriteError` naming
    ``what``, the path and the fix; the temporary file is removed and an older file at ``path`` is left untouched.
    """
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    tmp = None
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
        os.fchmod(fd, new_file_mode())
        with os.fdopen(fd, "wb") as handle:
            if callable(data):
                data(handle)
            else:
                handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        raise write_error(path, exc, what) from None
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


def write_error(path: str, exc: OSError, what: str = "output") -> OutputWriteError:
    """The :class:`OutputWriteError` for an ``OSError`` met while writing ``path``: the reason and the fix."""
    reason = exc.strerror or str(exc)
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        fix = "free space there, or write to another place (--output, or --work-dir for stage files)"
    elif exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        fix = "make the directory writable, or write to another place"
    else:
        fix = "check the path and the filesystem"
    error = OutputWriteError(f"cannot write the {what} {path}: {reason}; {fix}. Nothing was overwritten")
    error.errno = exc.errno
    return error


def writable_directory(path: str, what: str) -> None:
    """Raise :class:`~tokenizer.errors.ConfigError` unless files can be created in directory ``path`` (made on
    demand): its nearest existing ancestor must be a writable directory. ``what`` names the option. Checked
    before a job starts its work, so a bad output path costs nothing."""
    from tokenizer.errors import ConfigError

    probe = os.path.abspath(path)
    while not os.path.exists(probe):
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe):
        raise ConfigError(f"{what} {path}: {probe} is a file, not a directory; give a path in a directory")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ConfigError(f"{what} {path}: the directory {probe} is not writable; fix its permissions or give "
                          "another path")


def hidden_beside(path: str, suffix: str) -> str:
    """A hidden path beside ``path`` (a directory that readers open whole, such as a tokenize output, so that what
    belongs to its runs stays out of it): ``hidden_beside("/d/out/", "lease")`` -> ``"/d/.out.lease"``."""
    path = os.path.abspath(path).rstrip("/")
    return os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{suffix}")
