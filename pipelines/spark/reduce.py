"""The one Spark reduce of every count table training makes (the Spark engine's ``count``,
:mod:`pipelines.spark.train_engine`): BytePiece's n-grams and pieces, unigram's and BPE's chunks.

    documents (text: binary)
      -> mapInArrow: the algorithm's counter over the partition (a monoid: shards counted on the task's
         threads, summed) -> one table + named side statistics ({"documents": 12, ...})
         -> rows (bucket int, blob binary): the table cut into hash buckets, a few large binary rows per
            partition (the JVM shuffles bytes, not one row per key; keys and counts as varints,
            :func:`pipelines.train.tables.encode`), plus one row (bucket -1) of statistics; with
            :class:`~pipelines.train.tables.KeyGroups` (BytePiece's n-grams) a key's bucket follows its group
      -> repartition(bucket) + mapInArrow: each bucket's tables reduced (:func:`pipelines.train.tables.reduce_table`:
         merged exactly, expanded, cut by ``keep``); what ``keep`` drops either discarded or set aside
         (:data:`SET_ASIDE_BUCKET` rows that stay in Spark, never collected: BytePiece's rare pieces, re-segmented
         on the executors)
         -> rows (bucket, blob) again
      -> the driver's memory bound (:func:`bounded_collect`, :mod:`tokenizer.trainers.table_bound`): the reduced
         buckets are cached (memory, spilling to disk), the reduce tasks' count histograms decide a cut that keeps
         the ``limit`` most frequent entries (ties by key), the buckets are filtered on the executors: at most
         ``limit`` entries are ever collected
      -> on the driver: the buckets' tables (disjoint) merged, the statistics summed

The tables, their merge and encoding are engine-neutral (:mod:`pipelines.train.tables`); sums are exact and the
driver sorts, so the result never depends on the partitioning, and equals the in-process engine's.

Example::

    reduced = reduce_counts(documents, counter, "bytes", limit=10_000_000)   # counter: (batches, threads) ->
    reduced.table, reduced.stats, reduced.bound                               #   (table, stats)
"""

from __future__ import annotations

import json
from typing import Callable, Iterator

import numpy as np

from pipelines.train.tables import (Counter, KeyGroups, Reduced, by_bucket, chunk_table_of, decode, encode,
                                    histogram, joined, keys_at, kept_mask, last_kept, reduce_table, select, size,
                                    slice_rows)
from tokenizer.memory import release_freed_memory
from tokenizer.packed import pack
from tokenizer.trainers import chunk_table as T
from tokenizer.trainers import table_bound as B

SCHEMA = "bucket int, blob binary"
STATS_BUCKET = -1
HELD_OUT_BUCKET, TRAINING_BUCKET = -2, -3  # documents a direct count keeps for the evaluation sample
HISTOGRAM_BUCKET = -4  # a reduce task's {count: (entries, key bytes)} of what it kept (the bound's input)
SET_ASIDE_BUCKET = -5  # entries a reduce task's ``keep`` set aside: left in Spark, never collected
#: Spark options every training session needs for the bound's persisted reduce: adaptive execution may coalesce
#: the reduce partitions of a cached plan too (Spark's default keeps all ``spark.sql.shuffle.partitions`` of it,
#: 200 small Python tasks per pass on a local master)
CACHED_PLAN_OPTIONS = {"spark.sql.optimizer.canChangeCachedPlanOutputPartitioning": "true"}
#: a table is cut into rows of about this many bytes: a Spark task copies a whole row into its (JVM) buffers, and a
#: local master's small driver JVM runs every task
MAX_ROW_BYTES = 8 << 20


# ---------------------------------------------------------------------------------------------- rows
def _rows(kind: str, table: tuple, bucket: int, row_bytes: int | None = None) -> Iterator[tuple[int, bytes]]:
    """``(bucket, blob)`` rows of a table, cut into pieces of at most ``row_bytes`` (default
    :data:`MAX_ROW_BYTES`) of keys and counts, at least one entry each. Example: an int64 table of 3 entries (16
    bytes each), row_bytes 40 -> rows of 2 and 1 entries."""
    n = size(kind, table)
    if n == 0:
        return
    limit = row_bytes or MAX_ROW_BYTES
    if kind == "int64":
        ends = 16 * np.arange(1, n + 1, dtype=np.int64)  # cumulative bytes after each entry
    else:
        offsets = table[1]
        ends = offsets[1:] - offsets[0] + 16 * np.arange(1, n + 1, dtype=np.int64)
    start = 0
    while start < n:
        base = int(ends[start - 1]) if start else 0
        stop = max(start + 1, int(np.searchsorted(ends, base + limit, side="right")))
        yield bucket, encode(kind, table if (start, stop) == (0, n) else slice_rows(kind, table, start, stop))
        start = stop


