"""Superword BPE: byte-level BPE whose later merges may cross the spaces between words (SuperBPE, arXiv 2503.13423).

Two stages over the same documents, each a chunk count table reduced exactly as plain BPE's is
(:mod:`tokenizer.trainers.chunk_table`), each fitted on the driver::

    stage 1: chunks of the fine pattern (gpt2 / llama3)  -> the first T - 256 - specials merges (T: the transition)
    stage 2: chunks of the coarse pattern (superword)    -> every chunk encoded with the stage-1 merges (merge
             replay, lowest rank first, as the encoder does), then merging goes on from those pieces up to the
             largest vocab size, a piece holding at most ``superword_max_words`` words

The coarse pattern (:mod:`tokenizer.kernels.superword_split`) keeps single spaces and single punctuation inside a
chunk and cuts at numbers, punctuation runs and line breaks, so second-stage pieces such as ``" of the"`` span
words but never lines. A word is counted at each space (GPT-2-style pieces carry the space before their word:
``" of the"`` holds two, ``"of the"`` one), so the cap is a sum the merge kernel checks per pair.

The model lists all merges in order and names the coarse pattern as its pre-split: it encodes by splitting with the
coarse pattern and replaying every merge in rank order, first-stage ones included, which is how the published
SuperBPE tokenizers encode (a ``tokenizer.json`` with the coarse ``Split`` and one merges list), so the Hugging Face
export gives the same ids. The second stage's starting pieces are exactly what that encoder makes of each chunk
with the first-stage merges, so training and encoding agree.

Example (hand-checkable): with the transition at 256 + 1 merge, ``"a b a b"`` learns ``" b"`` (fine chunks
``a``, `` b``, `` a``, `` b``: pairs ``(" ", "b")`` x2 and ``(" ", "a")`` x2, tie to the smaller ids); the coarse
chunk is the whole text, encoded ``a| b| |a| b``, whose best pair ``(a, " b")`` (x2) is merged next.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from tokenizer.trainers.superword_settings import stage_one_merges, stage_two_settings


def space_counts(pieces: list[bytes]) -> np.ndarray:
    """int64 per piece: the spaces (0x20) it holds, its words as the second stage counts them.
    ``space_counts([b" of the", b"a"])`` -> ``[2, 0]``."""
    return np.fromiter((piece.count(b" ") for piece in pieces), np.int64, len(pieces))


def encode_chunks(stage_one, chunks, settings) -> tuple[np.ndarray, np.ndarray]:
    """``(symbols int32, offsets int64)``: every chunk (a :class:`~tokenizer.packed.PackedBytes`) encoded with the
    first-stage merges and no pre-split, by the model encoder (merge replay); ids are ``256 + rank`` for merged
    pieces, the byte for a byte. Example: merges ``a``+``b`` only, chunks ``[b"abc"]`` -> ``[256, 99]``, ``[0, 2]``."""
    import pyarrow as pa

    from tokenizer.core import Tokenizer
    from tokenizer.trainers.bpe import build_models

    size = 256 + len(stage_one.left)
    plain = dataclasses.replace(settings, vocab_sizes=(size,), special_tokens=(), superword_transition=None)
    model = build_models(stage_one, plain)[size]
    model.pretokenizer = {"name": "byte_level", "pattern": None}
    offsets = np.asarray(chunks.offsets, np.int64)
    data = np.ascontiguousarray(chunks.data[offsets[0]:offsets[-1]], np.uint8)
    texts = pa.Array.from_buffers(pa.large_binary(), len(offsets) - 1,
                                  [None, pa.py_buffer(offsets - offsets[0]), pa.py_buffer(data)])
    encoded = Tokenizer(model).encode_batch(texts)
    ids = encoded.values.to_numpy(zero_copy_only=False).astype(np.int32)
    return ids, np.asarray(encoded.offsets.to_numpy(zero_copy_only=False), np.int64)


def learn_superword(stage_one, chunks, counts, settings):
    """All merges of a superword model (:class:`~tokenizer.trainers.bpe.Merges`): the first stage's, then the
    second stage's, learned over the coarse chunk table ``chunks`` (sorted, as :func:`tokenizer.trainers.bpe.
    sort_chunks` gives it) and its ``counts``, up to the largest vocab size."""
    from tokenizer.kernels.bpe_merges import learn_merges
    from tokenizer.kernels.bpe_pair_rules import NO_SPACE, SCRIPT_ANY
    from tokenizer.trainers.bpe import Merges, _symbol_strings

    settings.validate()
    symbols, offsets = encode_chunks(stage_one, chunks, settings)
    first_id = 256 + len(stage_one.left)
    wanted = max(settings.vocab_sizes) - len(settings.special_tokens) - first_id
    left, right, merged = learn_merges(
        symbols, offsets, np.asarray(counts, np.int64), space_counts(stage_one.pieces()),
        np.full(first_id, SCRIPT_ANY, np.int64), np.full(first_id, SCRIPT_ANY, np.int64),
        np.full(first_id, NO_SPACE, np.int64), max(0, wanted), settings.min_count, settings.superword_max_words,
        *_symbol_strings(stage_one.left, stage_one.right), False)
    return Merges(np.concatenate([stage_one.left, left]), np.concatenate([stage_one.right, right]),
                  np.concatenate([stage_one.counts, merged]))


def train_local(texts, settings, provenance: dict | None = None) -> dict:
    """:func:`tokenizer.trainers.bpe.train_bpe_local` for plain and superword settings alike: ``{vocab size:
    Model}`` of an in-memory corpus (what the training job computes)."""
    from tokenizer.errors import InputError
    from tokenizer.trainers.bpe import (build_models, count_chunks, learn_bpe, pack_texts, sort_chunks,
                                        train_bpe_local)

    if settings.superword_transition is None:
        return train_bpe_local(texts, settings, provenance)
    settings.validate()
    packed = pack_texts(texts)
    chunks, counts = sort_chunks(*count_chunks(*packed, settings))
    if not chunks:
        raise InputError("the corpus has no text (every document is empty)")
    stage_one = learn_bpe(chunks, counts, settings, stage_one_merges(settings))
    coarse, coarse_counts = sort_chunks(*count_chunks(*packed, stage_two_settings(settings)))
    return build_models(learn_superword(stage_one, coarse, coarse_counts, settings), settings, provenance)
