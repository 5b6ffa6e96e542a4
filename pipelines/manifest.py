"""The run manifest written beside every output: what ran, on what, with which software, how long, what it wrote.

A manifest is a JSON object; :func:`jobs.train.run` fills these parts with the helpers here:

* ``config`` — the resolved options (defaults < file < ``--set`` < flags), also saved as YAML beside the output;
* ``input_fingerprint`` — every input file with its size and content hash (:func:`input_fingerprint`), and one
  digest over them that does not depend on file names or order (it keys the resume work directory);
* ``versions`` — shardpiece, Spark, PySpark, Java, Numba, NumPy, PyArrow, Python (:func:`versions`);
* ``stages`` — per-stage seconds and counts (and whether a stage was resumed from the work directory);
* ``outputs`` — size and SHA-256 of every file the run wrote (:func:`file_checksums`).

Content hashes: local files (plain paths and ``file:`` URIs) are hashed with SHA-256 on the driver, at disk speed,
and the hashes are cached by ``(path, size, modification time)`` in ``hash_cache`` (a JSON file; the work directory
keeps one), so a rerun over an unchanged corpus re-reads nothing. Files on other filesystems (HDFS, S3, ...) use
the filesystem's own checksum when it has one (HDFS: MD5 of CRCs) and otherwise size and modification time, marked
``"hash": null`` so nobody mistakes them for content hashes.

Example::

    fingerprint = input_fingerprint(spark, ["corpus/*.txt"])
    fingerprint["digest"]    # -> "sha256:..." (the same for the same file contents, whatever their names)
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
from typing import Any, Sequence
from urllib.parse import urlparse

from tokenizer.errors import InputError

_CHUNK = 8 << 20


def local_path(uri: str) -> str | None:
    """The local filesystem path of a plain path or a ``file:`` URI, else ``None``.

    >>> local_path("file:/tmp/a.txt"), local_path("/tmp/a.txt"), local_path("hdfs://nn/a.txt")
    ('/tmp/a.txt', '/tmp/a.txt', None)
    """
    parsed = urlparse(uri)
    if parsed.scheme in ("", "file"):
        return parsed.path if parsed.scheme else uri
    return None


def _open_input(path: str):
    """Opens an input file for hashing (a seam the failure-mode tests replace to simulate unreadable files)."""
    return open(path, "rb")


def sha256_file(path: str) -> str:
    """Hex SHA-256 of a local file's bytes; an unreadable file is an :class:`InputError` naming it and the fix."""
    digest = hashlib.sha256()
    try:
        with _open_input(path) as handle:
            while True:
                block = handle.read(_CHUNK)
                if not block:
                    break
                digest.update(block)
    except OSError as exc:
        raise InputError(
            f"cannot read input file {path}: {exc.strerror or exc}; fix its permissions or remove it from --input"
        ) from None
    return digest.hexdigest()


def _load_cache(path: str | None) -> dict:
    if not path:
        return {}
    try:
        with open(path, encoding="utf-8") as handle:
            cache = json.load(handle)
        return cache if isinstance(cache, dict) else {}
    except (OSError, ValueError):
        return {}