def _batch(rows: list[tuple[int, bytes]]):
    import pyarrow as pa

    return pa.RecordBatch.from_arrays([pa.array([b for b, _ in rows], pa.int32()),
                                       pa.array([blob for _, blob in rows], pa.binary())], names=["bucket", "blob"])


def _stats_row(stats: dict) -> tuple[int, bytes]:
    return STATS_BUCKET, json.dumps({k: int(v) for k, v in stats.items()}, sort_keys=True).encode()


def documents_row(bucket: int, documents: list[bytes], order: int) -> tuple[int, bytes]:
    """A row carrying documents (:data:`HELD_OUT_BUCKET` or :data:`TRAINING_BUCKET`) through the reduce; ``order``
    (the task's index) puts them back in input order on the driver."""
    data, offsets = pack(documents)
    return bucket, encode("bytes", (data, offsets, np.full(len(documents), order, np.int64)))


def _tables(kind: str, batches: Iterator) -> Iterator[tuple[int, tuple | None, bytes]]:
    """``(bucket, table or None, blob)`` of every row of :data:`SCHEMA` batches: a table row's arrays are read-only
    views of the batch's buffer (no copy of the largest thing a collect holds) and its blob ``b""``; other rows
    keep their blob."""
    for batch in batches:
        blobs = batch.column(1)
        for i, bucket in enumerate(batch.column(0).to_pylist()):
            if bucket >= 0:
                buffer = blobs[i].as_buffer()
                yield bucket, (decode(kind, memoryview(buffer) if buffer is not None else b"")), b""
            else:
                yield bucket, None, blobs[i].as_py()


def _read_rows(kind: str, batches, tables: list, stats: list, documents: dict | None = None) -> None:
    """Append the tables, the statistics and the document rows (by bucket) of :data:`SCHEMA` batches."""
    for bucket, table, blob in _tables(kind, batches):
        if table is not None:
            tables.append(table)
        elif bucket == STATS_BUCKET:
            stats.append(json.loads(blob))
        elif bucket in (HELD_OUT_BUCKET, TRAINING_BUCKET) and documents is not None:
            documents.setdefault(bucket, []).append(decode("bytes", blob))


def _in_order(parts: list[tuple]) -> list[bytes]:
    """The documents of :func:`documents_row` tables, by task order, each task's in its own order."""
    out: list[bytes] = []
    for data, offsets, order in sorted(parts, key=lambda part: int(part[2][0]) if len(part[2]) else -1):
        blob = data.tobytes()
        out.extend(blob[a:b] for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist()))
    return out


# ---------------------------------------------------------------------------------------------- the Spark steps
def counted_rows(kind: str, table: tuple, stats: dict, buckets: int, groups: KeyGroups | None = None
                 ) -> Iterator[tuple[int, bytes]]:
    """The map side's ``(bucket, blob)`` rows of a counted table: one per hash bucket that has keys, then the
    statistics."""
    for bucket, part in by_bucket(kind, table, buckets, groups):
        yield from _rows(kind, part, bucket)
    yield _stats_row(stats)


def count_partition(counter: Counter, kind: str, buckets: int, threads: int, groups: KeyGroups | None = None
                    ) -> Callable:
    """The map side (``mapInArrow``): the partition's table cut into ``buckets`` hash buckets, and its statistics."""

    def run(batches: Iterator) -> Iterator:
        table, stats = counter(batches, threads)
        for row in counted_rows(kind, table, stats, buckets, groups):
            yield _batch([row])

    return run


def reduce_bucket(kind: str, tables: list, keep: Callable[[tuple], np.ndarray] | None = None,
                  set_aside: bool = False, groups: KeyGroups | None = None) -> tuple[list, list, int, dict]:
    """One bucket's tables reduced (:func:`pipelines.train.tables.reduce_table`) as rows: ``(kept rows, set-aside
    rows, distinct keys before keep, count histogram of the kept entries)``; ``tables`` is emptied. Buckets hold
    disjoint keys, so a reduce task's buckets can be reduced on their own, on its threads."""
    kept, aside, distinct, histogram = reduce_table(kind, tables, keep, set_aside, groups)
    aside_rows = [(SET_ASIDE_BUCKET, blob) for _, blob in _rows(kind, aside, 0)] if aside is not None else []
    return list(_rows(kind, kept, 0)), aside_rows, distinct, histogram


