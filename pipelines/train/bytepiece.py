"""BytePiece training as Spark steps around the single-node trainer's functions.

The math lives in :mod:`tokenizer.trainers.bytepiece`; this module only moves arrays::

    documents (text: binary)
      -> the reduce of :mod:`pipelines.train.reduce` (packed int64 keys): chunk_texts + count_maximal_ngrams (the
         longest n-gram at each position) per ~2 MB shard, summed over a partition's shards, single bytes counted
         exactly (prefix_form), the table cut into hash buckets by each key's first two bytes and shuffled as a
         few binary rows, each bucket merged exactly and expanded to every n-gram (expand_prefix_form); only
         single bytes and n-grams with count >= min_count are kept
      -> collect them                                                      (the driver's memory bound)
      -> build_ngram_model on the driver, broadcast it
    documents
      -> the same reduce (byte keys): chunk_texts + segment_and_count_pieces per shard, merge_piece_counts over
         the partition; pruning candidates (single bytes, frequent pieces) collected, the others set aside in
         Spark, re-segmented there onto the broadcast candidates -> prune_candidates on the driver
      -> [refine_em_rounds: em_e_step per partition (pieces broadcast), statistics summed, em_m_step]
      -> build_model per vocab size

Nothing depends on how the documents are partitioned: counts are integers summed exactly, and every driver step
sorts its input. The model therefore equals, byte for byte, what ``train_bytepiece_local`` computes from the same
documents with ``provenance={"corpus_fingerprint": multiset_fingerprint(documents)}`` (the fingerprint is
order-independent, since a Spark corpus has no defined document order).

The n-gram pass also reports named side statistics (documents, chunks, bytes, the fingerprint's 32-bit limb sums,
and the number of distinct n-grams), so a single pass over the data yields everything. The shuffle moves a few
large binary rows per partition rather than one row per n-gram, which keeps the JVM's share of the work (and its
heap) small.

Example::

    result = train_bytepiece(spark, corpus.documents, TrainSettings(vocab_sizes=(8000,), min_count=8))
    result.models[8000].save("bytepiece-8000.model")
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Callable, Iterator

import numpy as np

from pipelines.train import reduce
from pipelines.read.shards import SHARD_BYTES, iter_shards, map_shards
from pipelines.train.workdir import StageLog, StageReport
from tokenizer.balanced_sum import BalancedSum
from tokenizer.errors import InputError
from tokenizer.kernels.sha256 import LIMBS as _LIMBS, document_limb_sums
from tokenizer.trainers import bytepiece as bp
from tokenizer.trainers import table_bound

RESEGMENT_PIECES = 1 << 16  # set-aside pieces a thread re-segments at once


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
def count_ngram_shards(settings: bp.TrainSettings, batches: Iterator, threads: int, shard_bytes: int = SHARD_BYTES):
    """The n-gram pass's counter (:data:`pipelines.train.reduce.Counter` once ``settings`` is bound): the longest
    byte n-gram at every position of a partition's documents, ``threads`` shards chunked and counted at once
    (:func:`map_shards`), summed as a balanced tree, in the form the reduce expands
    (:func:`~tokenizer.trainers.bytepiece.prefix_form`: single bytes exact, longer n-grams the longest at their
    positions; :data:`NGRAM_GROUPS`), and the side statistics ``documents``, ``chunks``, ``chunk_bytes`` and
    ``fingerprint_limb_0..7`` (the 32-bit limb sums of the documents' SHA-256 digests, for
    :func:`format_fingerprint`; each shard's are summed by :func:`~tokenizer.kernels.sha256.document_limb_sums` on
    the counting threads, as :func:`document_digest` hashes a document)."""

    def count_shard(shard: tuple[np.ndarray, np.ndarray]) -> tuple[tuple[np.ndarray, np.ndarray], int, int, int,
                                                                    np.ndarray]:
        chunk_data, chunk_offsets = bp.chunk_texts(shard[0], shard[1], settings)
        return (bp.count_maximal_ngrams(chunk_data, chunk_offsets, settings.order), len(chunk_offsets) - 1,
                int(chunk_offsets[-1] - chunk_offsets[0]), len(shard[1]) - 1, document_limb_sums(*shard))

    counts = BalancedSum(bp.merge_counts)
    documents = chunks = total_bytes = 0
    limbs = [0] * _LIMBS
    for shard_counts, shard_chunks, shard_bytes_counted, shard_documents, shard_limbs in map_shards(
            count_shard, iter_shards(batches, shard_bytes), threads):
        chunks += shard_chunks
        total_bytes += shard_bytes_counted
        documents += shard_documents
        for limb in range(_LIMBS):
            limbs[limb] += int(shard_limbs[limb])
        counts.add(shard_counts)
        del shard_counts
    stats = {"documents": documents, "chunks": chunks, "chunk_bytes": total_bytes}
    stats.update({f"fingerprint_limb_{i}": limbs[i] for i in range(_LIMBS)})
    return bp.prefix_form(counts.result(bp.empty_counts())), stats


#: the n-gram reduce's key groups: a key's bucket follows its first two bytes, and each reduce task expands the
#: longest n-grams it holds to every n-gram of two or more bytes (their leading pairs all meet there)
NGRAM_GROUPS = reduce.KeyGroups(group=bp.leading_pair, expand=bp.expand_prefix_form)


def kept_ngram_mask(min_count: int, table: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """What the driver needs of a reduced n-gram table (a bool mask): single bytes and n-grams with ``count >=
    min_count`` (the rule of :func:`~tokenizer.trainers.bytepiece.build_ngram_model`), applied in the reduce
    tasks."""
    keys, counts = table
    return bp.kept_ngrams(keys, counts, min_count)


def reduce_ngrams(documents, settings: bp.TrainSettings, shard_bytes: int = SHARD_BYTES,
                  threads: int | None = None, limit: int | None = None) -> bp.NgramTable:
    """Count n-grams over ``documents`` (``text: binary``), reduce (:mod:`pipelines.train.reduce`, packed int64 keys),
    and collect the pruned table: only single bytes and n-grams with ``count >= min_count`` reach the driver, and
    of those at most ``limit`` (the most frequent)."""
    reduced = reduce.reduce_counts(
        documents, partial(count_ngram_shards, settings, shard_bytes=shard_bytes), "int64",
        keep=partial(kept_ngram_mask, settings.min_count), threads=threads, limit=limit, groups=NGRAM_GROUPS)
    (keys, counts), stats = reduced.table, reduced.stats
    digest_sum = sum(int(stats.get(f"fingerprint_limb_{i}", 0)) << (32 * i) for i in range(_LIMBS))
    ngram_documents = int(stats.get("documents", 0))
    return bp.NgramTable(keys=keys, counts=counts, distinct_ngrams=int(stats.get("distinct_keys", 0)),
                      documents=ngram_documents, chunks=int(stats.get("chunks", 0)),
                      chunk_bytes=int(stats.get("chunk_bytes", 0)),
                      fingerprint=format_fingerprint(digest_sum, ngram_documents), bound=reduced.bound)


# ---------------------------------------------------------------------------------------------- step 2: pieces
def count_piece_shards(lm_broadcast, settings: bp.TrainSettings, batches: Iterator, threads: int,
                       shard_bytes: int = SHARD_BYTES):
    """The segmentation pass's counter: every chunk segmented with the broadcast n-gram model, the pieces
    counted (``threads`` shards at once, see :func:`map_shards`) and summed as a balanced tree; no side
    statistics."""
    lm = lm_broadcast.value
    lm.lookup_table()  # built once here, not by several threads at once

    def count_shard(shard: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        chunk_data, chunk_offsets = bp.chunk_texts(shard[0], shard[1], settings)
        return bp.segment_and_count_pieces(lm, chunk_data, chunk_offsets, settings)

    totals = BalancedSum(bp.merge_piece_counts)
    for shard_counts in map_shards(count_shard, iter_shards(batches, shard_bytes), threads):
        totals.add(shard_counts)
        del shard_counts
    return totals.result(bp.empty_piece_counts()), {}


def candidate_piece_mask(settings: bp.TrainSettings, table: tuple) -> np.ndarray:
    """The reduce tasks' cut of a piece table ``(data, offsets, counts)``: the pruning candidates
    (:func:`~tokenizer.trainers.bytepiece.candidate_mask`) go to the driver, the rest is set aside."""
    return bp.candidate_mask(np.diff(table[1]), table[2], settings)


def resegment_partition(candidates_broadcast, threads: int) -> Callable:
    """``mapInArrow`` over set-aside piece rows: each piece segmented with the broadcast candidates (a
    :class:`~tokenizer.trainers.bytepiece.PieceModel`: unigram Viterbi, as
    :func:`~tokenizer.trainers.bytepiece.resegment_counts`), times its count; one row per partition holding the
    int64 counts the candidates gain, and the set-aside pieces and occurrences it saw. The broadcast value lives
    as long as the Python worker, so its trie is built once per worker, not once per task."""

    def run(batches: Iterator) -> Iterator:
        import pyarrow as pa

        model = candidates_broadcast.value
        model.trie()  # built here, before the threads share it (once per worker: the value outlives the task)
        gained = np.zeros(len(model.pieces), np.int64)
        pieces = occurrences = 0
        tables = (reduce.slice_rows("bytes", table, first, min(first + RESEGMENT_PIECES, len(table[2])))
                  for batch in batches for table in map(partial(reduce.decode, "bytes"), batch.column(1).to_pylist())
                  for first in range(0, len(table[2]), RESEGMENT_PIECES))
        for counts, table_pieces, table_occurrences in map_shards(
                lambda table: (model.viterbi_counts(*table)[0], len(table[2]), int(table[2].sum())), tables,
                threads):
            gained += counts
            pieces += table_pieces
            occurrences += table_occurrences
        yield pa.RecordBatch.from_arrays([pa.array([gained.tobytes()], pa.binary()), pa.array([pieces]),
                                          pa.array([occurrences])], names=["gained", "pieces", "occurrences"])

    return run


def reduce_pieces(documents, lm, settings: bp.TrainSettings, shard_bytes: int = SHARD_BYTES,
                  threads: int | None = None,
                  limit: int | None = None) -> tuple[list[bytes], np.ndarray, dict, dict]:
    """Segment every document with the broadcast n-gram model and count the pieces; only the pruning candidates
    reach the driver (at most ``limit``, the most frequent; the 256 single bytes completed), the other pieces stay
    in Spark and are re-segmented there onto the broadcast candidates, whose counts gain theirs. Returns
    ``(candidates sorted by bytes, counts int64, what the memory bound dropped, {"pieces": n, "occurrences": m}
    set aside and the "distinct_pieces" counted)``. Hand the candidates to
    :func:`~tokenizer.trainers.bytepiece.prune_candidates`: the result equals
    :func:`~tokenizer.trainers.bytepiece.prune_pieces` over every piece (when the bound drops nothing)."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from pipelines.spark.session import task_threads
    from tokenizer.trainers.chunk_table import finish

    spark = documents.sparkSession
    threads = task_threads(spark) if threads is None else max(1, int(threads))
    lm_broadcast = spark.sparkContext.broadcast(lm)
    frame = reduce.reduced_frame(
        documents, partial(count_piece_shards, lm_broadcast, settings, shard_bytes=shard_bytes), "bytes",
        keep=partial(candidate_piece_mask, settings), threads=threads, set_aside=True)
    frame = frame.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        reduced = reduce.bounded_collect(frame, "bytes", limit)
        counted = finish(reduced.table, {})
        pieces, counts = bp.complete_bytes(counted.chunks, counted.counts)
        candidates_broadcast = spark.sparkContext.broadcast(bp.PieceModel(pieces, counts))
        try:
            rows = frame.where(F.col("bucket") == reduce.SET_ASIDE_BUCKET).mapInArrow(
                resegment_partition(candidates_broadcast, threads),
                "gained binary, pieces long, occurrences long").collect()
        finally:
            candidates_broadcast.unpersist()
    finally:
        frame.unpersist()
        lm_broadcast.unpersist()
    gained = np.zeros(len(pieces), np.int64)
    for row in rows:
        gained += np.frombuffer(bytes(row["gained"]), np.int64)
    set_aside = {"pieces": sum(int(r["pieces"]) for r in rows),
                 "occurrences": sum(int(r["occurrences"]) for r in rows),
                 "distinct_pieces": int(reduced.stats.get("distinct_keys", 0))}
    return pieces, counts + gained, reduced.bound, set_aside


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
@dataclass
class TrainResult:
    models: dict  # vocab_size -> tokenizer.model.Model
    stages: list[StageReport]
    fingerprint: str
    documents: int
    bounds: dict = field(default_factory=dict)  # table name -> what the memory bound did


