"""BytePiece training as Spark steps around the single-node trainer's functions.

The math lives in :mod:`tokenizer.trainers.bytepiece`; this module only moves arrays::

    documents (text: binary)
      -> mapInArrow: chunk_texts + count_ngrams per ~2 MB shard, merge_counts over a partition's shards
         -> the partition's sorted table cut into hash buckets: rows (bucket: int, keys: binary, counts: binary)
      -> repartition(bucket) + mapInArrow: merge_counts of each bucket's tables   exact integer reduce in numpy
         -> rows (key: long, count: long) of single bytes and n-grams with count >= min_count only
      -> collect them                                                      (the driver's memory bound)
      -> build_ngram_model on the driver, broadcast it
    documents
      -> mapInArrow: chunk_texts + segment_and_count_pieces per shard, merge_piece_counts over the partition
         -> rows (piece: binary, count: long)
      -> groupBy(piece).sum(count) -> collect -> prune_pieces on the driver
      -> [refine_em_rounds: em_e_step per partition (pieces broadcast), statistics summed, em_m_step]
      -> build_model per vocab size

Nothing depends on how the documents are partitioned: counts are integers summed exactly, and every driver step
sorts its input. The model therefore equals, byte for byte, what ``train_bytepiece_local`` computes from the same
documents with ``provenance={"corpus_fingerprint": multiset_fingerprint(documents)}`` (the fingerprint is
order-independent, since a Spark corpus has no defined document order).

The n-gram pass also reports per-partition side counts (documents, chunks, bytes, and the fingerprint's 32-bit
limb sums, and per reduce task the number of distinct n-grams) as entries with negative keys, which no packed
n-gram has (keys are >= 0), so a single pass over the data yields everything. The shuffle moves a few large binary
rows per partition rather than one row per n-gram, which keeps the JVM's share of the work (and its heap) small.

Example::

    result = train_bytepiece(spark, corpus.documents, TrainSettings(vocab_sizes=(8000,), min_count=8))
    result.models[8000].save("bytepiece-8000.model")
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from pipelines.shards import SHARD_BYTES, binary_array, iter_shards, map_shards
from pipelines.workdir import StageLog, StageReport
from tokenizer.errors import InputError
from tokenizer.trainers import bytepiece as bp

_LIMBS = 8  # a 256-bit fingerprint as eight 32-bit limbs
_KEY_DOCUMENTS, _KEY_CHUNKS, _KEY_BYTES, _KEY_DISTINCT = -1, -2, -3, -4
_KEY_LIMB0 = -16  # limb i has key -16 - i


# ---------------------------------------------------------------------------------------------- fingerprint
def document_digest(text: bytes) -> int:
    """SHA-256 of one document, length-prefixed (as ``corpus_fingerprint`` hashes it), as an integer."""
    return int.from_bytes(hashlib.sha256(len(text).to_bytes(8, "little") + text).digest(), "little")


def format_fingerprint(digest_sum: int, documents: int) -> str:
    return f"sha256-multiset:{digest_sum % (1 << 256):064x}:{documents}"


def multiset_fingerprint(texts) -> str:
    """An order-independent corpus fingerprint: the sum of the documents' SHA-256 digests mod 2**256, plus their
    number. Equal multisets of documents give equal fingerprints, whatever their order or partitioning.

    >>> multiset_fingerprint([b"a", b"b"]) == multiset_fingerprint([b"b", b"a"])
    True
    """
    total, n = 0, 0
    for text in texts:
        total += document_digest(text.encode() if isinstance(text, str) else bytes(text))
        n += 1
    return format_fingerprint(total, n)


# ---------------------------------------------------------------------------------------------- step 1: n-grams
def ngram_buckets(keys: np.ndarray, buckets: int) -> np.ndarray:
    """Bucket (0..buckets-1, int32) of each int64 key: a multiplicative hash, so that packed n-gram keys (whose low
    bits are the length) spread evenly. Every occurrence of a key, in any partition, gets the same bucket.

    Example: ``ngram_buckets(np.array([5, 5, -1]), 4)`` -> three values in 0..3, the first two equal.
    """
    mixed = np.asarray(keys, np.int64).view(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    return ((mixed >> np.uint64(32)) % np.uint64(buckets)).astype(np.int32)


def split_by_bucket(keys: np.ndarray, counts: np.ndarray, buckets: int
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Reorder a sorted, distinct ``(keys, counts)`` table by bucket: returns ``(keys, counts, bounds)`` where
    bucket ``b`` is ``keys[bounds[b]:bounds[b + 1]]``, still sorted (the reorder is stable). The pieces of one
    bucket from every partition meet in one reduce task. Example: with one bucket, ``bounds == [0, len(keys)]``.
    """
    bucket = ngram_buckets(keys, buckets)
    order = np.argsort(bucket, kind="stable")
    bounds = np.searchsorted(bucket[order], np.arange(buckets + 1), side="left")
    return keys[order], counts[order], bounds


