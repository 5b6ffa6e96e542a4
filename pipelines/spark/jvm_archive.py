"""A class-data-sharing (CDS) archive for the local driver JVM: Spark starts in about half the time.

Starting a local Spark session spends most of its time loading, verifying and interpreting a few thousand
classes from Spark's jars, on one core. The JVM can save those classes, already parsed and verified, to an archive
file and map it at the next start (Java's dynamic CDS archive, JDK 13+). ``benchmarks/spark_start.py`` times a
``local[2]`` small-driver session's start with and without the archive (BENCHMARKS.md, spark_start.py): about half
the time and half the JVM's CPU.

How it is used (only for the lean local driver, ``build_session(small_driver=True)`` on a ``local`` master, whose
JVM options are fixed, and only on Linux):

1. The first session finds no archive and starts its JVM with ``-XX:ArchiveClassesAtExit=<name>.part``: the JVM
   writes the classes it loaded when it exits, after the job. The session records the JVM's class path beside the
   part file (``.classpath``).
2. A later session first promotes finished part files: a part no running process is still writing is checked by
   starting ``java -Xshare:on`` with it and that class path (a truncated archive makes the JVM fail, never the job),
   then renamed into place; a part that fails the check is deleted, and so is the class path of a JVM killed
   before it wrote its part. The session then maps the archive (``-XX:SharedArchiveFile=...``, ``-Xshare:auto``:
   a JVM that cannot use it runs without it). While a JVM that will write a part still runs, other sessions
   start without the archive and write none.

Archives live in ``$SHARDPIECE_JVM_ARCHIVE_DIR`` (default ``$XDG_CACHE_HOME/shardpiece/jvm``, i.e.
``~/.cache/shardpiece/jvm``), one per Java installation, Spark installation and option set (the name holds a
hash of them; BENCHMARKS.md, spark_start.py, gives an archive's size); one that no session used for 30 days is
deleted, and the folder may be deleted any time. ``SHARDPIECE_JVM_ARCHIVE_DIR=off`` turns the archive off.
The archive changes how fast the JVM starts, never what it computes. With it, JVM warnings go to stderr instead
of stdout, and CDS's own notes are silenced.

Example::

    options = driver_archive_options("-XX:+UseSerialGC")
    # first run: "-XX:ArchiveClassesAtExit=/root/.cache/shardpiece/jvm/driver-1a2b....jsa.4711-9f.part ..."
    # later runs: "-XX:SharedArchiveFile=/root/.cache/shardpiece/jvm/driver-1a2b....jsa -Xshare:auto ..."
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
import uuid

ARCHIVE_DIR_ENV = "SHARDPIECE_JVM_ARCHIVE_DIR"
#: JVM unified logging: warnings to stderr (the JVM's default is stdout, which a CLI may be writing), CDS's
#: notes (e.g. "Skipping ...: Signed JAR" while dumping) off.
QUIET_LOG_OPTIONS = "-Xlog:disable -Xlog:all=warning:stderr -Xlog:cds*=off:stderr"
_OFF = ("", "0", "off", "no", "none", "false")
UNUSED_DAYS = 30  # an archive no session mapped for this long is deleted


def archive_directory() -> str | None:
    """Where archives are kept: ``$SHARDPIECE_JVM_ARCHIVE_DIR``, else ``$XDG_CACHE_HOME/shardpiece/jvm`` (default
    ``~/.cache/shardpiece/jvm``); ``None`` when turned off (the variable set to ``off``) or not on Linux (the
    in-progress check reads ``/proc``)."""
    value = os.environ.get(ARCHIVE_DIR_ENV)
    if value is not None and value.strip().lower() in _OFF:
        return None
    if not os.path.isdir("/proc/self"):
        return None
    if value:
        return value
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "shardpiece", "jvm")


def java_executable() -> str | None:
    """The ``java`` Spark's launcher runs: ``$JAVA_HOME/bin/java``, else the one on ``PATH``."""
    home = os.environ.get("JAVA_HOME")
    if home and os.path.isfile(os.path.join(home, "bin", "java")):
        return os.path.join(home, "bin", "java")
    return shutil.which("java")


def archive_key(java: str, java_options: str) -> str:
    """Hex digest naming the archive: the Java installation (the resolved ``java``, ``libjvm.so``, the runtime
    image and the base archive: path, size, mtime), Spark's installation
    (``SPARK_HOME``, every jar's name, size and mtime), the environment that adds to the class path and the JVM
    options. A change to any of them names another archive."""
    from pyspark.find_spark_home import _find_spark_home

    digest = hashlib.sha256()

    def add(*parts) -> None:
        digest.update(("\x1f".join(str(p) for p in parts) + "\x1e").encode("utf-8", "surrogateescape"))

    real_java = os.path.realpath(java)
    java_home = os.path.dirname(os.path.dirname(real_java))
    # the launcher, the JVM library, the runtime image and the JDK's base archive: a JDK update changes one
    for path in (real_java, os.path.join(java_home, "lib", "server", "libjvm.so"),
                 os.path.join(java_home, "lib", "modules"), os.path.join(java_home, "lib", "server", "classes.jsa")):
        if os.path.exists(path):
            status = os.stat(path)
            add("java", path, status.st_size, status.st_mtime_ns)
    spark_home = os.path.realpath(_find_spark_home())
    add("spark", spark_home)
    for jar in sorted(glob.glob(os.path.join(spark_home, "jars", "*"))):
        status = os.stat(jar)
        add(os.path.basename(jar), status.st_size, status.st_mtime_ns)
    for name in ("SPARK_CONF_DIR", "HADOOP_CONF_DIR", "YARN_CONF_DIR", "SPARK_DIST_CLASSPATH", "SPARK_CLASSPATH"):
        add(name, os.environ.get(name, ""))
    add("options", java_options)
    return digest.hexdigest()[:24]


