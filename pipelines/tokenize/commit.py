"""The output directory of a tokenize job: run modes, the commit protocol and the manifest. No Spark here.

Layout of an output directory ``OUT``::

    OUT/_temporary/RUN/part-00003-attempt-17.*   written by tasks while a job runs; removed by its commit
    OUT/RUN-part-00003.*                         committed shards (RUN = run-00000, run-00001, ... per job run)
    OUT/_manifest.parquet                        zero rows, the shards' schema; its key-value metadata holds the
                                                 manifest (every committed run: settings, input files, shards,
                                                 counts), the last run's summary and whether the output is complete

Every file of a complete Parquet output is a Parquet file with the shards' schema, so readers that take a directory
(pyarrow.dataset, Spark, duckdb, polars, Hugging Face datasets) read ``OUT/`` by its path and see every document
once: the manifest file adds no rows, and pyarrow and Spark skip it by its ``_`` prefix anyway. (A JSON manifest
or an empty ``_SUCCESS`` file beside the shards makes polars and datasets refuse the directory.) Read the
manifest with :func:`read_manifest` and the summary with :func:`read_summary`; ``shardpiece inspect OUT`` prints
both.

Commit protocol (what makes a rerun safe):

1. Each task writes its shard under ``_temporary/RUN/part-P-attempt-A`` (A is Spark's unique task attempt id), so
   two attempts of one partition (a retry, a speculative copy) never share a file.
2. The driver receives one result per partition from the attempts Spark accepted (``collect`` returns the winners
   only). It marks the manifest incomplete, renames each winner's files to ``RUN-part-P.*``, checks their sizes
   against what the task reported, removes ``_temporary/RUN`` (the losers' leftovers) and finally writes the
   manifest with the new run, the summary and ``complete: true`` (one atomic replace).
3. A job that dies leaves only ``_temporary`` files, or renamed shards the manifest does not list, and an
   incomplete manifest. The next run (modes ``overwrite``, ``skip``, ``incremental``) deletes both before it
   starts, so a complete output is exactly the shards the manifest lists.

Modes: ``error`` (default) refuses a non-empty directory; ``overwrite`` replaces an earlier shardpiece output;
``skip`` returns at once when the output is complete and otherwise completes it; ``incremental`` tokenizes only
input files the manifest does not list, as a new run appended to the manifest. Outputs of earlier versions
(``_manifest.json``, ``_summary.json``, ``_SUCCESS``) are read, and replaced by ``_manifest.parquet`` at their next
commit.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from dataclasses import asdict, dataclass
from typing import Any, Iterable

import pyarrow as pa
import pyarrow.parquet as pq

from tokenizer.errors import ConfigError, InputError
from tokenizer.files import write_atomic
from pipelines.tokenize.writers import SHARD_SUFFIXES, shard_files

MODES = ("error", "overwrite", "skip", "incremental")
MANIFEST = "_manifest.parquet"
TEMPORARY = "_temporary"
LEGACY_FILES = ("_manifest.json", "_summary.json", "_SUCCESS")  # the JSON layout of earlier versions
MANIFEST_VERSION = 1
_KEYS = {"manifest": b"shardpiece.manifest", "summary": b"shardpiece.summary", "complete": b"shardpiece.complete"}
_SHARD_NAME = re.compile(r"^run-\d{5}-part-\d{5}\.")


@dataclass(frozen=True)
class InputFile:
    """One input file as seen when a run read it: its path, size in bytes and modification time (ns)."""

    path: str
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, path: str) -> "InputFile":
        stat = os.stat(path)
        return cls(path, stat.st_size, stat.st_mtime_ns)


@dataclass(frozen=True)
class Replaced:
    """What a run tokenizes again (``--on-table-change retokenize``): the ``stems`` of the committed shards it
    replaces and the input ``paths`` whose rows they held (dropped from the runs that recorded them)."""

    stems: frozenset
    inputs: frozenset


@dataclass
class TaskResult:
    """What one task attempt reports: its partition, attempt id, shard stem and counts (see pipelines.tokenize)."""

    partition: int
    attempt: int
    stem: str
    documents: int
    tokens: int
    bytes: int
    file_sizes: dict[str, int]
    stats: dict[str, Any]


class OutputDirectory:
    """The output directory ``path`` of a tokenize job (local filesystem)."""

    def __init__(self, path: str | os.PathLike):
        self.path = os.path.abspath(os.fspath(path))

    # ------------------------------------------------------------------ state
    def _join(self, *names: str) -> str:
        return os.path.join(self.path, *names)

    def entries(self) -> list[str]:
        return sorted(os.listdir(self.path)) if os.path.isdir(self.path) else []

    def _metadata(self) -> dict[str, Any] | None:
        """``{"manifest", "summary", "complete"}`` from ``_manifest.parquet`` (or an earlier version's JSON files),
        or None when there is none; raises InputError when it is unreadable."""
        path = self._join(MANIFEST)
        if os.path.exists(path):
            try:
                values = pq.read_schema(path).metadata or {}
                found = {name: json.loads(values[key]) for name, key in _KEYS.items()}
            except (OSError, ValueError, KeyError, pa.ArrowException) as exc:
                raise InputError(f"{path} is unreadable ({exc}); rerun with --mode overwrite to rebuild the output") \
                    from None
        elif os.path.exists(self._join(LEGACY_FILES[0])):
            path = self._join(LEGACY_FILES[0])
            try:
                with open(path, encoding="utf-8") as handle:
                    found = {"manifest": json.load(handle), "summary": None,
                             "complete": os.path.exists(self._join(LEGACY_FILES[2]))}
            except (OSError, ValueError) as exc:
                raise InputError(f"{path} is unreadable ({exc}); rerun with --mode overwrite to rebuild the output") \
                    from None
        else:
            return None
        if found["manifest"].get("manifest_version", 0) > MANIFEST_VERSION:
            raise InputError(f"{path} was written by a newer shardpiece: upgrade shardpiece")
        return found

    def manifest(self) -> dict | None:
        """The committed manifest, or None when there is none; raises InputError when it is unreadable."""
        found = self._metadata()
        return None if found is None else found["manifest"]

    def summary(self) -> dict | None:
        """The last run's summary, or None."""
        found = self._metadata()
        return None if found is None else found["summary"]

    def is_complete(self) -> bool:
        found = self._metadata()
        return found is not None and bool(found["complete"])

    def _write_metadata(self, manifest: dict, summary: dict | None, complete: bool, schema: pa.Schema) -> None:
        """Replace ``_manifest.parquet`` (zero rows of ``schema``) atomically, then drop an earlier version's files."""
        values = {_KEYS["manifest"]: _json_bytes(manifest), _KEYS["summary"]: _json_bytes(summary),
                  _KEYS["complete"]: _json_bytes(complete)}
        sink = pa.BufferOutputStream()
        # no row group at all (not one of zero rows): Hugging Face datasets reads a file by its first row group
        pq.ParquetWriter(sink, schema.with_metadata({**(schema.metadata or {}), **values})).close()
        write_atomic(self._join(MANIFEST), sink.getvalue().to_pybytes())
        for name in LEGACY_FILES:
            if os.path.exists(self._join(name)):
                os.unlink(self._join(name))

    def _shard_schema(self, stems: list[str]) -> pa.Schema:
        """The schema of the first Parquet shard among ``stems`` (absolute), else of the present manifest file,
        else no columns: the schema the manifest file repeats so that directory readers see one schema."""
        for stem in stems:
            if os.path.exists(stem + ".parquet"):
                return pq.read_schema(stem + ".parquet").remove_metadata()
        if os.path.exists(self._join(MANIFEST)):
            return pq.read_schema(self._join(MANIFEST)).remove_metadata()
        return pa.schema([])

    def recorded_inputs(self) -> dict[str, InputFile]:
        """Input files of every committed run, by path."""
        manifest = self.manifest() or {"runs": []}
        return {f["path"]: InputFile(**f) for run in manifest["runs"] for f in run["inputs"]}

    def committed_stems(self, manifest: dict | None = None) -> list[str]:
        """Absolute stems of the committed shards of ``manifest`` (default: the directory's), in dataset order (run,
        then partition)."""
        manifest = (manifest if manifest is not None else self.manifest()) or {"runs": []}
        return [self._join(shard["stem"]) for run in manifest["runs"] for shard in run["shards"]]

    # ------------------------------------------------------------------ modes
    def prepare(self, mode: str, settings: dict[str, Any]) -> str:
        """Make the directory ready for a run in ``mode``; returns ``"complete"`` (nothing to do), ``"fresh"``
        (no committed runs) or ``"continue"`` (committed runs kept; only new inputs are to be tokenized)."""
        if mode not in MODES:
            raise ConfigError(f"unknown mode {mode!r}: use one of {', '.join(MODES)}")
        entries = self.entries()
        if not entries:
            os.makedirs(self.path, exist_ok=True)
            return "fresh"
        if mode == "error":
            state = "a complete tokenize output" if self.is_complete() else "files"
            raise ConfigError(
                f"output directory {self.path} is not empty (it holds {state}): pass --mode overwrite to replace "
                "it, --mode skip to keep it when it is complete, or --mode incremental to add only new input files"
            )
        foreign = [name for name in entries if not self._is_ours(name)]
        if foreign:
            raise ConfigError(
                f"output directory {self.path} holds files a tokenize job did not write ({', '.join(foreign[:5])}"
                f"{', ...' if len(foreign) > 5 else ''}): choose an empty or earlier tokenize output directory"
            )
        if mode == "overwrite":
            for name in entries:
                self._remove(name)
            return "fresh"
        if mode == "skip" and self.is_complete():
            return "complete"
        manifest = self.manifest()
        if manifest is not None and manifest["settings"] != settings:
            changed = sorted(k for k in set(settings) | set(manifest["settings"])
                             if settings.get(k) != manifest["settings"].get(k))
            raise ConfigError(
                f"output directory {self.path} was written with other settings ({', '.join(changed)} differ): "
                "use the same model and options, or --mode overwrite to rebuild it"
            )
        self.remove_uncommitted()
        return "fresh" if manifest is None else "continue"

    def _is_ours(self, name: str) -> bool:
        return name in (MANIFEST, TEMPORARY, *LEGACY_FILES) or bool(_SHARD_NAME.match(name)) \
            or name.startswith(".tmp-")

    def _remove(self, name: str) -> None:
        path = self._join(name)
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.unlink(path)

    def remove_uncommitted(self) -> list[str]:
        """Delete ``_temporary`` and shard files the manifest does not list (leftovers of a job that died)."""
        committed = {os.path.basename(f) for stem in self.committed_stems() for f in self._all_files(stem)}
        removed = []
        for name in self.entries():
            if name == TEMPORARY or name.startswith(".tmp-") or (_SHARD_NAME.match(name) and name not in committed):
                self._remove(name)
                removed.append(name)
        return removed

    @staticmethod
    def _all_files(stem: str) -> list[str]:
        return [stem + suffix for suffixes in SHARD_SUFFIXES.values() for suffix in suffixes]

    # ------------------------------------------------------------------ runs
    def next_run_id(self) -> str:
        manifest = self.manifest() or {"runs": []}
        return f"run-{len(manifest['runs']):05d}"

    def task_stem(self, run_id: str, partition: int, attempt: int) -> str:
        """Where task attempt ``attempt`` of ``partition`` writes (directories are created)."""
        directory = self._join(TEMPORARY, run_id)
        os.makedirs(directory, exist_ok=True)
        return os.path.join(directory, f"part-{partition:05d}-attempt-{attempt}")

    def final_stem(self, run_id: str, partition: int) -> str:
        return self._join(f"{run_id}-part-{partition:05d}")

    def commit(
        self, run_id: str, output_format: str, settings: dict[str, Any], inputs: Iterable[InputFile],
        results: Iterable[TaskResult], summary: dict[str, Any], table: dict[str, Any] | None = None,
        shard_inputs: dict[int, list[str]] | None = None, replaced: "Replaced | None" = None,
    ) -> dict:
        """Publish the winners' shards, then the manifest with the summary (see the module docstring). ``table``:
        the table version the run read (:meth:`pipelines.read.tables.TableSnapshot.describe`) and ``covers`` (a
        compaction's files -> the tokenized files whose rows they hold), kept with the run; ``shard_inputs``: the
        input paths whose rows each partition's shard holds, kept with the shard; ``replaced``: earlier shards and
        inputs this run tokenized again, dropped from the manifest in the same commit (their files deleted after).

        ``results`` must hold exactly one result per partition; raises InputError otherwise (nothing is renamed).
        """
        results = sorted(results, key=lambda r: r.partition)
        partitions = [r.partition for r in results]
        if len(set(partitions)) != len(partitions):
            raise InputError(f"two results for one partition in {partitions}: refusing to commit duplicates")
        for result in results:  # check every file before renaming any
            for source in shard_files(output_format, result.stem):
                expected = result.file_sizes[os.path.basename(source)]
                actual = os.path.getsize(source) if os.path.exists(source) else -1
                if actual != expected:
                    raise InputError(f"{source} is {actual} bytes but its task wrote {expected}: the file system "
                                     "lost data; rerun the job")
        found = self._metadata()
        manifest = found["manifest"] if found else {"manifest_version": MANIFEST_VERSION, "settings": settings,
                                                    "runs": []}
        schema = self._shard_schema(self.committed_stems(manifest) + [r.stem for r in results])
        if found:
            self._write_metadata(manifest, found["summary"], False, schema)
        shards = []
        for result in results:
            final = self.final_stem(run_id, result.partition)
            for source, target in zip(shard_files(output_format, result.stem), shard_files(output_format, final)):
                os.replace(source, target)
            shards.append({
                "stem": os.path.basename(final), "partition": result.partition,
                "files": [os.path.basename(f) for f in shard_files(output_format, final)],
                "documents": result.documents, "tokens": result.tokens, "bytes": result.bytes,
            })
        dropped_files = []
        if replaced is not None:
            for run in manifest["runs"]:
                dropped_files += [self._join(f) for shard in run["shards"] if shard["stem"] in replaced.stems
                                  for f in shard["files"]]
                run["shards"] = [shard for shard in run["shards"] if shard["stem"] not in replaced.stems]
                run["inputs"] = [f for f in run["inputs"] if f["path"] not in replaced.inputs]
                run["documents"] = sum(shard["documents"] for shard in run["shards"])
                run["tokens"] = sum(shard["tokens"] for shard in run["shards"])
        if shard_inputs is not None:
            for shard in shards:
                shard["inputs"] = sorted(shard_inputs.get(shard["partition"], ()))
        manifest["output_format"] = output_format
        manifest["runs"].append({
            "run_id": run_id,
            "committed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "inputs": [asdict(f) for f in inputs],
            "shards": shards,
            "documents": sum(s["documents"] for s in shards),
            "tokens": sum(s["tokens"] for s in shards),
            **({"table": table} if table is not None else {}),
        })
        manifest["documents"] = sum(run["documents"] for run in manifest["runs"])
        manifest["tokens"] = sum(run["tokens"] for run in manifest["runs"])
        self.discard_run(run_id)
        self._write_metadata(manifest, summary, True, schema)
        for path in dropped_files:  # no longer listed: a reader of the directory no longer sees them
            if os.path.exists(path):
                os.unlink(path)
        return manifest

    def discard_run(self, run_id: str) -> None:
        """Remove a failed run's temporary files (best effort; the next run removes whatever is left)."""
        temporary = self._join(TEMPORARY)
        shutil.rmtree(os.path.join(temporary, run_id), ignore_errors=True)
        if os.path.isdir(temporary) and not os.listdir(temporary):
            os.rmdir(temporary)

    def mark_complete_without_run(self, summary: dict[str, Any]) -> None:
        """Nothing new to tokenize (incremental run with no new files): refresh the summary, mark complete."""
        manifest = self.manifest()
        self._write_metadata(manifest, summary, True, self._shard_schema(self.committed_stems(manifest)))


def read_manifest(path: str | os.PathLike) -> dict | None:
    """The manifest of the tokenize output directory ``path`` (None when it has none)."""
    return OutputDirectory(path).manifest()


def read_summary(path: str | os.PathLike) -> dict | None:
    """The last run's summary of the tokenize output directory ``path`` (None when it has none)."""
    return OutputDirectory(path).summary()


def _json_bytes(value: Any) -> bytes:
    return (json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")
