"""The one Spark reduce of every count table training makes: BytePiece's n-grams and pieces, unigram's and BPE's
chunks.

    documents (text: binary)
      -> mapInArrow: the algorithm's counter over the partition (a monoid: shards counted on the task's
         threads, summed) -> one table + named side statistics ({"documents": 12, ...})
         -> rows (bucket int, blob binary): the table cut into hash buckets, a few large binary rows per
            partition (the JVM shuffles bytes, not one row per key), plus one row (bucket -1) of statistics
      -> repartition(bucket) + mapInArrow: each bucket's tables merged exactly (integer sums), optionally cut
         down (``keep``: BytePiece keeps n-grams with count >= min_count), its number of distinct keys counted
         -> rows (bucket, blob) again
      -> on the driver: the buckets' tables (disjoint) merged, the statistics summed

Tables have one of two key kinds (:data:`KINDS`): ``int64``, ``(keys int64 sorted, counts int64)`` with packed
n-gram keys (the fast path: keys are bytes plus length in one integer), and ``bytes``, ``(data uint8, offsets
int64, counts int64)`` with any byte strings as keys. Both merge with their trainer's monoid
(:func:`tokenizer.trainers.bytepiece.merge_counts`, :func:`tokenizer.trainers.chunk_table.merge`), so any engine
that can shuffle bytes by a bucket number (Apache Beam's GroupByKey) could drive the same count and merge
functions. Sums are exact and the driver sorts, so the result never depends on the partitioning.

Example::

    table, stats = reduce_counts(documents, counter, "bytes")       # counter: (batches, threads) -> (table, stats)
    frame = reduced_frame(documents, counter, "bytes")              # the reduced buckets, left in Spark
"""

from __future__ import annotations

import json
from typing import Callable, Iterator

import numpy as np

from tokenizer.trainers import chunk_table as T

KINDS = ("int64", "bytes")
SCHEMA = "bucket int, blob binary"
STATS_BUCKET = -1
MAX_BLOB_ENTRIES = 1 << 24  # a table is cut into rows of at most this many keys (Arrow binary values < 2 GiB)

#: ``(Arrow batches of one binary column, threads) -> (table, stats)``; runs in the tasks (picklable)
Counter = Callable[[Iterator, int], tuple[tuple, dict]]


# ---------------------------------------------------------------------------------------------- tables
def empty(kind: str) -> tuple:
    return (np.zeros(0, np.int64), np.zeros(0, np.int64)) if kind == "int64" else T.empty()[0]


def size(kind: str, table: tuple) -> int:
    """Number of keys of a table."""
    return len(table[-1])


def merge(kind: str, tables: list[tuple]) -> tuple:
    """Sum tables of one kind exactly (int64 ones pairwise as a balanced tree, so the result stays sorted)."""
    if kind == "bytes":
        return T.merge(*((table, {}) for table in tables))[0] if tables else empty(kind)
    from tokenizer.trainers.bytepiece import merge_counts

    tables = list(tables) or [empty(kind)]
    while len(tables) > 1:
        tables = [merge_counts(tables[i], tables[i + 1]) if i + 1 < len(tables) else tables[i]
                  for i in range(0, len(tables), 2)]
    return tables[0]