def _running_command_lines() -> list[bytes]:
    lines = []
    for path in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            with open(path, "rb") as handle:
                lines.append(handle.read())
        except OSError:  # the process ended meanwhile
            continue
    return lines


def _archive_works(java: str, archive: str, class_path: str, directory: str) -> bool:
    """Whether a JVM maps ``archive`` with ``-Xshare:on`` (it refuses a truncated or mismatched one)."""
    error_file = os.path.join(directory, f"hs_err_check_{os.getpid()}.log")
    try:
        done = subprocess.run([java, f"-XX:SharedArchiveFile={archive}", "-Xshare:on", f"-XX:ErrorFile={error_file}",
                               "-cp", class_path, "-version"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60, check=False,
                              cwd=directory)
        return done.returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        if os.path.exists(error_file):
            os.remove(error_file)


def promote_finished_parts(directory: str, java: str, final: str) -> bool:
    """Settle every earlier dump of ``final`` (a ``final.TAG.part`` and its ``.classpath``) whose JVM has exited:
    rename the first part that works to ``final``, delete the rest, and the class paths of JVMs that exited
    without writing a part (killed). Returns whether some JVM is still running with a dump of ``final`` to write
    (its command line names its part)."""
    running = _running_command_lines()
    in_progress = False
    stems = {path.rsplit(".", 1)[0] for pattern in (".*.part", ".*.classpath")
             for path in glob.glob(glob.escape(final) + pattern)}
    for stem in sorted(stems):
        part, class_path_file = stem + ".part", stem + ".classpath"
        if any(part.encode("utf-8", "surrogateescape") in line for line in running):
            in_progress = True  # its JVM is still running (or writing it)
            continue
        try:
            with open(class_path_file, encoding="utf-8") as handle:
                class_path = handle.read()
        except OSError:
            class_path = None
        if class_path and os.path.exists(part) and not os.path.exists(final) \
                and _archive_works(java, part, class_path, directory):
            try:
                os.replace(part, final)
            except FileNotFoundError:  # another session promoted it meanwhile
                pass
        _remove(part)
        _remove(class_path_file)
    return in_progress


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def remove_unused_archives(directory: str, keep: str, days: float = UNUSED_DAYS) -> None:
    """Delete the archives of other Java, Spark or option sets (``driver-*.jsa`` but ``keep``) unused for ``days``
    days (a session marks the archive it maps by its mtime): old installations leave no large files behind."""
    import time

    cutoff = time.time() - days * 86400
    for path in glob.glob(os.path.join(glob.escape(directory), "driver-*.jsa")):
        try:
            if path != keep and os.stat(path).st_mtime < cutoff:
                os.remove(path)
        except OSError:
            continue


def driver_archive_options(java_options: str) -> str:
    """Extra driver JVM options for the archive (see the module docstring): map it when it exists, else dump one
    at exit (unless another JVM is already dumping it); ``""`` when archives are off or anything fails."""
    directory = archive_directory()
    java = java_executable()
    if directory is None or java is None:
        return ""
    if any(c.isspace() or c in "'\"\\" for c in directory):
        return ""  # Spark splits extraJavaOptions at spaces
    try:
        os.makedirs(directory, exist_ok=True)
        final = os.path.join(directory, f"driver-{archive_key(java, java_options)}.jsa")
        in_progress = promote_finished_parts(directory, java, final)
        remove_unused_archives(directory, keep=final)
        if os.path.isfile(final):
            os.utime(final)  # its mtime says when it was last used
            return f"-XX:SharedArchiveFile={final} -Xshare:auto {QUIET_LOG_OPTIONS}"
        if in_progress:
            return ""  # another JVM is writing it
        part = f"{final}.{os.getpid()}-{uuid.uuid4().hex[:8]}.part"
        return f"-XX:ArchiveClassesAtExit={part} {QUIET_LOG_OPTIONS}"
    except (OSError, ImportError):
        return ""


def record_class_path(java_options: str, class_path: str) -> None:
    """Write the running JVM's class path beside the part file it will dump (``java_options`` as returned by
    :func:`driver_archive_options`), for the check that later promotes it; nothing when it dumps none."""
    for option in java_options.split():
        if option.startswith("-XX:ArchiveClassesAtExit="):
            part = option.split("=", 1)[1]
            try:
                with open(part[: -len(".part")] + ".classpath", "w", encoding="utf-8") as handle:
                    handle.write(class_path)
            except OSError:
                pass
