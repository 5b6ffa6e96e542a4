"""Training on Apache Beam: the engine of :mod:`pipelines.train.engine` as one Beam pipeline per operation, on
any runner (the direct runner with 2 worker processes by default; Dataflow, Flink, Spark through the portable
runner: docs/beam.md).

    read      one task per input file (local, or on any filesystem Beam's ``FileSystems`` reads:
              :mod:`pipelines.beam.files`): the in-process reader (:mod:`pipelines.inprocess.read`: the
              documents, held-out split, read counts and bad-row errors Spark's readers give) -> the training
              documents as Arrow IPC parts of about :data:`PART_BYTES`, the held-out ones beside them, in the work
              directory (kept for the later pipelines and a resumed run)
    count     parts -> the algorithm's counter (:data:`pipelines.train.tables.Counter`) -> its table cut into hash
              buckets (:func:`pipelines.train.tables.by_bucket`) -> GroupByKey(bucket) -> each bucket reduced
              (:func:`pipelines.train.tables.reduce_table`: merged, expanded, cut by ``keep``) -> one file per
              bucket; this process applies the memory bound bucket by bucket and joins the tables
    map_*     one task per part (or set-aside bucket), results pickled to files
    share     a pickled file every task loads once (:class:`pipelines.beam.exchange.SharedFile`)

The fits stay in this process; unigram's E-steps run on its threads. Every task writes files named by its input,
so a retried bundle never doubles a result; an error a task raises for the input (a bad row, a missing column) is
carried back in its result file and raised here, with the same exit code and message as on the other engines.
The model bytes equal theirs (``tests/pipelines/test_beam_engine.py``).

Example::

    engine = BeamEngine({"input": ["corpus.txt"], "runner": None, ...}, "--engine beam")
    engine.read(direct=False, log=log)
    reduced = engine.count(counter, "bytes", limit=10_000_000)
"""

from __future__ import annotations

import json
import os
import time
from functools import partial
from typing import Any, Callable, Iterator

from pipelines.beam import exchange as X
from pipelines.train.engine import READ_COUNTS, empty_corpus_error
from pipelines.train.tables import (Counter, KeyGroups, Reduced, bounded_table, by_bucket, decode, empty, encode,
                                    joined, keys_at, kept_mask, last_kept, reduce_table, select, size)
from pipelines.train.workdir import JSON
from tokenizer.errors import ConfigError
from tokenizer.trainers import chunk_table as T
from tokenizer.trainers import table_bound as B

PART_BYTES = 16 << 20  # training text per documents part (a task of the later pipelines)
DEFAULT_BUCKETS = 16  # hash buckets of a count (--partitions changes it)


# ---------------------------------------------------------------------------------------------- tasks
def read_batches(path: str) -> Iterator:
    """The record batches (one ``text`` column) of a documents part."""
    import pyarrow as pa

    reader = pa.ipc.open_file(pa.BufferReader(X.read_file(path)))
    for i in range(reader.num_record_batches):
        yield reader.get_batch(i)


def _write_part(path: str, arrays: list) -> None:
    import pyarrow as pa

    from pipelines.read.readers import TEXT

    sink = pa.BufferOutputStream()
    schema = pa.schema([(TEXT, arrays[0].type if arrays else pa.binary())])
    with pa.ipc.new_file(sink, schema) as writer:
        for array in arrays:
            writer.write_batch(pa.RecordBatch.from_arrays([array.cast(schema.field(0).type)], [TEXT]))
    X.write_file(path, sink.getvalue().to_pybytes())


