"""BytePiece training's stages on any engine (:mod:`pipelines.train.engine`) around the single-node trainer's
functions.

The math lives in :mod:`tokenizer.trainers.bytepiece`; this module only moves arrays::

    documents (text: binary)
      -> the engine's count (packed int64 keys): chunk_texts + count_maximal_ngrams (the longest n-gram at each
         position) per ~2 MB shard, summed over the engine's shards, single bytes counted exactly (prefix_form);
         the reduce groups keys by their first two bytes (NGRAM_GROUPS) and expands each group to every n-gram
         (expand_prefix_form); only single bytes and n-grams with count >= min_count are kept
      -> build_ngram_model in this process, shared with the counting threads or tasks
    documents
      -> the engine's count (byte keys): chunk_texts + segment_and_count_pieces per shard, merge_piece_counts; the
         pruning candidates (single bytes, frequent pieces) come back, the others are set aside where the count
         ran and re-segmented there onto the shared candidates (map_aside) -> prune_candidates in this process
      -> [refine_em_rounds: em_e_step over the documents (map_documents), statistics summed, em_m_step]
      -> build_model per vocab size

Nothing depends on the engine or on how the documents are partitioned: counts are integers summed exactly, and
every driver step sorts its input. The model therefore equals, byte for byte, what ``train_bytepiece_local``
computes from the same documents with ``provenance={"corpus_fingerprint": multiset_fingerprint(documents)}`` (the
fingerprint is order-independent, since a Spark corpus has no defined document order).

The n-gram pass also reports named side statistics (documents, chunks, bytes, the fingerprint's 32-bit limb sums,
and the number of distinct n-grams), so a single pass over the data yields everything.

Example::

    result = train_bytepiece(engine, TrainSettings(vocab_sizes=(8000,), min_count=8))
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

from pipelines.read.shards import SHARD_BYTES, iter_shards, map_shards
from pipelines.train.engine import slices
from pipelines.train.tables import KeyGroups
from pipelines.train.workdir import MODELS, PIECES, StageCodec, StageLog, StageReport, packed_arrays
from tokenizer.balanced_sum import BalancedSum
from tokenizer.errors import InputError
from tokenizer.kernels.sha256 import LIMBS as _LIMBS, document_limb_sums
from tokenizer.packed import unpack
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
    """The n-gram pass's counter (:data:`pipelines.train.tables.Counter` once ``settings`` is bound): the longest
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
NGRAM_GROUPS = KeyGroups(group=bp.leading_pair, expand=bp.expand_prefix_form)


