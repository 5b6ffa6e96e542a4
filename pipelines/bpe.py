"""BPE training as Spark steps around :mod:`tokenizer.trainers.bpe`::

    documents (text: binary)
      -> mapInArrow: count_chunks per ~8 MB shard (one Numba pass: pre-tokenize + hash count -> chunk bytes and
         counts as arrays), merge_chunk_counts over the partition's shards
         -> rows (chunk: binary, count: long), once per partition
      -> groupBy(chunk).sum(count)                  exact integer reduce, spillable
      -> collect the chunk count table, sorted by bytes (the driver's memory bound: every distinct chunk)
      -> train_from_table on the driver (Numba, incremental merges), one model per vocab size

``jobs/train_bpe.py --master none`` runs the same monoid and the same driver step without Spark
(:func:`tokenizer.trainers.bpe.count_chunks_threaded`), so both give the same model bytes.

Counts are integers summed exactly and the driver sorts the table, so the models do not depend on the
partitioning: they equal :func:`tokenizer.trainers.bpe.train_bpe_local` on the same documents with the same
``provenance``.

Example::

    result = train_bpe_spark(corpus.documents, BpeSettings(vocab_sizes=(32000,)))
    result.models[32000].save("bpe-32000.model")
"""

from __future__ import annotations

import time
from typing import Callable, Iterator

import numpy as np

from pipelines.bytepiece import SHARD_BYTES, StageReport, TrainResult, binary_array, iter_shards
from tokenizer.errors import InputError
from tokenizer.trainers import bpe


def count_chunks_partition(settings: bpe.BpeSettings, shard_bytes: int = SHARD_BYTES) -> Callable:
    """The ``mapInArrow`` function: ``(chunk: binary, count: long)`` rows of one partition, plus one row with a
    null chunk holding the partition's document count."""

    def run(batches: Iterator) -> Iterator:
        import pyarrow as pa

        total = bpe.empty_chunk_counts()
        documents = 0
        for data, offsets in iter_shards(batches, shard_bytes):
            documents += len(offsets) - 1
            total = bpe.merge_chunk_counts(total, bpe.count_chunks(data, offsets, settings))
        chunk_data, chunk_offsets, counts = total
        if len(counts):
            yield pa.RecordBatch.from_arrays(
                [binary_array(chunk_data, chunk_offsets), pa.array(np.asarray(counts, np.int64), pa.int64())],
                names=["chunk", "count"])
        yield pa.RecordBatch.from_arrays([pa.array([None], pa.binary()), pa.array([documents], pa.int64())],
                                         names=["chunk", "count"])

    return run


def reduce_chunks(documents, settings: bpe.BpeSettings,
                  shard_bytes: int = SHARD_BYTES) -> tuple[list[bytes], np.ndarray, int]:
    """``(chunks sorted by bytes, counts, documents)`` over a DataFrame of documents (``text: binary``)."""
    from pyspark.sql import functions as F

    counted = documents.mapInArrow(count_chunks_partition(settings, shard_bytes), "chunk binary, count long")
    table = counted.groupBy("chunk").agg(F.sum("count").alias("count")).toArrow()
    chunks = table.column("chunk").to_pylist()
    counts = table.column("count").to_numpy().astype(np.int64)
    n_documents = int(sum(int(c) for p, c in zip(chunks, counts.tolist()) if p is None))
    keep = [i for i, p in enumerate(chunks) if p is not None]
    pieces = [bytes(chunks[i]) for i in keep]
    order = sorted(range(len(pieces)), key=pieces.__getitem__)
    return [pieces[i] for i in order], counts[keep][order], n_documents


def train_bpe_spark(documents, settings: bpe.BpeSettings, *, provenance: dict | None = None,
                    progress: Callable[[str], None] = lambda message: None,
                    shard_bytes: int = SHARD_BYTES) -> TrainResult:
    """Train BPE models (one per ``settings.vocab_sizes``) on a DataFrame of documents (``text: binary``)."""
    settings.validate()
    stages: list[StageReport] = []

    def stage(name: str, started: float, **counts) -> None:
        report = StageReport(name, time.perf_counter() - started, counts)
        stages.append(report)
        shown = ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in counts.items())
        progress(f"[{name}] {report.seconds:.1f} s" + (f": {shown}" if shown else ""))

    started = time.perf_counter()
    progress(f"[chunks] pre-tokenizing ({settings.pretokenizer}) and counting chunks per partition, then reducing")
    chunks, counts, n_documents = reduce_chunks(documents, settings, shard_bytes)
    if not chunks:
        raise InputError("the corpus has no text (every document is empty): check --input and --text-column")
    stage("chunks", started, documents=n_documents, distinct_chunks=len(chunks), chunks=int(counts.sum()))

    started = time.perf_counter()
    merges, models, fingerprint = bpe.train_from_table(chunks, counts, settings, provenance)
    stage("merges", started, merges=len(merges.left))
    return TrainResult(models=models, stages=stages, fingerprint=fingerprint, documents=n_documents)


bpe_table_fingerprint = bpe.bpe_table_fingerprint  # kept here too: tests and callers import it from the pipeline