def input_fingerprint(spark, inputs: Sequence[str], hash_cache: str | None = None) -> dict[str, Any]:
    """List ``inputs`` (paths, globs, directories, any Hadoop filesystem) and fingerprint every file.

    Returns ``{"files": [{"path", "size", "hash"}...], "total_bytes", "digest"}``; ``hash`` is ``"sha256:HEX"``
    for local files, the filesystem's checksum (``"ALGORITHM:HEX"``) or ``None`` elsewhere (then ``mtime_ms``
    is given). ``digest`` is SHA-256 over the sorted ``(hash or path+size+mtime)`` entries: renaming or reordering
    files leaves it unchanged, changing a byte changes it. Zero-byte files are listed and contribute nothing.
    """
    from pipelines.read.readers import list_input_files

    listed = list_input_files(spark, inputs)  # ``spark`` may be None when every input is local
    cache = _load_cache(hash_cache)
    entries = []
    for uri in listed.files + listed.empty_files:
        local = local_path(uri)
        if local is not None:
            stat = os.stat(local)
            cache_key = f"{local}\t{stat.st_size}\t{stat.st_mtime_ns}"
            if cache_key not in cache:
                cache[cache_key] = "sha256:" + sha256_file(local)
            entries.append({"path": uri, "size": stat.st_size, "hash": cache[cache_key]})
            continue
        path = spark._jvm.org.apache.hadoop.fs.Path(uri)
        fs = path.getFileSystem(spark._jsc.hadoopConfiguration())
        status = fs.getFileStatus(path)
        checksum = fs.getFileChecksum(path)
        entry = {"path": uri, "size": int(status.getLen()), "hash": None, "mtime_ms": int(status.getModificationTime())}
        if checksum is not None:
            entry["hash"] = f"{checksum.getAlgorithmName()}:{bytes(checksum.getBytes()).hex()}"
        entries.append(entry)
    if hash_cache:
        from tokenizer.files import write_atomic

        live = {local_path(e["path"]) for e in entries}
        kept = {k: v for k, v in cache.items() if k.split("\t", 1)[0] in live}
        write_atomic(hash_cache, json.dumps(kept, sort_keys=True).encode(), what="input hash cache")
    return fingerprint_of(entries, listed.total_bytes)


def fingerprint_of(entries: list[dict[str, Any]], total_bytes: int) -> dict[str, Any]:
    """The fingerprint of listed files' entries (``{"path", "size", "hash"}``, ``"mtime_ms"`` where ``hash`` is
    ``None``): see :func:`input_fingerprint`. ``fingerprint_of([], 0)["digest"]`` is the SHA-256 of nothing."""
    identities = sorted(e["hash"] if e["hash"] else f"{e['path']}:{e['size']}:{e.get('mtime_ms')}"
                        for e in entries if e["size"] > 0)
    digest = hashlib.sha256("\n".join(identities).encode()).hexdigest()
    return {"files": sorted(entries, key=lambda e: e["path"]), "total_bytes": total_bytes,
            "digest": "sha256:" + digest}


def versions(spark=None) -> dict[str, str | None]:
    """Versions of everything that can change a result or its speed; ``spark``/``java`` come from the running
    session when one is given."""
    import numba
    import numpy
    import pyarrow

    from tokenizer import __version__

    out: dict[str, str | None] = {"shardpiece": __version__, "python": platform.python_version(),
                                  "numba": numba.__version__, "numpy": numpy.__version__,
                                  "pyarrow": pyarrow.__version__}
    try:  # the installed distribution's version, without importing it (an in-process run never loads pyspark)
        from importlib.metadata import PackageNotFoundError, version

        out["pyspark"] = version("pyspark")
    except PackageNotFoundError:
        out["pyspark"] = None
    if spark is not None:
        out["spark"] = spark.version
        try:
            out["java"] = str(spark._jvm.java.lang.System.getProperty("java.version"))
        except Exception:  # a Spark Connect session has no JVM gateway
            out["java"] = None
    out["platform"] = f"{platform.system()} {platform.machine()}; {sys.implementation.name}"
    return out


def file_checksums(paths: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``{absolute path: {"bytes": N, "sha256": HEX}}`` of files the run wrote."""
    out = {}
    for path in paths:
        out[os.path.abspath(path)] = {"bytes": os.path.getsize(path), "sha256": sha256_file(path)}
    return out


def write_manifest(path: str, manifest: dict[str, Any]) -> None:
    """Write the manifest as indented JSON, atomically (an ``OSError`` becomes an ``OutputWriteError``)."""
    from tokenizer.files import write_atomic

    write_atomic(path, (json.dumps(manifest, indent=2, ensure_ascii=False, default=str) + "\n").encode(),
                      what="run manifest")
