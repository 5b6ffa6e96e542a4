"""The unigram trainer from a chunk table to a :class:`~tokenizer.model.Model`: :func:`train_from_chunks` (required
characters, seeds, the EM loop), SentencePiece's finalizing of the vocabulary and the model it becomes; and
:func:`train_unigram_local`, the whole trainer over sentences on one machine."""

from __future__ import annotations

import time
from typing import Callable, Iterable, Sequence

import numpy as np

from tokenizer._version import __version__
from tokenizer.errors import ConfigError, InputError
from tokenizer.memory import release_freed_memory
from tokenizer.model import (LATTICE_SUMS, SCORE_STEP_FLOAT32_SUMS, SCORE_STEP_FLOAT64_SUMS, Model, PieceType,
                             quantize_scores)
from tokenizer.normalizers.sentencepiece import DEFAULT_UNK_SURFACE
from tokenizer.packed import pack
from tokenizer.trainers.bpe import sort_chunks
from tokenizer.trainers.bytepiece.chunks import pack_texts
from tokenizer.trainers.unigram.chunks import ChunkSplitter
from tokenizer.trainers.unigram.loop import Checkpoints, EStepRunner, TrainReport, local_runner, run_em
from tokenizer.trainers.unigram.seeds import required_characters, seed_pieces
from tokenizer.trainers.unigram.settings import MIN_SCORE_PENALTY_DELTA, UnigramSettings


def finalize(pieces: list[bytes], scores: np.ndarray, required: Sequence[tuple[str, int]],
             settings: UnigramSettings) -> list[tuple[bytes, float]]:
    """SentencePiece's ``FinalizeSentencePieces``: required characters (missing ones at the minimum score plus a
    small penalty, frequent first), then the best pieces, sorted by score (ties by bytes)."""
    score_of = dict(zip(pieces, scores.tolist()))
    min_score = float(scores.min()) if len(scores) else 0.0
    final: dict[bytes, float] = {}
    penalty = 0.0
    if settings.variant == "byte":
        room = settings.vocab_size - 256 - len(settings.byte_specials())
        ranked = sorted(zip(pieces, scores.tolist()), key=lambda x: (-x[1], x[0]))
        chosen = [(p, s) for p, s in ranked if len(p) > 1][:room]
        byte_scores = {p: s for p, s in ranked if len(p) == 1}
        out = []
        for b in range(256):
            piece = bytes([b])
            if piece not in byte_scores:
                byte_scores[piece] = min_score + penalty
                penalty += MIN_SCORE_PENALTY_DELTA
            out.append((piece, byte_scores[piece]))
        return out + chosen
    for char, _ in sorted(required, key=lambda x: (-x[1], x[0])):
        piece = char.encode()
        if piece in score_of:
            final[piece] = score_of[piece]
        else:
            final[piece] = min_score + penalty
            penalty += MIN_SCORE_PENALTY_DELTA
    room = settings.vocab_size - len(settings.meta_pieces())
    for piece, score in sorted(zip(pieces, scores.tolist()), key=lambda x: (-x[1], x[0])):
        if piece in final:
            continue
        if len(final) >= room:
            break
        final[piece] = score
    return sorted(final.items(), key=lambda x: (-x[1], x[0]))


def build_model(final: list[tuple[bytes, float]], settings: UnigramSettings, provenance: dict | None = None) -> Model:
    """The :class:`Model` of finalized pieces: a SentencePiece-compatible unigram model (meta pieces at their
    ids, SentencePiece normalizer) or, for the byte variant, a lossless byte-level model."""
    info = {"shardpiece_version": __version__, "trainer": "unigram", "unigram_settings": settings.to_dict()}
    info.update(provenance or {})
    if settings.variant == "byte":
        byte_scores = quantize_scores([s for _, s in final[:256]], SCORE_STEP_FLOAT64_SUMS).astype(np.float32)
        rest = final[256:]
        return Model.byte_level([p for p, _ in rest], quantize_scores([s for _, s in rest], SCORE_STEP_FLOAT64_SUMS),
                                byte_scores=byte_scores,
                                specials=settings.byte_specials(), provenance={**info, LATTICE_SUMS: "float64"})
    meta = settings.meta_pieces()
    pieces: list[bytes] = []
    scores: list[float] = []
    types: list[int] = []
    position = 0
    size = len(meta) + len(final)
    for id_ in range(size):
        if id_ in meta:
            piece, kind = meta[id_]
            pieces.append(piece.encode())
            scores.append(0.0)
            types.append(int(kind))
        else:
            piece, score = final[position]
            position += 1
            pieces.append(piece)
            scores.append(float(quantize_scores([score], SCORE_STEP_FLOAT32_SUMS)[0]))
            types.append(int(PieceType.NORMAL))
    ids = {p: i for i, p in enumerate(pieces)}

    def special(piece: str) -> int:
        i = ids.get(piece.encode(), -1)
        return i if i >= 0 and types[i] == PieceType.CONTROL else -1

    info["sentencepiece_trainer_spec"] = {
        "model_type": "unigram", "vocab_size": size, "character_coverage": settings.character_coverage,
        "byte_fallback": settings.byte_fallback, "unk_id": settings.unk_id, "bos_id": settings.bos_id,
        "eos_id": settings.eos_id, "pad_id": settings.pad_id, "unk_piece": settings.unk_piece,
        "bos_piece": settings.bos_piece, "eos_piece": settings.eos_piece, "pad_piece": settings.pad_piece,
        "treat_whitespace_as_suffix": settings.treat_whitespace_as_suffix,
        "max_sentencepiece_length": settings.max_sentencepiece_length,
        "split_by_whitespace": settings.split_by_whitespace,
        "user_defined_symbols": list(settings.user_defined_symbols),
        "control_symbols": list(settings.control_symbols),
    }
    info["sentencepiece_normalizer"] = settings.normalizer_name
    return Model(
        pieces=pieces, scores=np.asarray(scores, np.float32), types=np.asarray(types, np.int8), algorithm="unigram",
        normalizer={"name": "precompiled"} if settings.charsmap else {"name": "identity"},
        charsmap=settings.charsmap,
        pretokenizer={"name": "sentencepiece", "add_dummy_prefix": settings.add_dummy_prefix,
                      "remove_extra_whitespaces": settings.remove_extra_whitespaces, "escape_whitespaces": True,
                      "treat_whitespace_as_suffix": settings.treat_whitespace_as_suffix,
                      "unk_surface": DEFAULT_UNK_SURFACE},
        unk_id=settings.unk_id, bos_id=special(settings.bos_piece), eos_id=special(settings.eos_piece),
        pad_id=special(settings.pad_piece), byte_fallback=settings.byte_fallback, provenance=info,
    )