def kept_ngram_mask(min_count: int, table: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """What the driver needs of a reduced n-gram table (a bool mask): single bytes and n-grams with ``count >=
    min_count`` (the rule of :func:`~tokenizer.trainers.bytepiece.build_ngram_model`), applied in the reduce
    tasks."""
    keys, counts = table
    return bp.kept_ngrams(keys, counts, min_count)


def reduce_ngrams(engine, settings: bp.TrainSettings, shard_bytes: int = SHARD_BYTES,
                  limit: int | None = None) -> bp.NgramTable:
    """Count n-grams over the engine's documents, reduce (packed int64 keys) and keep the pruned table: only single
    bytes and n-grams with ``count >= min_count`` come back, and of those at most ``limit`` (the most frequent)."""
    reduced = engine.count(partial(count_ngram_shards, settings, shard_bytes=shard_bytes), "int64",
                           keep=partial(kept_ngram_mask, settings.min_count), limit=limit, groups=NGRAM_GROUPS)
    (keys, counts), stats = reduced.table, reduced.stats
    digest_sum = sum(int(stats.get(f"fingerprint_limb_{i}", 0)) << (32 * i) for i in range(_LIMBS))
    ngram_documents = int(stats.get("documents", 0))
    return bp.NgramTable(keys=keys, counts=counts, distinct_ngrams=int(stats.get("distinct_keys", 0)),
                         documents=ngram_documents, chunks=int(stats.get("chunks", 0)),
                         chunk_bytes=int(stats.get("chunk_bytes", 0)),
                         fingerprint=format_fingerprint(digest_sum, ngram_documents), bound=reduced.bound)


# ---------------------------------------------------------------------------------------------- step 2: pieces
def count_piece_shards(lm_shared, settings: bp.TrainSettings, batches: Iterator, threads: int,
                       shard_bytes: int = SHARD_BYTES):
    """The segmentation pass's counter: every chunk segmented with the shared n-gram model, the pieces
    counted (``threads`` shards at once, see :func:`map_shards`) and summed as a balanced tree; no side
    statistics."""
    lm = lm_shared.value
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


def resegment_tables(candidates_shared, tables: Iterator[tuple], threads: int) -> tuple[np.ndarray, int, int]:
    """``map_aside``'s function over set-aside piece tables ``(data, offsets, counts)``: each piece segmented with
    the shared candidates (a :class:`~tokenizer.trainers.bytepiece.PieceModel`: unigram Viterbi, as
    :func:`~tokenizer.trainers.bytepiece.resegment_counts`), times its count, ``threads`` slices of
    :data:`RESEGMENT_PIECES` pieces at once. Returns ``(int64 counts the candidates gain, set-aside pieces,
    their occurrences)``. A Spark broadcast value lives as long as the Python worker, so its trie is built once
    per worker, not once per task."""
    model = candidates_shared.value
    model.trie()  # built here, before the threads share it
    gained = np.zeros(len(model.pieces), np.int64)
    pieces = occurrences = 0
    for counts, table_pieces, table_occurrences in map_shards(
            lambda table: (model.viterbi_counts(*table)[0], len(table[2]), int(table[2].sum())),
            slices(tables, "bytes", RESEGMENT_PIECES), threads):
        gained += counts
        pieces += table_pieces
        occurrences += table_occurrences
    return gained, pieces, occurrences


def reduce_pieces(engine, lm, settings: bp.TrainSettings, shard_bytes: int = SHARD_BYTES,
                  limit: int | None = None) -> tuple[list[bytes], np.ndarray, dict, dict]:
    """Segment every document with the shared n-gram model and count the pieces; only the pruning candidates
    come back (at most ``limit``, the most frequent; the 256 single bytes completed), the other pieces stay where
    the engine counted them and are re-segmented there onto the shared candidates, whose counts gain theirs.
    Returns ``(candidates sorted by bytes, counts int64, what the memory bound dropped, {"pieces": n,
    "occurrences": m} set aside and the "distinct_pieces" counted)``. Hand the candidates to
    :func:`~tokenizer.trainers.bytepiece.prune_candidates`: the result equals
    :func:`~tokenizer.trainers.bytepiece.prune_pieces` over every piece (when the bound drops nothing)."""
    from tokenizer.trainers.chunk_table import finish

    lm_shared = engine.share(lm)
    try:
        reduced = engine.count(partial(count_piece_shards, lm_shared, settings, shard_bytes=shard_bytes), "bytes",
                               keep=partial(candidate_piece_mask, settings), limit=limit, set_aside=True)
    finally:
        lm_shared.unpersist()
    try:
        counted = finish(reduced.table, {})
        pieces, counts = bp.complete_bytes(counted.chunks, counted.counts)
        candidates_shared = engine.share(bp.PieceModel(pieces, counts))
        try:
            results = engine.map_aside(reduced, "bytes", partial(resegment_tables, candidates_shared))
        finally:
            candidates_shared.unpersist()
    finally:
        engine.release(reduced)
    gained = np.zeros(len(pieces), np.int64)
    for part_gained, _, _ in results:
        gained += part_gained
    set_aside = {"pieces": sum(r[1] for r in results), "occurrences": sum(r[2] for r in results),
                 "distinct_pieces": int(reduced.stats.get("distinct_keys", 0))}
    return pieces, counts + gained, reduced.bound, set_aside


# ---------------------------------------------------------------------------------------------- EM refinement
def em_statistics(model_shared, settings: bp.TrainSettings, batches: Iterator, threads: int,
                  shard_bytes: int = SHARD_BYTES):
    """``map_documents``' function of one EM E-step: the documents'
    :class:`~tokenizer.trainers.bytepiece.EStepStatistics` (piece statistics and adjacent-pair counts; ``threads``
    shards at once, summed in shard order), ``None`` for no documents."""
    pieces, counts = model_shared.value

    def shard_statistics(shard: tuple[np.ndarray, np.ndarray]):
        chunk_data, chunk_offsets = bp.chunk_texts(shard[0], shard[1], settings)
        return bp.em_e_step(pieces, counts, chunk_data, chunk_offsets, settings, with_pairs=True)

    total = None
    for stats in map_shards(shard_statistics, iter_shards(batches, shard_bytes), threads):
        total = stats if total is None else total + stats
    return total


def refine_em_rounds(engine, pieces: list[bytes], counts: np.ndarray, settings: bp.TrainSettings,
                     capacity: int | None = None, shard_bytes: int = SHARD_BYTES) -> tuple[list[bytes], np.ndarray]:
    """``settings.refine_em_rounds`` EM rounds over the engine's documents, the twin of
    :func:`tokenizer.trainers.bytepiece.refine_em`: E-step per part, statistics summed, M-step (every round but the
    last also fills free slots up to ``capacity`` pieces with frequent adjacent pairs).

    Viterbi statistics are integers (exact for any partitioning); ``expected`` ones are float64 sums whose last
    bits can depend on the partitioning (the M-step rounds them to integers).
    """
    counts = np.asarray(counts, np.int64)
    capacity = len(pieces) if capacity is None else capacity
    rounds = settings.refine_em_rounds
    for r in range(rounds):
        model_shared = engine.share((pieces, counts))
        try:
            parts = [part for part in engine.map_documents(
                partial(em_statistics, model_shared, settings, shard_bytes=shard_bytes)) if part is not None]
        finally:
            model_shared.unpersist()
        if not parts:
            break
        total = None
        for stats in sorted(parts, key=lambda part: part.to_bytes()):
            total = stats if total is None else total + stats
        pieces, counts = bp.em_m_step(pieces, total, settings, capacity, add_pieces=r < rounds - 1)
    return pieces, counts


# ---------------------------------------------------------------------------------------------- stage files
def _decode_pruned(arrays: dict, meta: dict) -> dict:
    return {size: (unpack(arrays[f"{size}_data"], arrays[f"{size}_offsets"]), arrays[f"{size}_counts"])
            for size in meta["sizes"]}


#: the ``ngrams`` stage: a :class:`~tokenizer.trainers.bytepiece.NgramTable`
NGRAM_TABLE = StageCodec(
    "ngram_table",
    lambda value: ({"keys": value.keys, "counts": value.counts},
                   {k: getattr(value, k) for k in ("distinct_ngrams", "documents", "chunks", "chunk_bytes",
                                                   "fingerprint", "bound")}),
    lambda arrays, meta: bp.NgramTable(keys=arrays["keys"], counts=arrays["counts"], **meta))
#: the ``ngram_model`` stage: a :class:`~tokenizer.trainers.bytepiece.NgramModel`
NGRAM_MODEL = StageCodec(
    "ngram_model",
    lambda value: ({"keys": value.keys, "log_probs": value.log_probs},
                   {"order": int(value.order), "ensure_unicode": bool(value.ensure_unicode)}),
    lambda arrays, meta: bp.NgramModel(keys=arrays["keys"], log_probs=arrays["log_probs"], order=meta["order"],
                                       ensure_unicode=meta["ensure_unicode"]))
#: the ``candidates`` stage: ``(pieces, counts, what the memory bound dropped, what was set aside)``
CANDIDATES = StageCodec(
    "candidates",
    lambda value: (packed_arrays(value[0], value[1]), {"bound": value[2], "set_aside": value[3]}),
    lambda arrays, meta: (unpack(arrays["data"], arrays["offsets"]), arrays["counts"], meta["bound"],
                          meta["set_aside"]))
#: the ``prune`` stage: ``{vocab size: (pieces, counts)}``
PRUNED = StageCodec(
    "pruned",
    lambda value: ({k: v for size, (pieces, counts) in value.items()
                    for k, v in packed_arrays(pieces, counts, f"{size}_").items()},
                   {"sizes": sorted(int(s) for s in value)}),
    _decode_pruned)


# ---------------------------------------------------------------------------------------------- the whole job
@dataclass
class TrainResult:
    models: dict  # vocab_size -> tokenizer.model.Model
    stages: list[StageReport]
    fingerprint: str
    documents: int
    bounds: dict = field(default_factory=dict)  # table name -> what the memory bound did


def train_bytepiece(engine, settings: bp.TrainSettings, *, provenance: dict | None = None,
                    progress: Callable[[str], None] = lambda message: None,
                    shard_bytes: int = SHARD_BYTES, workdir=None, limit: int | None = None) -> TrainResult:
    """Train BytePiece models (one per ``settings.vocab_sizes``) on the documents an engine read
    (:mod:`pipelines.train.engine`).

    ``progress`` receives one line per stage. Raises :class:`InputError` for a corpus without text.
    ``workdir`` (a :class:`pipelines.train.workdir.WorkDir`) persists every stage's output and loads the stages a
    previous run with the same key finished (ngrams, ngram_model, candidates, prune, refine_em_SIZE, models).
    ``limit``: at most this many n-grams and pieces come back from a count (the most frequent; None: no bound);
    what it dropped is in the result's ``bounds`` and, when it dropped anything, in the models' provenance.
    """
    settings.validate()
    log = StageLog(workdir, progress)
    work, stage = log.work, log.add

    started = time.perf_counter()
    progress("[ngrams] counting byte n-grams (order %d), then reducing" % settings.order)
    engine.label("ngrams")
    ngrams, resumed = work.run("ngrams", lambda: reduce_ngrams(engine, settings, shard_bytes, limit), NGRAM_TABLE)
    if ngrams.chunk_bytes == 0:
        raise InputError("the corpus has no text (every document is empty): check --input and --text-column")
    stage("ngrams", started, resumed, documents=ngrams.documents, chunks=ngrams.chunks, bytes=ngrams.chunk_bytes,
          distinct_ngrams=ngrams.distinct_ngrams, kept_ngrams=len(ngrams.keys),
          dropped_by_bound=ngrams.bound.get("dropped_entries", 0))

    started = time.perf_counter()
    lm, resumed = work.run("ngram_model", lambda: bp.build_ngram_model(ngrams.keys, ngrams.counts, settings),
                           NGRAM_MODEL)
    stage("ngram_model", started, resumed, entries=len(lm.keys))
    ngrams = dataclasses.replace(ngrams, keys=np.zeros(0, np.int64), counts=np.zeros(0, np.int64))  # now in lm

    started = time.perf_counter()
    progress("[candidates] segmenting every chunk with the n-gram model; rare pieces re-segmented onto the "
             "candidates where they were counted")
    engine.label("candidates")
    (pieces, counts, pieces_bound, set_aside), resumed = work.run(
        "candidates", lambda: reduce_pieces(engine, lm, settings, shard_bytes, limit), CANDIDATES)
    lm = None  # the n-gram model's last use: the pruning below runs without it
    stage("candidates", started, resumed, candidate_pieces=len(pieces),
          distinct_pieces=set_aside["distinct_pieces"],
          set_aside_pieces=set_aside["pieces"], dropped_by_bound=pieces_bound.get("dropped_entries", 0))
    bounds = {"ngrams": ngrams.bound, "pieces": pieces_bound}

    started = time.perf_counter()
    pruned, resumed = work.run("prune", lambda: bp.prune_candidates(pieces, counts, settings), PRUNED)
    specials = len(settings.special_tokens)  # each model's vocab: its pieces (all 256 bytes among them), then these
    stage("prune", started, resumed,
          **{f"vocab_{size}": len(p) + specials for size, (p, _) in sorted(pruned.items())})

    final = {}
    for vocab_size, (kept, kept_counts) in sorted(pruned.items()):
        if settings.refine_em_rounds:
            started = time.perf_counter()
            engine.label(f"refine_em_{vocab_size}")

            def refine(kept=kept, kept_counts=kept_counts):
                return refine_em_rounds(engine, kept, kept_counts, settings,
                                        vocab_size - len(settings.special_tokens), shard_bytes)

            (kept, kept_counts), resumed = work.run(f"refine_em_{vocab_size}", refine, PIECES)
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
    models, resumed = work.run("models", build_models, MODELS)
    stage("models", started, resumed, models=len(models))
    return TrainResult(models=models, stages=log.reports, fingerprint=ngrams.fingerprint,
                       documents=ngrams.documents, bounds=bounds)
