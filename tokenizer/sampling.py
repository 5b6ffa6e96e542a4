"""Sampled encoding (``Tokenizer.encode(..., alpha=...)`` / ``dropout=...``): unigram sampling and BPE-dropout
over the stretches of one text, one random stream for the whole text.

A stretch is sampled by the kernels of :mod:`tokenizer.kernels.unigram` (``sample_into``: a segmentation drawn
with probability proportional to ``exp(alpha * score)``) or :mod:`tokenizer.kernels.bpe` (``piece_bpe_into`` with a
merge skipped with probability ``dropout``). Byte-level (regex pre-split) models refuse both. With ``alpha=0`` every
segmentation of ``b"ab"`` into pieces ``a``, ``b``, ``ab`` is equally likely: ``[a, b]`` or ``[ab]``.
"""

from __future__ import annotations

import math

import numpy as np

from tokenizer.errors import InputError


def encode_sampled(compiled, parts: list, alpha, dropout, seed) -> list[int]:
    """Sampled ids of ``parts``: normalized stretches (bytes), each sampled with one random stream, and the ids
    of added tokens between them (int), kept."""
    from tokenizer.kernels.random import new_state

    if compiled.byte_level is not None:
        raise InputError("alpha=/dropout= sampling is not available for byte_level (regex pre-split) models")
    if compiled.is_bpe:
        if alpha is not None:
            raise InputError("alpha= samples unigram segmentations; this is a BPE model: use dropout=")
        p = float(dropout)
        if not 0.0 <= p <= 1.0 or math.isnan(p):
            raise InputError(f"dropout={dropout!r} must be a probability in [0, 1]")
        from tokenizer.kernels.batch import bpe_work, piece_bpe_model
        from tokenizer.kernels.bpe import piece_bpe_into

        model, _ = piece_bpe_model(*compiled.record)

        def sample(array, n, rng, out):
            sym, nxt, prv, starts, cand, heap, steps, _, _, memo, _, _ = bpe_work(*compiled.work_arrays(n))
            return piece_bpe_into(*model, p, rng, array, 0, n, sym, nxt, prv, starts, cand, heap, memo, steps, out,
                                  0)
    else:
        if dropout is not None:
            raise InputError("dropout= applies to BPE models; this is a unigram model: use alpha=")
        a = float(alpha)
        if not math.isfinite(a) or a < 0:
            raise InputError(f"alpha={alpha!r} must be a finite number >= 0 (0 = uniform over segmentations)")
        from tokenizer.kernels.unigram import sample_into

        width = compiled.max_piece_length + 1

        def sample(array, n, rng, out):
            return sample_into(compiled.units, compiled.piece_score, compiled.byte_to_id, compiled.byte_mode,
                               compiled.split_after_newlines, compiled.unk_id, compiled.byte_fallback,
                               compiled.unk_score, a, rng, array, 0, n, np.empty(n + 1, np.float64),
                               np.empty(n + 1, np.int32), np.empty(width, np.int32), np.empty(width, np.int32),
                               np.empty(width, np.float64), out, 0)

    rng = new_state(seed)
    ids: list[int] = []
    for part in parts:
        if isinstance(part, int):
            ids.append(part)
            continue
        n = len(part)
        out = np.empty(n + 1, dtype=np.int32)
        total = sample(np.frombuffer(part, dtype=np.uint8), n, rng, out)
        if total < 0:
            raise InputError("the text contains characters the model cannot represent (no <unk> piece and no "
                             "byte fallback): use a byte-level or byte_fallback model, or remove them")
        ids.extend(out[:total].tolist())
    return ids

