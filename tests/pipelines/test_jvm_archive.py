"""The driver JVM's class-data-sharing archive: dumped by a first JVM, checked and promoted, then mapped; a
truncated dump is deleted, never mapped (a JVM mapping one crashes); a dump still being written is left alone."""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import time

import pytest

from pipelines.spark import jvm_archive
from pipelines.spark.jvm_archive import ARCHIVE_DIR_ENV, driver_archive_options, record_class_path

OPTIONS = "-XX:+UseSerialGC -Xss512k"


@pytest.fixture
def java(monkeypatch, tmp_path) -> str:
    """The java executable, with archives kept in ``tmp_path``."""
    found = jvm_archive.java_executable()
    if found is None:
        pytest.skip("no java")
    monkeypatch.setenv(ARCHIVE_DIR_ENV, str(tmp_path))
    return found


def _sleeper(marker: str) -> subprocess.Popen:
    """A process whose command line names ``marker``, returned once ``/proc`` shows that command line: Popen returns
    when the child has begun its exec, and until the kernel has set up the new argument area the child's
    ``/proc/PID/cmdline`` reads empty (seen here on a loaded machine)."""
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", marker])
    for _ in range(500):
        with open(f"/proc/{process.pid}/cmdline", "rb") as handle:
            if marker.encode() in handle.read():
                return process
        time.sleep(0.01)
    process.kill()
    raise AssertionError(f"pid {process.pid} never showed its command line")


def _part_of(options: str) -> str:
    (option,) = [o for o in options.split() if o.startswith("-XX:ArchiveClassesAtExit=")]
    return option.split("=", 1)[1]


def test_directory_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(ARCHIVE_DIR_ENV, "off")
    assert jvm_archive.archive_directory() is None
    assert driver_archive_options(OPTIONS) == ""
    monkeypatch.setenv(ARCHIVE_DIR_ENV, str(tmp_path / "a"))
    assert jvm_archive.archive_directory() == str(tmp_path / "a")
    monkeypatch.delenv(ARCHIVE_DIR_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert jvm_archive.archive_directory() == str(tmp_path / "cache" / "shardpiece" / "jvm")


def test_key_changes_with_the_options(monkeypatch, java):
    key = jvm_archive.archive_key(java, OPTIONS)
    assert key == jvm_archive.archive_key(java, OPTIONS) and len(key) == 24
    assert key != jvm_archive.archive_key(java, OPTIONS + " -Xmn64m")
    monkeypatch.setenv("SPARK_CONF_DIR", "/elsewhere")  # adds to the JVM's class path
    assert key != jvm_archive.archive_key(java, OPTIONS)


def test_no_second_dump_while_a_jvm_is_writing_one(java):
    """A JVM that will dump at exit has written only its class path yet: another session does not dump too."""
    first = driver_archive_options(OPTIONS)
    part = _part_of(first)
    record_class_path(first, "unused")
    jvm = _sleeper(f"-XX:ArchiveClassesAtExit={part}")
    try:
        assert driver_archive_options(OPTIONS) == ""
        assert os.path.exists(part[: -len(".part")] + ".classpath")
    finally:
        jvm.kill()
        jvm.wait()
    # that JVM is gone without a part (killed): its class path is removed and the next session dumps
    assert "-XX:ArchiveClassesAtExit=" in driver_archive_options(OPTIONS)
    assert not os.path.exists(part[: -len(".part")] + ".classpath")


def test_archives_unused_for_a_month_are_removed(java, tmp_path):
    import time

    current = driver_archive_options(OPTIONS)
    final = _part_of(current).split(".jsa.")[0] + ".jsa"
    old, recent = tmp_path / "driver-0123456789abcdef01234567.jsa", tmp_path / "driver-aaaaaaaaaaaaaaaaaaaaaaaa.jsa"
    for path in (old, recent, final):
        open(path, "wb").close()
    month_ago = time.time() - 31 * 86400
    for path in (old, final):
        os.utime(path, (month_ago, month_ago))
    jvm_archive.remove_unused_archives(str(tmp_path), keep=final)
    assert not old.exists() and recent.exists() and os.path.exists(final)  # the one in use is kept


def test_a_directory_with_spaces_is_not_used(monkeypatch, tmp_path):
    monkeypatch.setenv(ARCHIVE_DIR_ENV, str(tmp_path / "with space"))
    assert driver_archive_options(OPTIONS) == ""


def test_dump_check_promote_and_map(java, tmp_path):
    """A real JVM dumps the archive; the next call checks it with java -Xshare:on and maps it; a truncated copy is
    deleted; a part that a running process names is left alone."""
    from pyspark.find_spark_home import _find_spark_home

    first = driver_archive_options(OPTIONS)
    part = _part_of(first)
    assert os.path.dirname(part) == str(tmp_path) and part.endswith(".part")
    assert "-Xlog:cds*=off:stderr" in first
    spark_home = _find_spark_home()
    class_path = os.path.join(spark_home, "jars", "*")
    done = subprocess.run([java, *OPTIONS.split(), *first.split(), "-cp", class_path,
                           "org.apache.spark.deploy.SparkSubmit", "--version"],
                          capture_output=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert b"cds" not in done.stdout  # CDS's notes are silenced, JVM warnings go to stderr
    size = os.path.getsize(part)
    assert size > 1 << 20
    record_class_path(first, class_path)  # the job records the JVM's java.class.path

    # a truncated copy with the same class path, as a JVM killed while writing would leave
    broken = part.replace(".part", "") + ".0-broken.part"
    with open(part, "rb") as source, open(broken, "wb") as target:
        target.write(source.read(1 << 20))
    with open(broken[: -len(".part")] + ".classpath", "w") as handle:
        handle.write(class_path)
    # a part some running process still names (its JVM writing it), and the class path of a JVM that was killed
    # before it wrote its part
    busy = part.replace(".part", "") + ".1-busy.part"
    open(busy, "wb").close()
    orphan = part.replace(".part", "") + ".2-killed.classpath"
    with open(orphan, "w") as handle:
        handle.write(class_path)
    writer = _sleeper(busy)
    try:
        second = driver_archive_options(OPTIONS)
        final = part.split(".jsa.")[0] + ".jsa"
        assert f"-XX:SharedArchiveFile={final}" in second and "-Xshare:auto" in second
        assert os.path.getsize(final) == size
        assert not os.path.exists(part) and not os.path.exists(broken) and os.path.exists(busy)
        assert not glob.glob(str(tmp_path / "*.classpath"))  # the orphan's too
        assert not glob.glob(str(tmp_path / "hs_err*"))
        mapped = subprocess.run([java, *OPTIONS.split(), *second.split(), "-Xshare:on", "-cp", class_path,
                                 "-version"], capture_output=True, timeout=120, check=False)
        assert mapped.returncode == 0, mapped.stderr[-2000:]
    finally:
        writer.kill()
        writer.wait()