def buckets_of(kind: str, table: tuple, buckets: int) -> np.ndarray:
    """Bucket (0..buckets-1, int64) of every key: a multiplicative hash of int64 keys (packed n-grams keep their
    length in the low bits), Spark's xxhash64 of byte keys. Every occurrence of a key gets the same bucket."""
    if kind == "int64":
        mixed = np.asarray(table[0], np.int64).view(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        return ((mixed >> np.uint64(32)) % np.uint64(buckets)).astype(np.int64)
    from tokenizer.kernels.xxhash import span_buckets

    return span_buckets(table[0], table[1], buckets)


def select(kind: str, table: tuple, mask: np.ndarray) -> tuple:
    """The entries of ``table`` where ``mask`` is true, in their order."""
    if kind == "int64":
        return table[0][mask], table[1][mask]
    from tokenizer.trainers.bpe import K

    data, offsets, counts = table
    starts, ends = offsets[:-1][mask], offsets[1:][mask]
    chunk_data, chunk_offsets = K.gather_spans(np.ascontiguousarray(data, np.uint8), starts, ends)
    return chunk_data, chunk_offsets, np.asarray(counts, np.int64)[mask]


def encode(kind: str, table: tuple) -> bytes:
    """A table as bytes: its arrays, each as an 8-byte length then its raw bytes (dtypes fixed by ``kind``)."""
    parts = []
    for array in table:
        raw = np.ascontiguousarray(array).tobytes()
        parts += [len(raw).to_bytes(8, "little"), raw]
    return b"".join(parts)


def decode(kind: str, blob: bytes) -> tuple:
    dtypes = (np.int64, np.int64) if kind == "int64" else (np.uint8, np.int64, np.int64)
    arrays, position = [], 0
    for dtype in dtypes:
        length = int.from_bytes(blob[position:position + 8], "little")
        arrays.append(np.frombuffer(blob, dtype, length // np.dtype(dtype).itemsize, position + 8))
        position += 8 + length
    return tuple(arrays)


def _rows(kind: str, table: tuple, bucket: int) -> Iterator[tuple[int, bytes]]:
    """``(bucket, blob)`` rows of a table, cut into pieces of at most :data:`MAX_BLOB_ENTRIES` keys."""
    n = size(kind, table)
    for start in range(0, n, MAX_BLOB_ENTRIES):
        mask = np.zeros(n, bool)
        mask[start:start + MAX_BLOB_ENTRIES] = True
        yield bucket, encode(kind, table if n <= MAX_BLOB_ENTRIES else select(kind, table, mask))


def _batch(rows: list[tuple[int, bytes]]):
    import pyarrow as pa

    return pa.RecordBatch.from_arrays([pa.array([b for b, _ in rows], pa.int32()),
                                       pa.array([blob for _, blob in rows], pa.binary())], names=["bucket", "blob"])


def _stats_row(stats: dict) -> tuple[int, bytes]:
    return STATS_BUCKET, json.dumps({k: int(v) for k, v in stats.items()}, sort_keys=True).encode()


def _read_rows(kind: str, batches, tables: list, stats: list) -> None:
    """Append the tables and the statistics of :data:`SCHEMA` batches to ``tables`` and ``stats``."""
    for batch in batches:
        blobs = batch.column(1)
        for i, bucket in enumerate(batch.column(0).to_pylist()):
            blob = blobs[i].as_py()
            if bucket == STATS_BUCKET:
                stats.append(json.loads(blob))
            else:
                tables.append(decode(kind, blob))


# ---------------------------------------------------------------------------------------------- the Spark steps
def count_partition(counter: Counter, kind: str, buckets: int, threads: int) -> Callable:
    """The map side (``mapInArrow``): the partition's table cut into ``buckets`` hash buckets, and its statistics."""

    def run(batches: Iterator) -> Iterator:
        table, stats = counter(batches, threads)
        bucket_of = buckets_of(kind, table, buckets) if size(kind, table) else np.zeros(0, np.int64)
        for bucket in np.unique(bucket_of).tolist():
            part = select(kind, table, bucket_of == bucket)
            for row in _rows(kind, part, bucket):
                yield _batch([row])
        del table
        yield _batch([_stats_row(stats)])

    return run


def reduce_partition(kind: str, keep: Callable[[tuple], tuple] | None = None) -> Callable:
    """The reduce side (``mapInArrow`` after the shuffle): the tables of the buckets that meet here merged and
    cut down by ``keep``; the statistics summed, plus ``distinct_keys`` (before ``keep``)."""

    def run(batches: Iterator) -> Iterator:
        tables: list = []
        stats: list = []
        _read_rows(kind, batches, tables, stats)
        merged = merge(kind, tables)
        del tables
        stats.append({"distinct_keys": size(kind, merged)})
        if keep is not None:
            merged = keep(merged)
        for row in _rows(kind, merged, 0):
            yield _batch([row])
        yield _batch([_stats_row(T.add_stats(*stats))])

    return run


def shuffle_buckets(spark) -> int:
    """How many buckets tables are cut into: ``spark.sql.shuffle.partitions`` (with adaptive execution on, Spark
    then merges small reduce partitions, so a small corpus still runs in a few tasks)."""
    return max(1, int(spark.conf.get("spark.sql.shuffle.partitions")))


def reduced_frame(documents, counter: Counter, kind: str, keep: Callable | None = None,
                  threads: int | None = None):
    """The reduced tables of ``documents`` (``text: binary``) as a DataFrame of :data:`SCHEMA` rows, not collected
    (``threads``: counting threads per task, default the session's :func:`~pipelines.session.task_threads`)."""
    from pyspark.sql import functions as F

    from pipelines.session import task_threads

    spark = documents.sparkSession
    threads = task_threads(spark) if threads is None else max(1, int(threads))
    counted = documents.select("text").mapInArrow(count_partition(counter, kind, shuffle_buckets(spark), threads),
                                                   SCHEMA)
    return counted.repartition(F.col("bucket")).mapInArrow(reduce_partition(kind, keep), SCHEMA)


def collect(frame, kind: str) -> tuple[tuple, dict]:
    """``(table, stats)`` of a :func:`reduced_frame` on the driver (int64 tables sorted by key)."""
    tables: list = []
    stats: list = []
    _read_rows(kind, frame.toArrow().to_batches(), tables, stats)
    return merge(kind, tables), T.add_stats(*stats)


def reduce_counts(documents, counter: Counter, kind: str, keep: Callable | None = None,
                  threads: int | None = None) -> tuple[tuple, dict]:
    """Count ``documents`` with ``counter``, reduce, and collect: ``(table, stats)`` (see the module docstring)."""
    return collect(reduced_frame(documents, counter, kind, keep, threads), kind)


def table_frame(spark, kind: str, table: tuple, parts: int):
    """A DataFrame of :data:`SCHEMA` rows holding ``table`` cut into about ``parts`` pieces (a table the driver
    has, handed to Spark tasks: unigram's E-steps on the executors)."""
    import pyarrow as pa

    n = size(kind, table)
    bounds = np.linspace(0, n, max(1, parts) + 1).astype(np.int64)
    rows = []
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        if b > a:
            mask = np.zeros(n, bool)
            mask[a:b] = True
            rows.append((len(rows), encode(kind, select(kind, table, mask))))
    arrow = pa.table({"bucket": pa.array([r[0] for r in rows], pa.int32()),
                      "blob": pa.array([r[1] for r in rows], pa.binary())})
    return spark.createDataFrame(arrow.to_pandas(), SCHEMA).repartition(max(1, len(rows)))