def reduce_partition(kind: str, keep: Callable[[tuple], np.ndarray] | None = None,
                     set_aside: bool = False, groups: KeyGroups | None = None, threads: int = 1) -> Callable:
    """The reduce side (``mapInArrow`` after the shuffle): the tables of each bucket that meets here merged (and,
    with ``groups``, expanded to their final counts), cut down to the entries ``keep`` (a bool mask of a table)
    marks, the others discarded or, with ``set_aside``, emitted as :data:`SET_ASIDE_BUCKET` rows
    (:func:`reduce_bucket`, ``threads`` buckets at once); the statistics summed, plus ``distinct_keys`` (before
    ``keep``); the count histogram of the kept entries (a :data:`HISTOGRAM_BUCKET` row); document rows passed
    through."""
    from tokenizer.ordered_threads import map_in_order

    def run(batches: Iterator) -> Iterator:
        by_bucket: dict[int, list] = {}
        stats: list = []
        documents: dict = {}
        for bucket, table, blob in _tables(kind, batches):
            if table is not None:
                by_bucket.setdefault(bucket, []).append(table)
            elif bucket == STATS_BUCKET:
                stats.append(json.loads(blob))
            elif bucket in (HELD_OUT_BUCKET, TRAINING_BUCKET):
                documents.setdefault(bucket, []).append(decode("bytes", blob))
        distinct, histograms = 0, []
        buckets = [by_bucket.pop(bucket) for bucket in sorted(by_bucket)]
        for kept, aside, bucket_distinct, bucket_histogram in map_in_order(
                lambda tables: reduce_bucket(kind, tables, keep, set_aside, groups), iter(buckets), threads):
            for row in aside + kept:
                yield _batch([row])
            distinct += bucket_distinct
            histograms.append(bucket_histogram)
        stats.append({"distinct_keys": distinct})
        yield _batch([_stats_row(T.add_stats(*stats))])
        yield _batch([(HISTOGRAM_BUCKET, json.dumps(list(B.add_histograms(*histograms).items())).encode())])
        for bucket, parts in documents.items():  # passed through
            for part in parts:
                yield _batch([(bucket, encode("bytes", part))])

    return run


def shuffle_buckets(spark) -> int:
    """How many buckets tables are cut into: ``spark.sql.shuffle.partitions`` (with adaptive execution on, Spark
    then merges small reduce partitions, so a small corpus still runs in a few tasks)."""
    return max(1, int(spark.conf.get("spark.sql.shuffle.partitions")))


def merged_frame(counted, kind: str, keep: Callable | None = None, set_aside: bool = False,
                 groups: KeyGroups | None = None, threads: int = 1):
    """The shuffle and the reduce side over counted rows of :data:`SCHEMA` (:func:`count_partition`'s, or a
    direct count's); ``threads`` buckets reduced at once per task."""
    from pyspark.sql import functions as F

    return counted.repartition(F.col("bucket")).mapInArrow(
        reduce_partition(kind, keep, set_aside, groups, threads), SCHEMA)


def reduced_frame(documents, counter: Counter, kind: str, keep: Callable | None = None,
                  threads: int | None = None, set_aside: bool = False, groups: KeyGroups | None = None):
    """The reduced tables of ``documents`` (``text: binary``) as a DataFrame of :data:`SCHEMA` rows, not collected
    (``threads``: counting threads per task, default the session's :func:`~pipelines.spark.session.task_threads`;
    ``keep``, ``set_aside``, ``groups``: see :func:`reduce_partition` and :class:`KeyGroups`)."""
    from pipelines.spark.session import task_threads

    spark = documents.sparkSession
    threads = task_threads(spark) if threads is None else max(1, int(threads))
    counted = documents.select("text").mapInArrow(
        count_partition(counter, kind, shuffle_buckets(spark), threads, groups), SCHEMA)
    return merged_frame(counted, kind, keep, set_aside, groups, threads)


def collect(frame, kind: str) -> Reduced:
    """The :class:`Reduced` of a :func:`reduced_frame` on the driver, everything in it (int64 tables sorted)."""
    tables: list = []
    stats: list = []
    documents: dict = {}
    _read_rows(kind, frame.toArrow().to_batches(), tables, stats, documents)
    table = joined(kind, tables)  # sorted at once, no hash table; empties the list: each batch goes once copied
    del tables
    release_freed_memory()  # the rows' Arrow copy
    return Reduced(table, T.add_stats(*stats), {}, _in_order(documents.get(HELD_OUT_BUCKET, [])),
                   _in_order(documents.get(TRAINING_BUCKET, [])))


