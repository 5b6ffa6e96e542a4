"""A test-only Apache Beam ``FileSystem`` for the scheme ``tempfs://``, backed by a local directory: what the Beam
engine's tests read as a "remote" filesystem without a network. ``tempfs://bucket/a.txt`` is the file
``$SHARDPIECE_TEMPFS_ROOT/bucket/a.txt``.

Beam finds a ``FileSystem`` among the imported subclasses of ``FileSystem``; a run names this module as a Beam
plugin (``--beam-option beam_plugins=tests.pipelines.beam_tempfs``), so the driver and every worker process import
it (:func:`pipelines.beam.files.import_plugins`). The root comes from the environment, which the direct runner's
worker processes inherit.

Example::

    os.environ[ROOT_ENV] = "/tmp/x"
    FileSystems.match(["tempfs://b/*.txt"])[0].metadata_list   # the files /tmp/x/b/*.txt, named tempfs://b/...
"""

from __future__ import annotations

import os
import posixpath

from apache_beam.io.filesystem import FileMetadata, FileSystem
from apache_beam.io.localfilesystem import LocalFileSystem

SCHEME = "tempfs"
ROOT_ENV = "SHARDPIECE_TEMPFS_ROOT"
PREFIX = SCHEME + "://"


def local(path: str) -> str:
    """The local file of ``tempfs://REST``: ``$SHARDPIECE_TEMPFS_ROOT/REST``."""
    assert path.startswith(PREFIX), path
    return os.path.join(os.environ[ROOT_ENV], path[len(PREFIX):])


def remote(path: str) -> str:
    """The ``tempfs://`` name of a local file under the root (the inverse of :func:`local`)."""
    return PREFIX + os.path.relpath(path, os.environ[ROOT_ENV])


class TempFileSystem(FileSystem):
    """Beam's local filesystem under ``tempfs://`` names (see the module docstring)."""

    def __init__(self, pipeline_options=None):
        super().__init__(pipeline_options)
        self.disk = LocalFileSystem(pipeline_options)

    @classmethod
    def scheme(cls):
        return SCHEME

    def join(self, basepath, *paths):
        return posixpath.join(basepath, *paths)

    def split(self, path):
        return posixpath.split(path.rstrip("/"))

    def has_dirs(self):
        return True

    def _url_dirname(self, url_or_path):
        return posixpath.dirname(url_or_path)

    def mkdirs(self, path):
        return self.disk.mkdirs(local(path))

    def _list(self, dir_or_prefix):
        for root, _, names in os.walk(local(dir_or_prefix)):
            for name in names:
                path = os.path.join(root, name)
                yield FileMetadata(remote(path), os.path.getsize(path), os.path.getmtime(path))

    def create(self, path, *args, **kwargs):
        return self.disk.create(local(path), *args, **kwargs)

    def open(self, path, *args, **kwargs):
        return self.disk.open(local(path), *args, **kwargs)

    def copy(self, source_file_names, destination_file_names):
        return self.disk.copy([local(p) for p in source_file_names], [local(p) for p in destination_file_names])

    def rename(self, source_file_names, destination_file_names):
        return self.disk.rename([local(p) for p in source_file_names], [local(p) for p in destination_file_names])

    def exists(self, path):
        return self.disk.exists(local(path))

    def size(self, path):
        return self.disk.size(local(path))

    def last_updated(self, path):
        return self.disk.last_updated(local(path))

    def checksum(self, path):
        return self.disk.checksum(local(path))

    def metadata(self, path):
        meta = self.disk.metadata(local(path))
        return FileMetadata(path, meta.size_in_bytes, meta.last_updated_in_seconds)

    def delete(self, paths):
        return self.disk.delete([local(p) for p in paths])