def count_ngrams_partition(settings: bp.TrainSettings, shard_bytes: int = SHARD_BYTES,
                           buckets: int = 1, threads: int = 1) -> Callable:
    """The map side of the n-gram pass (a ``mapInArrow`` closure over the settings): one partition's n-gram counts,
    plus its side counts under negative keys, as rows ``(bucket int, keys binary, counts binary)`` of packed
    int64 arrays (a few large rows instead of one row per n-gram: the JVM shuffles bytes, not millions of rows).
    ``threads`` shards are chunked and counted at once (:func:`map_shards`); the sums do not depend on it."""

    def count_shard(shard: tuple[np.ndarray, np.ndarray]) -> tuple[tuple[np.ndarray, np.ndarray], int, int]:
        chunk_data, chunk_offsets = bp.chunk_texts(shard[0], shard[1], settings)
        return (bp.count_ngrams(chunk_data, chunk_offsets, settings.order), len(chunk_offsets) - 1,
                int(chunk_offsets[-1] - chunk_offsets[0]))

    def run(batches: Iterator) -> Iterator:
        import pyarrow as pa

        counts = bp.empty_counts()
        documents = chunks = total_bytes = 0
        limbs = [0] * _LIMBS

        def digested_shards() -> Iterator[tuple[np.ndarray, np.ndarray]]:
            nonlocal documents
            for data, offsets in iter_shards(batches, shard_bytes):
                blob = data.tobytes()
                for i in range(len(offsets) - 1):
                    digest = document_digest(blob[offsets[i]:offsets[i + 1]])
                    for limb in range(_LIMBS):
                        limbs[limb] += (digest >> (32 * limb)) & 0xFFFFFFFF
                del blob
                documents += len(offsets) - 1
                yield data, offsets

        for shard_counts, shard_chunks, shard_bytes_counted in map_shards(count_shard, digested_shards(), threads):
            chunks += shard_chunks
            total_bytes += shard_bytes_counted
            counts = bp.merge_counts(counts, shard_counts)
            del shard_counts
        side_keys = [_KEY_LIMB0 - i for i in reversed(range(_LIMBS))] + [_KEY_BYTES, _KEY_CHUNKS, _KEY_DOCUMENTS]
        side_counts = list(reversed(limbs)) + [total_bytes, chunks, documents]
        keys = np.concatenate([np.asarray(side_keys, np.int64), np.asarray(counts[0], np.int64)])  # still sorted
        values = np.concatenate([np.asarray(side_counts, np.int64), np.asarray(counts[1], np.int64)])
        del counts
        keys, values, bounds = split_by_bucket(keys, values, buckets)  # (drops the unordered copies)
        for bucket in range(buckets):
            first, last = int(bounds[bucket]), int(bounds[bucket + 1])
            if first < last:
                yield pa.RecordBatch.from_arrays(
                    [pa.array([bucket], pa.int32()), pa.array([keys[first:last].tobytes()], pa.binary()),
                     pa.array([values[first:last].tobytes()], pa.binary())], names=["bucket", "keys", "counts"])

    return run