def reduce_counts(documents, counter: Counter, kind: str, keep: Callable | None = None,
                  threads: int | None = None, limit: int | None = None, groups: KeyGroups | None = None) -> Reduced:
    """Count ``documents`` with ``counter``, reduce, and collect at most ``limit`` entries (see the module
    docstring and :func:`bounded_collect`)."""
    return bounded_collect(reduced_frame(documents, counter, kind, keep, threads, groups=groups), kind, limit)


def count_chunk_table(documents, counter: Counter, threads: int | None = None,
                      limit: int | None = None) -> T.ChunkTable:
    """The chunk table of a DataFrame of documents (``text: binary``) counted by ``counter`` (unigram's or BPE's,
    ``pipelines.train.unigram.counter`` / ``pipelines.train.bpe.counter``), reduced, at most ``limit`` chunks (the most
    frequent) collected; ``threads``: counting threads per task (default: the session's task cores)."""
    return chunk_table_of(reduce_counts(documents, counter, "bytes", threads=threads, limit=limit))


def table_frame(spark, kind: str, table: tuple, parts: int):
    """A DataFrame of :data:`SCHEMA` rows holding ``table`` cut into about ``parts`` pieces (a table the driver
    has, handed to Spark tasks: unigram's E-steps on the executors)."""
    import pyarrow as pa

    n = size(kind, table)
    bounds = np.linspace(0, n, max(1, parts) + 1).astype(np.int64)
    rows = []
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        if b > a:
            rows.append((len(rows), encode(kind, slice_rows(kind, table, a, b))))
    arrow = pa.table({"bucket": pa.array([r[0] for r in rows], pa.int32()),
                      "blob": pa.array([r[1] for r in rows], pa.binary())})
    return spark.createDataFrame(arrow.to_pandas(), SCHEMA).repartition(max(1, len(rows)))


# ---------------------------------------------------------------------------------------------- the bound
def smallest_keys_partition(kind: str, count: int, entries_room: int, bytes_room: int) -> Callable:
    """A partition's smallest keys at ``count`` that fit the rooms and the next one
    (:func:`tokenizer.trainers.table_bound.candidates`)."""
    def run(batches: Iterator) -> Iterator:
        import pyarrow as pa

        keys: list = []
        for _, table, _ in _tables(kind, batches):
            if table is not None:
                keys = B.candidates(sorted(keys + keys_at(kind, table, count)), entries_room, bytes_room)
        yield pa.RecordBatch.from_arrays([pa.array(keys, pa.int64() if kind == "int64" else pa.binary())],
                                         names=["key"])

    return run


def filter_partition(kind: str, count: int, last_key) -> Callable:
    def run(batches: Iterator) -> Iterator:
        for bucket, table, blob in _tables(kind, batches):
            if table is None:
                yield _batch([(bucket, blob)])
                continue
            kept = select(kind, table, kept_mask(kind, table, count, last_key))
            if size(kind, kept):
                yield _batch([(bucket, encode(kind, kept))])

    return run


def bounded_collect(frame, kind: str, limit) -> Reduced:
    """The :class:`Reduced` of a :func:`reduced_frame`, its table cut to the most frequent entries (ties by key)
    within ``limit`` (entries, or ``(entries, key bytes)``: :func:`tokenizer.trainers.table_bound.limits`) on the
    executors before it is collected; its ``bound`` says what was dropped
    (:func:`tokenizer.trainers.table_bound.report`). ``limit`` ``None``: everything is collected."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    frame = frame.where(F.col("bucket") != SET_ASIDE_BUCKET)
    if B.limits(limit) == (None, None):
        reduced = collect(frame, kind)
        reduced.bound = B.report(histogram(kind, reduced.table), None, None)
        return reduced
    persisted = frame = frame.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        rows = frame.where(F.col("bucket") == HISTOGRAM_BUCKET).select("blob").collect()
        by_count = B.add_histograms(*(json.loads(bytes(row["blob"])) for row in rows))
        decision = B.cut(by_count, limit)
        kept_at_cut = None
        if decision is not None:
            count, entries_room, bytes_room = decision
            smallest = frame.mapInArrow(smallest_keys_partition(kind, count, entries_room, bytes_room),
                                        "key long" if kind == "int64" else "key binary").collect()
            keys = sorted(row["key"] if kind == "int64" else bytes(row["key"]) for row in smallest)
            kept_at_cut = count, B.fitting(keys, entries_room, bytes_room)
            frame = frame.mapInArrow(filter_partition(kind, count, last_kept(kept_at_cut[1])), SCHEMA)
        reduced = collect(frame, kind)
    finally:
        persisted.unpersist()
    reduced.bound = B.report(by_count, limit, kept_at_cut)
    return reduced
