"""SentencePiece-style unigram training as Spark steps around :mod:`tokenizer.trainers.unigram`::

    documents (text: binary)
      -> mapInArrow: ChunkSplitter.count (normalize, meta pieces -> boundary, split at "▁", hash count: Numba)
         per ~2 MB shard on the task's threads, the shards' tables summed per partition
         -> rows (chunk: binary, count: long)
      -> groupBy(chunk).sum(count)                        exact integer reduce
      -> the chunk table: collected and sorted on the driver (seeds, M-step and pruning run there)
    EM rounds, each E-step either
      driver: the Numba kernels over the collected table (when it is small: no job overhead per round), or
      spark:  the table stays partitioned in Spark (persisted); the trie and scores are broadcast, each partition
              returns its int64 fixed-point expected counts, the driver adds them (exact, order-free)

Every reduction is an integer sum and every driver step sorts its input, so the model's bytes do not depend on
the number of partitions or on the E-step mode.

Example::

    result = train_unigram(corpus.documents, UnigramSettings(vocab_size=32000))
    result.model.save("unigram-32000.model")
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import partial
from typing import Callable, Iterator

import numpy as np

from pipelines import direct_count
from pipelines.bytepiece import SHARD_BYTES, StageReport, binary_array, binary_buffers, iter_shards, map_shards
from pipelines.direct_count import DirectCount
from tokenizer.trainers import bpe
from tokenizer.trainers import unigram as ug

DRIVER_ESTEP_MAX_BYTES = 512 << 20
ESTEP_MODES = ("auto", "driver", "spark")


COUNT_SPLIT_BYTES = 32 << 20  # input split of a local single-worker session (its default, 4 MB, suits BytePiece)


def counting_session_options(master: str | None) -> dict[str, str]:
    """Spark options (``build_session(extra=...)``) of the unigram and BPE jobs' sessions.

    Every master: adaptive execution may coalesce the reduce partitions of a persisted (cached) query
    (``spark.sql.optimizer.canChangeCachedPlanOutputPartitioning``; Spark's default keeps the 200 shuffle
    partitions of the cached chunk table, 200 tiny tasks that took ~5 s more on en here). A local master (the
    lean ``small_driver`` + ``single_worker`` session) also keeps one Python worker for every task
    (``spark.python.worker.reuse``: a new worker per task costs ~1 s of imports and kernel loading, serially) and
    reads input splits of up to 32 MB (counting chunks holds a few bytes per text byte, not BytePiece's ~30, so
    fewer, larger tasks are safe). Example: ``counting_session_options("local[2]")["spark.python.worker.reuse"]``
    -> ``"true"``."""
    from pipelines.session import is_local_master, session_config

    options = {"spark.sql.optimizer.canChangeCachedPlanOutputPartitioning": "true"}
    if is_local_master(session_config(master)["spark.master"]):
        options.update({"spark.python.worker.reuse": "true",
                        "spark.sql.files.maxPartitionBytes": str(COUNT_SPLIT_BYTES)})
    return options


def count_shards(settings: ug.UnigramSettings, batches: Iterator, threads: int, shard_bytes: int):
    """``((chunk data, chunk offsets, counts), skipped sentences)`` of Arrow batches of one text column: cut into
    ~``shard_bytes`` shards counted by ``threads`` threads at once
    (:meth:`~tokenizer.trainers.unigram.ChunkSplitter.count`, Numba, nogil), the tables summed in one pass."""
    splitter = ug.ChunkSplitter(settings)
    splitter.normalizer, splitter.meta_pattern  # built once, before the threads share them
    tables, skipped = [], 0
    for chunk_data, chunk_offsets, counts, dropped in map_shards(lambda shard: splitter.count(*shard),
                                                                 iter_shards(batches, shard_bytes), threads):
        skipped += dropped
        tables.append((chunk_data, chunk_offsets, counts))
    return bpe.merge_chunk_counts(*tables), skipped


def split_partition(settings: ug.UnigramSettings, threads: int = 1, shard_bytes: int = SHARD_BYTES) -> Callable:
    """The ``mapInArrow`` function of the chunk count: the partition's ~``shard_bytes`` shards counted by
    ``threads`` threads at once (:meth:`~tokenizer.trainers.unigram.ChunkSplitter.count`, Numba, nogil), the
    tables summed (``merge_chunk_counts``); yields (chunk: binary, count: long) rows, plus one row with an empty
    chunk whose count is the number of skipped sentences negated (empty chunks never occur otherwise)."""

    def run(batches: Iterator) -> Iterator:
        import pyarrow as pa

        (chunk_data, chunk_offsets, counts), skipped = count_shards(settings, batches, threads, shard_bytes)
        if len(counts):
            yield pa.RecordBatch.from_arrays(
                [binary_array(chunk_data, chunk_offsets), pa.array(np.asarray(counts, np.int64), pa.int64())],
                names=["chunk", "count"])
        yield pa.RecordBatch.from_arrays([pa.array([b""], pa.binary()), pa.array([-skipped], pa.int64())],
                                         names=["chunk", "count"])

    return run


def count_chunks(documents, settings: ug.UnigramSettings, threads: int | None = None,
                 shard_bytes: int = SHARD_BYTES):
    """The reduced chunk table as a DataFrame (chunk, count); the empty chunk's count is minus the number of
    skipped sentences. ``threads``: counting threads per task (default: the session's
    :func:`~pipelines.session.task_threads`)."""
    from pyspark.sql import functions as F

    from pipelines.session import task_threads

    threads = task_threads(documents.sparkSession) if threads is None else max(1, int(threads))
    counted = documents.select("text").mapInArrow(split_partition(settings, threads, shard_bytes),
                                                   "chunk binary, count long")
    return counted.groupBy("chunk").agg(F.sum("count").alias("count"))


def collect_table(table) -> tuple[list[bytes], np.ndarray, int]:
    """``(chunks sorted by bytes, int64 counts, skipped sentences)`` of the reduced table."""
    arrow = table.toArrow()
    column = arrow.column("chunk").combine_chunks()
    counts = arrow.column("count").to_numpy().astype(np.int64)
    data, offsets = binary_buffers(column)
    lengths = np.diff(offsets)
    empty = lengths == 0
    skipped = -int(counts[empty].sum())
    keep = ~empty
    starts, ends = offsets[:-1][keep], offsets[1:][keep]
    chunks, sorted_counts = bpe.sort_chunks(*bpe.K.gather_spans(np.ascontiguousarray(data, np.uint8), starts, ends),
                                            counts[keep])
    return chunks, sorted_counts, skipped


# ---------------------------------------------------------------------------------------------- direct count
def count_chunks_direct(spark, units, settings: ug.UnigramSettings, holdout_fraction: float, *,
                        threads: int | None = None, shard_bytes: int = SHARD_BYTES,
                        keep_documents: int = 2000, text_column: str = "text") -> DirectCount:
    """The chunk table of local text or Parquet files (:func:`pipelines.direct_count.direct_units`) counted by
    Spark tasks that read them with pyarrow (:func:`pipelines.direct_count.count_chunks_direct`); equals
    :func:`count_chunks` on the training documents, so the model's bytes are the same. The result's ``tally`` is
    the number of skipped sentences."""
    settings.validate()
    return direct_count.count_chunks_direct(spark, units, partial(count_shards, settings, shard_bytes=shard_bytes),
                                            holdout_fraction, threads=threads, keep_documents=keep_documents,
                                            text_column=text_column)


def _stats_partition(state_broadcast, kind: str) -> Callable:
    """``mapInArrow`` function: one row (stats: binary int64 vector, extra: double/long as double) per partition."""

    def run(batches: Iterator) -> Iterator:
        import pyarrow as pa

        from pipelines.worker_heap import freeze_worker_heap

        trie, scores = state_broadcast.value
        total = np.zeros(len(trie.pieces), np.int64)
        extra = 0.0
        for batch in batches:
            if batch.num_rows == 0:
                continue
            data, offsets = binary_buffers(batch.column(0))
            weights = batch.column(1).to_numpy().astype(np.int64)
            if kind == "e":
                part, value = ug.e_step(trie, scores, data, offsets, weights)
            else:
                part, value = ug.viterbi_step(trie, scores, data, offsets, weights)
            total += part
            extra += value
            freeze_worker_heap()  # once per worker (pipelines.worker_heap)
        yield pa.RecordBatch.from_arrays([pa.array([total.tobytes()], pa.binary()), pa.array([float(extra)])],
                                         names=["stats", "extra"])

    return run


def spark_runner(table) -> ug.EStepRunner:
    """E-step and Viterbi counts over a partitioned (persisted) chunk table; int64 sums on the driver."""
    spark = table.sparkSession

    def run(kind: str, trie, scores):
        state = spark.sparkContext.broadcast((trie, scores))
        try:
            rows = table.select("chunk", "count").mapInArrow(_stats_partition(state, kind),
                                                            "stats binary, extra double").collect()
        finally:
            state.unpersist()
        total = np.zeros(len(trie.pieces), np.int64)
        extra = 0.0
        for row in rows:
            total += np.frombuffer(bytes(row["stats"]), np.int64)
            extra += row["extra"]
        return total, extra

    return ug.EStepRunner(e_step=lambda trie, scores: run("e", trie, scores),
                          viterbi=lambda trie, scores: (lambda r: (r[0], int(r[1])))(run("v", trie, scores)))


def driver_threads(master: str) -> int:
    """Threads of driver-side E-steps: the local master's cores (``local[2]`` -> 2), 1 on a cluster master
    (its driver machine's cores are not the job's). Example: ``driver_threads("local[*]")`` -> the CPU count."""
    from pipelines.session import is_local_master, local_cores

    return local_cores(master) if is_local_master(master) else 1


@dataclass
class UnigramResult:
    model: object  # tokenizer.model.Model
    stages: list[StageReport] = field(default_factory=list)
    chunks: int = 0
    sentences: int = 0
    skipped_sentences: int = 0
    estep_mode: str = "driver"


def train_unigram(documents, settings: ug.UnigramSettings, *, estep: str = "auto", partitions: int | None = None,
                  provenance: dict | None = None, threads: int | None = None, count_threads: int | None = None,
                  shard_bytes: int = SHARD_BYTES, counted: DirectCount | None = None,
                  progress: Callable[[str], None] = lambda message: None) -> UnigramResult:
    """Train one unigram model on a DataFrame of documents (``text: binary``, one sentence per row).

    ``estep``: ``driver`` (collect the chunk table, E-steps in this process), ``spark`` (E-steps as Spark jobs
    over the partitioned table), ``auto`` (driver when the table holds at most ``DRIVER_ESTEP_MAX_BYTES``).
    ``threads``: threads of driver E-steps (default :func:`driver_threads`); ``count_threads``: threads per task
    of the chunk count over ~``shard_bytes`` shards (default: the session's task cores). The model's bytes never
    depend on them. ``counted``: a chunk table already counted by :func:`count_chunks_direct` (``documents`` is
    then not read; the E-steps run on the driver, which holds the table).
    """
    from pyspark import StorageLevel

    if estep not in ESTEP_MODES:
        raise ValueError(f"estep={estep!r}: use one of {ESTEP_MODES}")
    settings.validate()
    stages: list[StageReport] = []
    if counted is not None:
        return _train_counted(counted, settings, provenance, threads, progress)
    started = time.perf_counter()
    table = count_chunks(documents, settings, count_threads, shard_bytes)
    if partitions:
        table = table.repartition(partitions, "chunk")
    table = table.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        chunks, counts, skipped = collect_table(table)
        chunk_bytes = sum(len(c) for c in chunks)
        stages.append(StageReport("chunks", time.perf_counter() - started,
                                  {"chunks": len(chunks), "chunk_bytes": chunk_bytes, "sentences_skipped": skipped}))
        progress(f"[chunks] {stages[-1].seconds:.1f} s: {len(chunks):,} distinct chunks, {chunk_bytes:,} bytes, "
                 f"{skipped:,} sentences skipped (too long or containing U+2585)")
        mode = estep
        if mode == "auto":
            mode = "driver" if chunk_bytes <= DRIVER_ESTEP_MAX_BYTES else "spark"
        runner = spark_runner(table.where("length(chunk) > 0")) if mode == "spark" else None
        if threads is None:
            threads = driver_threads(table.sparkSession.sparkContext.master)
        if mode == "driver":
            progress(f"[em] E-steps on the driver with {threads} thread{'s' if threads != 1 else ''}")
        started = time.perf_counter()
        model = ug.train_from_chunks(chunks, counts, settings, runner=runner, provenance=provenance,
                                     progress=progress, threads=threads)
        stages.append(StageReport("em", time.perf_counter() - started, {"pieces": model.vocab_size}))
    finally:
        table.unpersist()
    return UnigramResult(model=model, stages=stages, chunks=len(chunks), sentences=int(counts.sum()),
                         skipped_sentences=skipped, estep_mode=mode)


def _train_counted(counted: DirectCount, settings: ug.UnigramSettings, provenance, threads, progress) -> UnigramResult:
    chunk_bytes = sum(len(c) for c in counted.chunks)
    stages = [StageReport("chunks", counted.seconds, {"chunks": len(counted.chunks), "chunk_bytes": chunk_bytes,
                                                      "sentences_skipped": counted.tally})]
    progress(f"[chunks] {counted.seconds:.1f} s: {len(counted.chunks):,} distinct chunks, {chunk_bytes:,} bytes, "
             f"{counted.tally:,} sentences skipped (too long or containing U+2585)")
    threads = threads or 1
    progress(f"[em] E-steps on the driver with {threads} thread{'s' if threads != 1 else ''}")
    started = time.perf_counter()
    model = ug.train_from_chunks(counted.chunks, counted.counts, settings, provenance=provenance, progress=progress,
                                 threads=threads)
    stages.append(StageReport("em", time.perf_counter() - started, {"pieces": model.vocab_size}))
    return UnigramResult(model=model, stages=stages, chunks=len(counted.chunks), sentences=int(counted.counts.sum()),
                         skipped_sentences=counted.tally, estep_mode="driver")