def train_from_chunks(chunks: list[bytes], counts: np.ndarray, settings: UnigramSettings,
                      runner: EStepRunner | None = None, provenance: dict | None = None,
                      progress: Callable[[str], None] = lambda m: None,
                      report: TrainReport | None = None, threads: int = 1,
                      checkpoints: Checkpoints | None = None) -> Model:
    """Train from a chunk table (sorted chunks, int64 counts); ``runner`` defaults to the local E-step on
    ``threads`` threads (the model's bytes do not depend on ``threads``). ``checkpoints`` keeps the EM loop's
    state after each pruning round (:func:`run_em`); a run that finds one skips the seeds and goes on from it."""
    settings.validate()
    if not chunks:
        raise InputError("the corpus has no text to train on (every sentence is empty or was skipped)")
    report = report if report is not None else TrainReport()
    counts = np.asarray(counts, np.int64)
    if settings.variant == "byte":
        required = [(b, 0) for b in range(256)]
        data, _ = pack(chunks)
        byte_counts = np.zeros(256, np.int64)
        offsets = pack(chunks)[1]
        np.add.at(byte_counts, data, np.repeat(counts, np.diff(offsets)))
        required = [(b, int(byte_counts[b])) for b in range(256) if byte_counts[b] > 0]
    else:
        required, _ = required_characters(chunks, counts, settings.character_coverage)
        if len(required) + len(settings.meta_pieces()) > settings.vocab_size:
            raise ConfigError(
                f"vocab_size={settings.vocab_size} is smaller than the {len(required)} required characters plus "
                f"{len(settings.meta_pieces())} meta pieces: raise --vocab-size or lower --character-coverage"
                + (" (byte fallback's 256 byte pieces are among the meta pieces)" if settings.byte_fallback else ""))
    report.required_characters = len(required)
    checkpoints = checkpoints or Checkpoints()
    pieces, scores = [], np.zeros(0)
    if checkpoints.load() is None:
        started = time.perf_counter()
        pieces, scores = seed_pieces(chunks, counts, settings, required, threads=threads)
        release_freed_memory()  # the seed step's work arrays, before the E-steps allocate theirs
        report.seed_pieces = len(pieces)
        progress(f"[seed] {len(pieces):,} seed pieces ({len(required):,} characters) in "
                 f"{time.perf_counter() - started:.1f} s")
    runner = runner or local_runner(chunks, counts, threads)
    sentence_total = int(counts.sum())
    kept, kept_scores = run_em(pieces, scores, runner, settings, sentence_total, progress, report, threads,
                               checkpoints)
    started = time.perf_counter()
    final = finalize(kept, kept_scores, required, settings)
    model = build_model(final, settings, provenance)
    progress(f"[final] {model.vocab_size:,} pieces finalized and the model built in "
             f"{time.perf_counter() - started:.1f} s")
    return model


def train_unigram_local(texts: Iterable[bytes | str], settings: UnigramSettings, provenance: dict | None = None,
                        progress: Callable[[str], None] = lambda m: None, threads: int = 1) -> Model:
    """Train on one machine from an iterable of sentences (str or bytes); E-steps on ``threads`` threads."""
    settings.validate()
    chunk_data, chunk_offsets, counts, _ = ChunkSplitter(settings).count(*pack_texts(texts))
    chunks, chunk_counts = sort_chunks(chunk_data, chunk_offsets, counts)
    return train_from_chunks(chunks, chunk_counts, settings, provenance=provenance, progress=progress,
                             threads=threads)