def train_bytepiece(documents, settings: bp.TrainSettings, *, provenance: dict | None = None,
                    progress: Callable[[str], None] = lambda message: None,
                    shard_bytes: int = SHARD_BYTES, workdir=None, threads: int | None = None,
                    limit: int | None = None) -> TrainResult:
    """Train BytePiece models (one per ``settings.vocab_sizes``) on a DataFrame of documents (``text: binary``).

    ``progress`` receives one line per stage. Raises :class:`InputError` for a corpus without text.
    ``workdir`` (a :class:`pipelines.train.workdir.WorkDir`) persists every stage's output and loads the stages a
    previous run with the same key finished (ngrams, ngram_model, pieces, prune, refine_em_SIZE, models).
    ``threads``: shards each task counts at once; by default the session's ``spark.task.cpus`` (the small local
    driver runs one task at a time over all cores; other sessions give 1). The models do not depend on it.
    ``limit``: at most this many n-grams and pieces reach the driver (the most frequent; None: no bound); what it
    dropped is in the result's ``bounds`` and, when it dropped anything, in the models' provenance.
    """
    from pipelines.spark.session import describe_jobs, task_threads

    spark = documents.sparkSession
    threads = task_threads(spark) if threads is None else max(1, int(threads))

    settings.validate()
    log = StageLog(workdir, progress)
    work, stage = log.work, log.add

    started = time.perf_counter()
    progress("[ngrams] counting byte n-grams (order %d) per partition, then reducing" % settings.order)
    describe_jobs(spark, "ngrams")
    ngrams, resumed = work.run("ngrams", lambda: reduce_ngrams(documents, settings, shard_bytes, threads, limit),
                               "ngram_table")
    if ngrams.chunk_bytes == 0:
        raise InputError("the corpus has no text (every document is empty): check --input and --text-column")
    stage("ngrams", started, resumed, documents=ngrams.documents, chunks=ngrams.chunks, bytes=ngrams.chunk_bytes,
          distinct_ngrams=ngrams.distinct_ngrams, kept_ngrams=len(ngrams.keys),
          dropped_by_bound=ngrams.bound.get("dropped_entries", 0))

    started = time.perf_counter()
    lm, resumed = work.run("ngram_model", lambda: bp.build_ngram_model(ngrams.keys, ngrams.counts, settings),
                           "ngram_model")
    stage("ngram_model", started, resumed, entries=len(lm.keys))
    ngrams = dataclasses.replace(ngrams, keys=np.zeros(0, np.int64), counts=np.zeros(0, np.int64))  # now in lm

    started = time.perf_counter()
    progress("[candidates] segmenting every chunk with the broadcast n-gram model; rare pieces re-segmented onto "
             "the candidates in place")
    describe_jobs(spark, "candidates")
    (pieces, counts, pieces_bound, set_aside), resumed = work.run(
        "candidates", lambda: reduce_pieces(documents, lm, settings, shard_bytes, threads, limit), "candidates")
    del lm  # the n-gram model's last use: the driver's pruning below runs without it
    stage("candidates", started, resumed, candidate_pieces=len(pieces),
          distinct_pieces=set_aside["distinct_pieces"],
          set_aside_pieces=set_aside["pieces"], dropped_by_bound=pieces_bound.get("dropped_entries", 0))
    bounds = {"ngrams": ngrams.bound, "pieces": pieces_bound}

    started = time.perf_counter()
    pruned, resumed = work.run("prune", lambda: bp.prune_candidates(pieces, counts, settings), "pruned")
    stage("prune", started, resumed, **{f"pieces_{size}": len(p) for size, (p, _) in sorted(pruned.items())})

    final = {}
    for vocab_size, (kept, kept_counts) in sorted(pruned.items()):
        if settings.refine_em_rounds:
            started = time.perf_counter()

            describe_jobs(spark, f"refine_em_{vocab_size}")

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
            info.update(table_bound.provenance(bounds))
            models[vocab_size] = bp.build_model(kept, kept_counts, settings, info)
        return models

    started = time.perf_counter()
    models, resumed = work.run("models", build_models, "models")
    stage("models", started, resumed, models=len(models))
    return TrainResult(models=models, stages=log.reports, fingerprint=ngrams.fingerprint,
                       documents=ngrams.documents, bounds=bounds)

