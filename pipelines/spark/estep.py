"""Spark's share of unigram training: the session options of every training job, and unigram's E-steps over a
chunk table too large for the driver's threads::

    the table's buckets handed to Spark (persisted); the trie and scores broadcast, each partition returns its
    int64 fixed-point expected counts, the driver adds them (:func:`spark_runner`)

The E-step is an integer sum, so the model's bytes do not depend on where it ran (:func:`estep_mode`).
"""

from __future__ import annotations

from typing import Callable, Iterator

import numpy as np

from pipelines.spark import reduce
from tokenizer.trainers import chunk_table as T
from tokenizer.trainers import unigram as ug

DRIVER_ESTEP_MAX_BYTES = 512 << 20
ESTEP_MODES = ("auto", "driver", "spark")
COUNT_SPLIT_BYTES = 32 << 20  # input split of a local single-worker session (its default is 4 MB)


def counting_session_options(master: str | None) -> dict[str, str]:
    """Spark options (``build_session(extra=...)``) of every training job's session.

    Every master: adaptive execution may coalesce the reduce partitions of a persisted (cached) query
    (``spark.sql.optimizer.canChangeCachedPlanOutputPartitioning``; Spark's default keeps the 200 shuffle
    partitions of the cached chunk table, 200 tiny tasks that took seconds more on en here). A local master (the
    lean ``small_driver`` + ``single_worker`` session) also keeps one Python worker for every task
    (``spark.python.worker.reuse``: a new worker per task pays the imports and kernel loading again, serially) and
    reads input splits of up to 32 MB: a partition's table is summed over more text before the shuffle (fewer
    keys shuffled per input byte), while counting holds a bounded amount per ~2 MB shard (BytePiece's n-grams
    about 30 bytes per text byte, chunks a few). Example:
    ``counting_session_options("local[2]")["spark.python.worker.reuse"]`` -> ``"true"``."""
    from pipelines.spark.session import is_local_master, session_config

    options = dict(reduce.CACHED_PLAN_OPTIONS)
    if is_local_master(session_config(master)["spark.master"]):
        options.update({"spark.python.worker.reuse": "true",
                        "spark.sql.files.maxPartitionBytes": str(COUNT_SPLIT_BYTES)})
    return options


def table_frame(spark, table: T.ChunkTable, partitions: int | None = None):
    """A persisted DataFrame of a collected table's buckets (:data:`pipelines.spark.reduce.SCHEMA`; Spark E-steps of a
    table counted in the tasks or resumed from the work directory), in ``partitions`` pieces (default: the
    session's parallelism)."""
    from pyspark import StorageLevel

    data, offsets = ug.pack(table.chunks)
    frame = reduce.table_frame(spark, "bytes", (data, offsets, table.counts),
                               partitions or spark.sparkContext.defaultParallelism)
    return frame.persist(StorageLevel.MEMORY_AND_DISK)


def _stats_partition(state_broadcast, kind: str) -> Callable:
    """``mapInArrow`` function: one row (stats: binary int64 vector, extra: double/long as double) per partition."""

    def run(batches: Iterator) -> Iterator:
        import pyarrow as pa

        from pipelines.spark.worker_heap import freeze_worker_heap

        trie, scores = state_broadcast.value
        total = np.zeros(len(trie.pieces), np.int64)
        extra = 0.0
        for batch in batches:
            buckets = batch.column(0).to_pylist()
            for i, bucket in enumerate(buckets):
                if bucket == reduce.STATS_BUCKET:
                    continue
                data, offsets, weights = reduce.decode("bytes", batch.column(1)[i].as_py())
                if kind == "e":
                    part, value = ug.e_step(trie, scores, data, offsets, weights)
                else:
                    part, value = ug.viterbi_step(trie, scores, data, offsets, weights)
                total += part
                extra += value
                freeze_worker_heap()  # once per worker (pipelines.spark.worker_heap)
        yield pa.RecordBatch.from_arrays([pa.array([total.tobytes()], pa.binary()), pa.array([float(extra)])],
                                         names=["stats", "extra"])

    return run


def spark_runner(table) -> ug.EStepRunner:
    """E-step and Viterbi counts over a chunk table's buckets handed to Spark (:func:`table_frame`); int64 sums on
    the driver."""
    spark = table.sparkSession

    def run(kind: str, trie, scores):
        state = spark.sparkContext.broadcast((trie, scores))
        try:
            rows = table.mapInArrow(_stats_partition(state, kind), "stats binary, extra double").collect()
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
    from pipelines.spark.session import is_local_master, local_cores

    return local_cores(master) if is_local_master(master) else 1


def estep_mode(estep: str, table: T.ChunkTable) -> str:
    """Where the E-steps run: ``driver`` or ``spark`` as asked, ``auto``: the driver up to
    :data:`DRIVER_ESTEP_MAX_BYTES` of chunk bytes. ``estep_mode("auto", table)`` -> ``"driver"`` for small tables."""
    if estep not in ESTEP_MODES:
        raise ValueError(f"estep={estep!r}: use one of {ESTEP_MODES}")
    if estep == "auto":
        return "driver" if table.chunk_bytes <= DRIVER_ESTEP_MAX_BYTES else "spark"
    return estep