def list_inputs(specs: list[str]) -> tuple[list[tuple[str, int]], list[str]]:
    """``([(path, bytes) of the non-empty files], [the empty files])`` of the inputs, sorted by path: local ones as
    the in-process reader lists them (:func:`pipelines.inprocess.read.list_local_inputs`), those with a scheme
    through Beam's ``FileSystems`` (:func:`pipelines.beam.files.list_remote`); one matching nothing raises the
    local listing's error."""
    from pipelines.beam.files import list_remote
    from pipelines.inprocess.read import list_local_inputs
    from pipelines.read.arrow_read import has_scheme

    local = [spec for spec in specs if not has_scheme(spec)]
    listed = list_local_inputs(local) if local else ([], [])
    if listed is None:
        raise ConfigError(f"--input {' '.join(local)}: --engine beam lists local paths of plain characters (globs "
                          "of * and ? only); rename the files, or drop --engine beam (Spark lists any path)")
    files, empty = listed
    remote = list_remote([spec for spec in specs if has_scheme(spec)])
    if not remote:
        return files, empty
    files = sorted(files + [(path, size) for path, (size, _) in remote.items() if size > 0])
    return files, sorted(empty + [path for path, (size, _) in remote.items() if size == 0])


def read_input_file(settings: dict, directory: str, index: int, item: tuple[str, int]) -> dict:
    """One input file ``(path, bytes)`` read by the in-process reader (``settings``: ``input_format``,
    ``text_column``, ``holdout_fraction``, ``on_bad_row``, ``pretokenizer`` ...; the run's options that reading
    takes; a path with a scheme is opened through Beam's ``FileSystems``): its training documents written as parts
    ``part-FILE-K.arrow`` of about :data:`PART_BYTES`, its held-out ones as ``held-FILE.arrow``; returns
    ``{"stats": read counts, "parts": [paths], "held": path or None}``."""
    from pipelines.beam.files import BeamFiles
    from pipelines.inprocess.read import read_listed_corpus, read_local_corpus
    from pipelines.read.arrow_read import has_scheme
    from pipelines.read.shards import binary_buffers
    from pipelines.train.bad_rows import TrainBadRows

    path, size = item
    reading = (settings["input_format"], settings["text_column"], float(settings["holdout_fraction"]),
               TrainBadRows.of(settings))
    corpus = read_listed_corpus([item], [], *reading, remote_files=BeamFiles()) if has_scheme(path) else \
        read_local_corpus([path], *reading)
    parts, pending, pending_bytes = [], [], 0
    for array in corpus.training + [None]:
        if array is not None:
            _, offsets = binary_buffers(array)
            pending.append(array)
            pending_bytes += int(offsets[-1] - offsets[0])
        if pending and (array is None or pending_bytes >= PART_BYTES):
            parts.append(X.join(directory, f"part-{index:05d}-{len(parts):04d}.arrow"))
            _write_part(parts[-1], pending)
            pending, pending_bytes = [], 0
    held = None
    if corpus.held_out:
        import pyarrow as pa

        held = X.join(directory, f"held-{index:05d}.arrow")
        _write_part(held, [pa.array(corpus.held_out, pa.binary())])
    return {"stats": corpus.stats.to_dict(), "parts": parts, "held": held}


def count_part(counter: Counter, kind: str, buckets: int, threads: int, groups: KeyGroups | None, directory: str,
               element: tuple[int, str]) -> Iterator[tuple[int, tuple[int, bytes]]]:
    """The map side: a documents part counted, its statistics written to ``stats-PART.json``, its table yielded as
    ``(bucket, (part, encoded table))`` per hash bucket."""
    index, path = element
    table, stats = counter(read_batches(path), threads)
    X.write_file(X.join(directory, f"stats-{index:05d}.json"), json.dumps(
        {k: int(v) for k, v in stats.items()}, sort_keys=True).encode())
    for bucket, part in by_bucket(kind, table, buckets, groups):
        yield bucket, (index, encode(kind, part))