def merge_tables(tables: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Sum sorted, distinct ``(keys, counts)`` tables pairwise, as a balanced tree (each entry is merged about
    log2(len(tables)) times, not once per table)."""
    tables = list(tables) or [bp.empty_counts()]
    while len(tables) > 1:
        tables = [bp.merge_counts(tables[i], tables[i + 1]) if i + 1 < len(tables) else tables[i]
                  for i in range(0, len(tables), 2)]
    return tables[0]


def reduce_ngram_buckets_partition(min_count: int) -> Callable:
    """The reduce side of the n-gram pass: sums the tables of the buckets that meet in this task and keeps what
    the driver needs (single bytes, n-grams with ``count >= min_count``, the side counts), plus this task's number
    of distinct n-grams under ``_KEY_DISTINCT``; rows ``(key long, count long)``."""

    def run(batches: Iterator) -> Iterator:
        import pyarrow as pa

        tables = []
        for batch in batches:
            key_column, count_column = batch.column(1), batch.column(2)
            for i in range(batch.num_rows):
                tables.append((np.frombuffer(key_column[i].as_py(), np.int64),
                               np.frombuffer(count_column[i].as_py(), np.int64)))
        keys, counts = merge_tables(tables)
        del tables
        kept = (keys < 0) | bp.kept_ngrams(keys, counts, min_count)  # side counts, then the model's rule
        distinct = int(np.count_nonzero(keys >= 0))
        keys = np.concatenate([keys[kept], np.asarray([_KEY_DISTINCT], np.int64)])
        counts = np.concatenate([counts[kept], np.asarray([distinct], np.int64)])
        step = 1 << 20
        for start in range(0, len(keys), step):
            yield pa.RecordBatch.from_arrays(
                [pa.array(keys[start:start + step], pa.int64()), pa.array(counts[start:start + step], pa.int64())],
                names=["key", "count"])

    return run


@dataclass
class NgramTable:
    """What the driver gets from the n-gram pass."""

    keys: np.ndarray
    counts: np.ndarray
    distinct_ngrams: int
    documents: int
    chunks: int
    chunk_bytes: int
    fingerprint: str


def shuffle_buckets(spark) -> int:
    """How many buckets the n-gram tables are split into: ``spark.sql.shuffle.partitions`` (with adaptive
    execution on, Spark then merges small reduce partitions, so a small corpus still runs in a few tasks)."""
    return max(1, int(spark.conf.get("spark.sql.shuffle.partitions")))


def reduce_ngrams(documents, settings: bp.TrainSettings, shard_bytes: int = SHARD_BYTES,
                  threads: int = 1) -> NgramTable:
    """Count n-grams over ``documents`` (``text: binary``), reduce, and collect the pruned table.

    Each partition's sorted table is cut into hash buckets; a shuffle brings each bucket's pieces together, where
    numpy merges them and keeps only single bytes and n-grams with ``count >= min_count`` (the same rule
    :func:`~tokenizer.trainers.bytepiece.build_ngram_model` applies), plus the side counts. Only that reaches the
    driver.
    """
    from pyspark.sql import functions as F

    buckets = shuffle_buckets(documents.sparkSession)
    counted = documents.mapInArrow(count_ngrams_partition(settings, shard_bytes, buckets, threads),
                                   "bucket int, keys binary, counts binary")
    table = (counted.repartition(F.col("bucket"))
             .mapInArrow(reduce_ngram_buckets_partition(settings.min_count), "key long, count long").toArrow())
    keys = table.column("key").to_numpy().astype(np.int64)
    counts = table.column("count").to_numpy().astype(np.int64)
    del table
    side: dict[int, int] = {}
    for key, count in zip(keys[keys < 0].tolist(), counts[keys < 0].tolist()):
        side[key] = side.get(key, 0) + count  # _KEY_DISTINCT comes once per reduce task
    digest_sum = sum(int(side.get(_KEY_LIMB0 - i, 0)) << (32 * i) for i in range(_LIMBS))
    positive = keys >= 0
    keys, counts = keys[positive], counts[positive]
    order = np.argsort(keys, kind="stable")
    ngram_documents = int(side.get(_KEY_DOCUMENTS, 0))
    return NgramTable(
        keys=keys[order], counts=counts[order], distinct_ngrams=int(side.get(_KEY_DISTINCT, 0)),
        documents=ngram_documents, chunks=int(side.get(_KEY_CHUNKS, 0)), chunk_bytes=int(side.get(_KEY_BYTES, 0)),
        fingerprint=format_fingerprint(digest_sum, ngram_documents),
    )


# ---------------------------------------------------------------------------------------------- step 2: pieces
def count_pieces_partition(lm_broadcast, settings: bp.TrainSettings, shard_bytes: int = SHARD_BYTES,
                           threads: int = 1) -> Callable:
    """The ``mapInArrow`` function of the segmentation pass: (piece: binary, count: long) per partition
    (``threads`` shards segmented at once, see :func:`map_shards`)."""

    def run(batches: Iterator) -> Iterator:
        import pyarrow as pa

        lm = lm_broadcast.value
        lm.lookup_table()  # built once here, not by several threads at once

        def count_shard(shard: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            chunk_data, chunk_offsets = bp.chunk_texts(shard[0], shard[1], settings)
            return bp.segment_and_count_pieces(lm, chunk_data, chunk_offsets, settings)

        totals = bp.empty_piece_counts()
        for shard_counts in map_shards(count_shard, iter_shards(batches, shard_bytes), threads):
            totals = bp.merge_piece_counts(totals, shard_counts)
            del shard_counts
        piece_data, piece_offsets, counts = totals
        if len(counts):
            yield pa.RecordBatch.from_arrays(
                [binary_array(piece_data, piece_offsets), pa.array(np.asarray(counts, np.int64), pa.int64())],
                names=["piece", "count"])

    return run


def reduce_pieces(documents, lm, settings: bp.TrainSettings, shard_bytes: int = SHARD_BYTES,
                  threads: int = 1) -> tuple[list[bytes], np.ndarray]:
    """Segment every document with the broadcast n-gram model and return the summed piece counts (sorted)."""
    from pyspark.sql import functions as F

    spark = documents.sparkSession
    lm_broadcast = spark.sparkContext.broadcast(lm)
    try:
        counted = documents.mapInArrow(count_pieces_partition(lm_broadcast, settings, shard_bytes, threads),
                                       "piece binary, count long")
        table = counted.groupBy("piece").agg(F.sum("count").alias("count")).toArrow()
    finally:
        lm_broadcast.unpersist()
    pieces = [bytes(p) for p in table.column("piece").to_pylist()]
    counts = table.column("count").to_numpy().astype(np.int64)
    order = sorted(range(len(pieces)), key=pieces.__getitem__)
    return [pieces[i] for i in order], counts[order]


# ---------------------------------------------------------------------------------------------- EM refinement
def em_partition(model_broadcast, settings: bp.TrainSettings, shard_bytes: int = SHARD_BYTES,
                 threads: int = 1) -> Callable:
    """``mapInArrow`` function of one EM E-step: one row per partition holding its
    :class:`~tokenizer.trainers.bytepiece.EStepStatistics` (piece statistics and adjacent-pair counts) as bytes
    (``threads`` shards at once, see :func:`map_shards`; statistics summed in shard order)."""

    def run(batches: Iterator) -> Iterator:
        import pyarrow as pa

        pieces, counts = model_broadcast.value

        def shard_statistics(shard: tuple[np.ndarray, np.ndarray]):
            chunk_data, chunk_offsets = bp.chunk_texts(shard[0], shard[1], settings)
            return bp.em_e_step(pieces, counts, chunk_data, chunk_offsets, settings, with_pairs=True)

        total = None
        for stats in map_shards(shard_statistics, iter_shards(batches, shard_bytes), threads):
            total = stats if total is None else total + stats
        if total is not None:
            yield pa.RecordBatch.from_arrays([pa.array([total.to_bytes()], pa.binary())], names=["stats"])

    return run


def refine_em_spark(documents, pieces: list[bytes], counts: np.ndarray, settings: bp.TrainSettings,
                    capacity: int | None = None, shard_bytes: int = SHARD_BYTES,
                    threads: int = 1) -> tuple[list[bytes], np.ndarray]:
    """``settings.refine_em_rounds`` EM rounds, the distributed twin of
    :func:`tokenizer.trainers.bytepiece.refine_em`: E-step per partition, statistics summed on the driver, M-step
    (every round but the last also fills free slots up to ``capacity`` pieces with frequent adjacent pairs).

    Viterbi statistics are integers (exact for any partitioning); ``expected`` ones are float64 sums whose last
    bits can depend on the partitioning (the M-step rounds them to integers).
    """
    spark = documents.sparkSession
    counts = np.asarray(counts, np.int64)
    capacity = len(pieces) if capacity is None else capacity
    rounds = settings.refine_em_rounds
    for r in range(rounds):
        model_broadcast = spark.sparkContext.broadcast((pieces, counts))
        try:
            rows = documents.mapInArrow(em_partition(model_broadcast, settings, shard_bytes, threads),
                                        "stats binary").collect()
        finally:
            model_broadcast.unpersist()
        if not rows:
            break
        total = None
        for blob in sorted(bytes(row["stats"]) for row in rows):
            stats = bp.EStepStatistics.from_bytes(blob)
            total = stats if total is None else total + stats
        pieces, counts = bp.em_m_step(pieces, total, settings, capacity, add_pieces=r < rounds - 1)
    return pieces, counts


# ---------------------------------------------------------------------------------------------- the whole job
def release_memory() -> None:
    """Collect garbage and hand the driver's free heap pages back to the system (glibc ``malloc_trim``; a no-op
    elsewhere), so memory freed after one stage does not stay resident through the next."""
    import ctypes
    import ctypes.util
    import gc

    gc.collect()
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim(0)
    except (OSError, AttributeError):
        pass


@dataclass
class TrainResult:
    models: dict  # vocab_size -> tokenizer.model.Model
    stages: list[StageReport]
    fingerprint: str
    documents: int


def train_bytepiece(documents, settings: bp.TrainSettings, *, provenance: dict | None = None,
                    progress: Callable[[str], None] = lambda message: None,
                    shard_bytes: int = SHARD_BYTES, workdir=None, threads: int | None = None) -> TrainResult:
    """Train BytePiece models (one per ``settings.vocab_sizes``) on a DataFrame of documents (``text: binary``).

    ``progress`` receives one line per stage. Raises :class:`InputError` for a corpus without text.
    ``workdir`` (a :class:`pipelines.workdir.WorkDir`) persists every stage's output and loads the stages a
    previous run with the same key finished (ngrams, ngram_model, pieces, prune, refine_em_SIZE, models).
    ``threads``: shards each task counts at once; by default the session's ``spark.task.cpus`` (the small local
    driver runs one task at a time over all cores; other sessions give 1). The models do not depend on it.
    """
    from pipelines.session import task_threads

    threads = task_threads(documents.sparkSession) if threads is None else max(1, int(threads))

    settings.validate()
    log = StageLog(workdir, progress)
    work, stage = log.work, log.add

    started = time.perf_counter()
    progress("[ngrams] counting byte n-grams (order %d) per partition, then reducing" % settings.order)
    ngrams, resumed = work.run("ngrams", lambda: reduce_ngrams(documents, settings, shard_bytes, threads),
                                 "ngram_table")
    if ngrams.chunk_bytes == 0:
        raise InputError("the corpus has no text (every document is empty): check --input and --text-column")
    stage("ngrams", started, resumed, documents=ngrams.documents, chunks=ngrams.chunks, bytes=ngrams.chunk_bytes,
          distinct_ngrams=ngrams.distinct_ngrams, kept_ngrams=len(ngrams.keys))

    started = time.perf_counter()
    lm, resumed = work.run("ngram_model", lambda: bp.build_ngram_model(ngrams.keys, ngrams.counts, settings),
                           "ngram_model")
    stage("ngram_model", started, resumed, entries=len(lm.keys))
    release_memory()

    started = time.perf_counter()
    progress("[pieces] segmenting every chunk with the broadcast n-gram model")
    (pieces, counts), resumed = work.run(
        "pieces", lambda: reduce_pieces(documents, lm, settings, shard_bytes, threads), "pieces")
    stage("pieces", started, resumed, distinct_pieces=len(pieces), tokens=int(counts.sum()))
    release_memory()

    started = time.perf_counter()
    pruned, resumed = work.run("prune", lambda: bp.prune_pieces(pieces, counts, settings), "pruned")
    stage("prune", started, resumed, **{f"pieces_{size}": len(p) for size, (p, _) in sorted(pruned.items())})

    final = {}
    for vocab_size, (kept, kept_counts) in sorted(pruned.items()):
        if settings.refine_em_rounds:
            started = time.perf_counter()

            def refine(kept=kept, kept_counts=kept_counts):
                return refine_em_spark(documents, kept, kept_counts, settings,
                                       vocab_size - len(settings.special_tokens), shard_bytes, threads)

            (kept, kept_counts), resumed = work.run(f"refine_em_{vocab_size}", refine, "pieces")
            stage(f"refine_em_{vocab_size}", started, resumed, pieces=len(kept))
        final[vocab_size] = (kept, kept_counts)

    def build_models() -> dict:
        models = {}
        for vocab_size, (kept, kept_counts) in final.items():
            info = {"corpus_fingerprint": ngrams.fingerprint, "vocab_size_requested": vocab_size}
            info.update(provenance or {})
            models[vocab_size] = bp.build_model(kept, kept_counts, settings, info)
        return models

    started = time.perf_counter()
    models, resumed = work.run("models", build_models, "models")
    stage("models", started, resumed, models=len(models))
    return TrainResult(models=models, stages=log.reports, fingerprint=ngrams.fingerprint,
                       documents=ngrams.documents)
