"""BytePiece training's last step and the whole trainer on one machine: the byte-level
:class:`~tokenizer.model.Model` of the final pieces (:func:`build_model`), BytePiece's own JSON layout, the corpus
fingerprint, and :func:`train_bytepiece_local`, which runs every step in order."""

from __future__ import annotations

import hashlib
from typing import Sequence

import numpy as np

from tokenizer._version import __version__
from tokenizer.errors import InputError
from tokenizer.model import LATTICE_SUMS, SCORE_STEP_FLOAT64_SUMS, Model, quantize_scores
from tokenizer.trainers.bytepiece.chunks import chunk_texts, pack_texts
from tokenizer.trainers.bytepiece.ngrams import build_ngram_model, count_ngrams, empty_counts, merge_counts
from tokenizer.trainers.bytepiece.pieces import (empty_piece_counts, merge_piece_counts, piece_list,
                                                 segment_and_count_pieces)
from tokenizer.trainers.bytepiece.pruning import prune_pieces
from tokenizer.trainers.bytepiece.refine import refine_em
from tokenizer.trainers.bytepiece.settings import TrainSettings


def build_model(pieces, counts, settings: TrainSettings, provenance: dict | None = None) -> Model:
    """The byte-level unigram :class:`~tokenizer.model.Model` of the final pieces (driver).

    ``pieces`` must hold all 256 single bytes. ids 0..255 = bytes; then multi-byte pieces sorted by (length, bytes);
    then ``settings.special_tokens`` (CONTROL). Scores: ``log(count / sum of counts)`` (float32 in the file).
    Provenance: shardpiece version, ``algorithm: "bytepiece"``, the settings, plus the caller's entries (e.g. a
    ``corpus_fingerprint``).
    """
    if isinstance(pieces, tuple):
        pieces = piece_list(*pieces)
    pieces = [bytes(p) for p in pieces]
    counts = np.asarray(counts, dtype=np.int64)
    if len(pieces) != len(counts) or len(set(pieces)) != len(pieces):
        raise InputError("build_model needs distinct pieces and one count per piece")
    if np.any(counts <= 0):
        raise InputError("every piece needs a positive count: prune zero-count pieces before building the model")
    by_piece = dict(zip(pieces, counts.tolist()))
    missing = [b for b in range(256) if bytes([b]) not in by_piece]
    if missing:
        raise InputError(f"{len(missing)} single bytes are missing (e.g. {missing[0]}): pass prune_pieces' output, "
                         "which holds all 256")
    total = np.log(np.float64(counts.sum()))
    multi = sorted((p for p in pieces if len(p) > 1), key=lambda p: (len(p), p))
    byte_scores = quantize_scores(np.log(np.array([by_piece[bytes([b])] for b in range(256)], np.float64)) - total,
                                  SCORE_STEP_FLOAT64_SUMS)
    scores = quantize_scores(np.log(np.array([by_piece[p] for p in multi], np.float64)) - total,
                             SCORE_STEP_FLOAT64_SUMS)
    info = {"shardpiece_version": __version__, "algorithm": "bytepiece", "settings": settings.to_dict(),
            "num_pieces": len(pieces), LATTICE_SUMS: "float64"}
    info.update(provenance or {})
    return Model.byte_level(multi, scores, specials=tuple(settings.special_tokens), algorithm="unigram",
                            normalizer={"name": settings.normalization}, provenance=info,
                            byte_scores=byte_scores)


def corpus_fingerprint(texts: Sequence[bytes]) -> str:
    """SHA-256 over the texts (each length-prefixed), hex: a run is keyed by its exact input."""
    digest = hashlib.sha256()
    for text in texts:
        digest.update(len(text).to_bytes(8, "little"))
        digest.update(text)
    return "sha256:" + digest.hexdigest()


def train_bytepiece_local(texts: Sequence[bytes | str], settings: TrainSettings, shard_bytes: int = 8 << 20,
                          provenance: dict | None = None) -> dict[int, Model]:
    """The whole BytePiece pipeline on one machine, through the same per-shard and driver functions a Spark job
    calls; returns ``{vocab_size: Model}``. Shards of about ``shard_bytes`` only change speed, never the result.

    Example: ``train_bytepiece_local(["abcabc"] * 10, TrainSettings(min_count=2, vocab_sizes=(300,)))``.
    """
    settings.validate()
    data_all, offsets_all = pack_texts(texts)
    if len(data_all) == 0:
        raise InputError("the corpus has no text: pass at least one non-empty document")
    fingerprint = corpus_fingerprint([data_all[offsets_all[i]:offsets_all[i + 1]].tobytes()
                                      for i in range(len(offsets_all) - 1)])
    shards = []
    bounds = [0]
    for i in range(1, len(offsets_all)):
        if offsets_all[i] - offsets_all[bounds[-1]] >= shard_bytes or i == len(offsets_all) - 1:
            bounds.append(i)
    for a, b in zip(bounds, bounds[1:]):
        shard_offsets = offsets_all[a:b + 1] - offsets_all[a]
        shards.append(chunk_texts(data_all[offsets_all[a]:offsets_all[b]], shard_offsets, settings))
    ngrams = empty_counts()
    for data, offsets in shards:
        ngrams = merge_counts(ngrams, count_ngrams(data, offsets, settings.order))
    lm = build_ngram_model(*ngrams, settings)
    piece_counts = empty_piece_counts()
    for data, offsets in shards:
        piece_counts = merge_piece_counts(piece_counts, segment_and_count_pieces(lm, data, offsets, settings))
    pruned = prune_pieces(piece_list(piece_counts[0], piece_counts[1]), piece_counts[2], settings)
    models = {}
    for vocab_size, (pieces, counts) in pruned.items():
        if settings.refine_em_rounds:
            pieces, counts = refine_em(pieces, counts, shards, settings,
                                       capacity=vocab_size - len(settings.special_tokens))
        info = {"corpus_fingerprint": fingerprint, "vocab_size_requested": vocab_size}
        info.update(provenance or {})
        models[vocab_size] = build_model(pieces, counts, settings, info)
    return models