def reduce_bucket(kind: str, keep: Callable | None, set_aside: bool, groups: KeyGroups | None, directory: str,
                  element: tuple[int, Any]) -> None:
    """The reduce side: one bucket's tables (in part order) reduced, written as ``kept-BUCKET.bin``,
    ``aside-BUCKET.bin`` (what ``keep`` set aside) and ``bucket-BUCKET.json`` (distinct keys, count histogram)."""
    bucket, values = element
    tables = [decode(kind, blob) for _, blob in sorted(values)]
    kept, aside, distinct, histogram = reduce_table(kind, tables, keep, set_aside, groups)
    if size(kind, kept):
        X.write_file(X.join(directory, f"kept-{bucket:05d}.bin"), encode(kind, kept))
    if aside is not None and size(kind, aside):
        X.write_file(X.join(directory, f"aside-{bucket:05d}.bin"), encode(kind, aside))
    X.write_file(X.join(directory, f"bucket-{bucket:05d}.json"), json.dumps(
        {"distinct": int(distinct),
         "histogram": [[int(c), [int(n), int(b)]] for c, (n, b) in histogram.items()]}).encode())


def _aside_task(function: Callable, kind: str, threads: int, index: int, path: str) -> Any:
    return function(iter([decode(kind, X.read_file(path))]), threads)


def _documents_task(function: Callable, threads: int, index: int, path: str) -> Any:
    return function(read_batches(path), threads)


def bounded_buckets(kind: str, paths: list[str], histogram: dict, limit) -> tuple[tuple, dict]:
    """``(table, report)``: the reduced buckets' tables (files), the most frequent entries within ``limit``
    (entries, or ``(entries, key bytes)``), ties by key (the cut of :func:`pipelines.train.tables.bounded_table`,
    decided on the buckets' histograms and applied to one bucket at a time, so no more than the limit and one
    bucket are ever held here)."""
    decision = B.cut(histogram, limit)
    kept_at_cut = None
    if decision is not None:
        count, entries_room, bytes_room = decision
        smallest: list = []
        for path in paths:
            keys = keys_at(kind, decode(kind, X.read_file(path)), count)
            smallest = B.candidates(sorted(smallest + keys), entries_room, bytes_room)
        kept_at_cut = count, B.fitting(smallest, entries_room, bytes_room)
    tables = []
    for path in paths:
        table = decode(kind, X.read_file(path))
        tables.append(table if kept_at_cut is None else
                      select(kind, table, kept_mask(kind, table, count, last_kept(kept_at_cut[1]))))
    return joined(kind, tables) if tables else empty(kind), B.report(histogram, limit, kept_at_cut)


