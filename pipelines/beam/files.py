"""Inputs on any filesystem Apache Beam's ``FileSystems`` reads (``gs://``, ``s3://``, ``hdfs://``, or a scheme a
Beam plugin registers), for ``--engine beam``: listed on the driver with ``FileSystems.match`` and opened in the
tasks with ``FileSystems.open`` (the raw bytes: the readers decompress ``.gz`` and ``.zst`` themselves and read
Parquet with pyarrow on the opened file). Local paths and ``file:`` URIs are not handled here: they keep the
readers' local listing and pyarrow's local filesystem.

Listing a spec with a scheme, as the local listing does a path (:func:`pipelines.read.readers.list_local_files`):
a glob (``*``, ``?``, ``[``; ``**`` crosses ``/``) gives the files it matches; otherwise a directory (every file
below it, except those with a path component starting with ``_`` or ``.``) or else the one file of that name;
nothing is the local listing's "matches no file" error.

Example::

    list_remote(["gs://bucket/corpus/"])      # -> {"gs://bucket/corpus/a.txt": (1024, 1767139200000), ...}
    plan_text([("gs://bucket/corpus/a.txt", 1024)], None, remote_files=BeamFiles())   # units a Beam task opens
"""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Sequence

from tokenizer.errors import ConfigError, InputError

_GLOB = re.compile(r"[*?\[]")


class BeamFiles:
    """Beam's ``FileSystems`` behind the three calls the readers make on a pyarrow filesystem
    (:mod:`pipelines.read.arrow_read`): ``get_file_info(path).size``, ``open_input_file(path)`` (seekable) and
    ``open_input_stream(path)``, each file opened without Beam's decompression. Holds no state: it pickles into
    the tasks, whose processes find the filesystems as the driver does
    (:func:`pipelines.beam.exchange.import_plugins`)."""

    def get_file_info(self, path: str):
        from apache_beam.io.filesystems import FileSystems

        return SimpleNamespace(size=FileSystems.get_filesystem(path).size(path))

    def open_input_file(self, path: str):
        import pyarrow as pa
        from apache_beam.io.filesystem import CompressionTypes
        from apache_beam.io.filesystems import FileSystems

        return pa.PythonFile(FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED), mode="r")

    def open_input_stream(self, path: str, compression=None):
        return self.open_input_file(path)

    def __eq__(self, other) -> bool:
        return isinstance(other, BeamFiles)

    def __hash__(self) -> int:
        return hash(BeamFiles)


def _match(pattern: str) -> list:
    """``FileSystems.match`` of one pattern: its files' metadata; a scheme no Beam filesystem takes is a
    :class:`ConfigError`, a listing that fails (a missing bucket, no permission) an :class:`InputError`."""
    from apache_beam.io.filesystem import BeamIOError
    from apache_beam.io.filesystems import FileSystems

    try:
        return FileSystems.match([pattern])[0].metadata_list
    except ValueError as exc:
        scheme = pattern.split("://", 1)[0]
        raise ConfigError(f"--input {pattern}: Apache Beam has no filesystem for {scheme}:// ({exc}); install the one "
                          "it needs (pip install 'apache-beam[gcp]' for gs://, 'apache-beam[aws]' for s3://) or name "
                          "the module that registers it with --beam-option beam_plugins=MODULE") from None
    except BeamIOError as exc:
        causes = "; ".join(f"{type(e).__name__}: {e}" for e in (exc.exception_details or {}).values()) or str(exc)
        raise InputError(f"cannot list input {pattern} ({causes}): check the path and the credentials") from None


def list_remote(specs: Sequence[str]) -> dict[str, tuple[int, int]]:
    """``{path: (bytes, modification ms)}`` of the files ``specs`` (URIs with a scheme) name (see the module
    docstring); an input matching nothing raises the local listing's :class:`InputError`."""
    from pipelines.read.readers import _no_match

    listed: dict[str, tuple[int, int]] = {}
    for spec in specs:
        found = {}
        if _GLOB.search(spec):
            found = {m.path: m for m in _match(spec)}
        else:
            directory = spec.rstrip("/")
            for meta in _match(directory + "/**"):
                relative = meta.path[len(directory):]
                if not any(part.startswith(("_", ".")) for part in relative.split("/") if part):
                    found[meta.path] = meta
            if not found:
                found = {m.path: m for m in _match(spec) if m.path == spec}
        if not found:
            raise _no_match(spec)
        listed.update((path, (int(m.size_in_bytes), int(round(m.last_updated_in_seconds * 1000))))
                      for path, m in found.items())
    return listed


def remote_fingerprint_entries(listed: dict[str, tuple[int, int]]) -> list[dict]:
    """Fingerprint entries (:func:`pipelines.manifest.input_fingerprint`'s) of listed remote files: size and
    modification time (no content hash: that would read every file on the driver)."""
    return [{"path": path, "size": size, "hash": None, "mtime_ms": mtime}
            for path, (size, mtime) in sorted(listed.items())]