class BeamEngine:
    """Training's engine on Apache Beam pipelines (see the module docstring)."""

    name = "beam"

    def __init__(self, options: dict, reason: str, progress: Callable[[str], None] = lambda message: None):
        X.require_beam()
        self.options, self.reason, self.progress = options, reason, progress
        self.pairs = X.option_pairs(options)
        X.import_plugins(options)
        self.threads = max(1, int(options.get("threads") or 1))
        self.buckets = max(1, int(options.get("partitions") or DEFAULT_BUCKETS))
        self.root = self.documents = None
        self.stage, self.sequence, self.directories = "read", 0, []

    def fingerprint(self, inputs: list[str], hash_cache: str) -> dict:
        """Local files' as on the other engines (content hashes); files with a scheme by path, size and
        modification time (:func:`pipelines.beam.files.remote_fingerprint_entries`)."""
        from pipelines.beam.files import list_remote, remote_fingerprint_entries
        from pipelines.manifest import fingerprint_of, input_fingerprint
        from pipelines.read.arrow_read import has_scheme

        local = [spec for spec in inputs if not has_scheme(spec)]
        remote = [spec for spec in inputs if has_scheme(spec)]
        if not remote:
            return input_fingerprint(None, inputs, hash_cache=hash_cache)
        found = input_fingerprint(None, local, hash_cache=hash_cache) if local else {"files": [], "total_bytes": 0}
        listed = list_remote(remote)
        return fingerprint_of(found["files"] + remote_fingerprint_entries(listed),
                              found["total_bytes"] + sum(size for size, _ in listed.values()))

    def label(self, stage: str) -> None:
        """The stage the next pipelines belong to (their exchange directories and progress lines say it)."""
        self.stage = stage

    def _directory(self) -> str:
        self.sequence += 1
        path = X.make_directory(X.join(self.root, f"{self.sequence:03d}-{self.stage}"))
        self.directories.append(path)
        return path

    def _pipeline(self, what: str, build: Callable) -> None:
        """Run one pipeline: ``build(pipeline)`` adds its transforms (Beam's log to the run's log file)."""
        started = time.perf_counter()
        X.run_pipeline(self.options, build)
        self.progress(f"[beam] {self.stage}: {what} on {self.pairs['runner']} in {time.perf_counter() - started:.1f} s")

    def _tasks(self, what: str, items: list, function: Callable) -> list:
        """``function(index, item)`` of every item in one pipeline (:func:`pipelines.beam.exchange.run_tasks`)."""
        if not items:
            return []
        directory = self._directory()
        started = time.perf_counter()
        results = X.run_tasks(self.options, directory, items, function)
        self.progress(f"[beam] {self.stage}: {len(items)} {what} on {self.pairs['runner']} in "
                      f"{time.perf_counter() - started:.1f} s")
        return results

    # ------------------------------------------------------------------------------------------------ reading
    def read(self, direct: bool, log, table=None) -> tuple[dict, str, str | None]:
        """Read every input file in a pipeline into documents parts in the work directory (kept: a resumed run
        reads them again from there): ``(read counts, reader, input format)``. Tables and ``--where`` are refused
        before (:func:`jobs.train_options.check_engine`): ``table`` is always ``None`` here."""
        assert table is None, "--engine beam reads files, not tables (jobs.train_options.check_engine)"
        from pipelines.read.arrow_read import has_scheme
        from pipelines.read.readers import detect_format

        work = log.work
        temp = self.pairs.get("temp_location")
        self.root = X.make_directory(X.join(temp, f"shardpiece-{work.key}") if temp and "://" in temp
                                     else os.path.join(work.path, "beam"))
        complete = X.join(self.root, "documents", "complete.json")
        if not work.resume:
            X.remove([X.join(self.root, "documents")])
        files, empty_files = list_inputs(list(self.options["input"]))
        if not files:
            raise empty_corpus_error(self.options["input"])
        input_format = self.options.get("input_format") or detect_format(
            [path if has_scheme(path) else "file:" + path for path in [p for p, _ in files] + empty_files])

        def compute() -> dict:
            if X.exists(complete):
                self.documents = json.loads(X.read_file(complete))
                return self.documents["stats"]
            directory = X.make_directory(X.join(self.root, "documents"))
            settings = {**self.options, "input_format": input_format}
            results = self._tasks("files read", files, partial(read_input_file, settings, directory))
            stats = T.add_stats(*(result["stats"] for result in results))
            stats.update(files=len(files) + len(empty_files), empty_files=len(empty_files))
            self.documents = {"stats": stats, "parts": [p for r in results for p in r["parts"]],
                              "held": [r["held"] for r in results if r["held"]]}
            X.write_file(complete, json.dumps(self.documents).encode())
            return stats

        counts = log.run("read", compute, JSON, lambda value: {k: value.get(k, 0) for k in READ_COUNTS})
        if self.documents is None:  # the read stage resumed: its documents too, or read again
            compute()
        return counts, f"pyarrow in Beam tasks ({self.pairs['runner']})", input_format

    # ------------------------------------------------------------------------------------------------ counting
    def count(self, counter: Counter, kind: str, *, keep: Callable | None = None, groups: KeyGroups | None = None,
              limit: int | None = None, set_aside: bool = False, keep_documents: int = 0) -> Reduced:
        """See :mod:`pipelines.train.engine`; a set-aside part stays in its bucket files (``reduced.aside``: their
        paths) until :meth:`release`."""
        import apache_beam as beam

        parts = self.documents["parts"]
        if not parts:
            table, bound = bounded_table(kind, empty(kind), limit)
            reduced = Reduced(table, {"distinct_keys": 0}, bound, aside=[] if set_aside else None)
        else:
            directory = self._directory()
            self._pipeline(f"count of {len(parts)} parts in {self.buckets} buckets", lambda p: (
                p | "parts" >> beam.Create(list(enumerate(parts))) | "spread" >> beam.Reshuffle()
                | "count" >> beam.FlatMap(partial(count_part, counter, kind, self.buckets, self.threads, groups,
                                                  directory))
                | "shuffle" >> beam.GroupByKey()
                | "reduce" >> beam.Map(partial(reduce_bucket, kind, keep, set_aside, groups, directory))))
            stats = T.add_stats(*(json.loads(X.read_file(p)) for p in X.list_files(directory, "stats-*.json")))
            buckets = [json.loads(X.read_file(p)) for p in X.list_files(directory, "bucket-*.json")]
            histogram = B.add_histograms(*(b["histogram"] for b in buckets))
            stats["distinct_keys"] = sum(b["distinct"] for b in buckets)
            table, bound = bounded_buckets(kind, X.list_files(directory, "kept-*.bin"), histogram, limit)
            reduced = Reduced(table, stats, bound,
                              aside=X.list_files(directory, "aside-*.bin") if set_aside else None)
        if keep_documents:
            reduced.held_out, reduced.training = self.evaluation_sample(keep_documents)
        return reduced

    def release(self, reduced: Reduced) -> None:
        if reduced.aside:
            X.remove(reduced.aside)
        reduced.aside = None

    def map_aside(self, reduced: Reduced, kind: str, function: Callable[[Iterator, int], Any]) -> list:
        return self._tasks("set-aside buckets", list(reduced.aside or []),
                           partial(_aside_task, function, kind, self.threads))

    def map_documents(self, function: Callable[[Iterator, int], Any]) -> list:
        return self._tasks("parts", list(self.documents["parts"]), partial(_documents_task, function, self.threads))

    def share(self, value: Any) -> X.SharedFile:
        self.sequence += 1
        return X.SharedFile(X.join(self.root, f"shared-{self.sequence:03d}.pkl"), value)

    def estep_runner(self, table, estep: str):
        """Unigram's E-steps run on this process's threads: ``(None, "driver")``."""
        return None, "driver"

    def driver_threads(self) -> int:
        return max(1, int(self.options.get("threads") or os.cpu_count() or 1))

    def evaluation_sample(self, limit: int) -> tuple[list[bytes], list[bytes]]:
        """``(held-out, training)`` documents, at most ``limit`` each, in input order (the in-process engine's)."""
        if not self.documents:
            return [], []
        for name, kind in (("held", "held"), ("parts", "training")):
            texts: list[bytes] = []
            for path in self.documents[name]:
                for batch in read_batches(path):
                    texts.extend(batch.column(0).slice(0, limit - len(texts)).to_pylist())
                    if len(texts) >= limit:
                        break
                if len(texts) >= limit:
                    break
            if texts:
                return (texts, []) if kind == "held" else ([], texts)
        return [], []

    def describe(self) -> dict:
        import apache_beam

        from pipelines.manifest import versions

        return {"engine": self.name, "engine_reason": self.reason, "spark_version": None, "spark_master": "none",
                "default_parallelism": None, "threads": self.threads, "spark_log": None,
                "beam_runner": self.pairs["runner"], "beam_options": self.pairs,
                "versions": {**versions(None), "apache_beam": apache_beam.__version__}}

    def close(self) -> None:
        """Remove the count stages' exchange directories (the documents stay for a resumed run)."""
        X.remove(self.directories)
        self.directories = []
