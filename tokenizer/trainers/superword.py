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

from tokenizer.errors import ConfigError


def validate_superword(settings) -> None:
    """Raise :class:`ConfigError` saying what to change when the superword settings of a
    :class:`~tokenizer.trainers.bpe.BpeSettings` do not fit."""
    from tokenizer.kernels.pretokenize import PATTERNS

    transition = settings.superword_transition
    if settings.pretokenizer != "byte_level":
        raise ConfigError("superword_transition needs pretokenizer byte_level: superword BPE merges across the "
                          "spaces of a byte-level model")
    if isinstance(transition, bool) or not isinstance(transition, (int, float, np.integer, np.floating)) \
            or not 0 < transition or (transition >= 1 and transition != int(transition)):
        raise ConfigError(f"superword_transition={transition!r}: give a share of the vocabulary below 1 (0.8) or a "
                          "vocabulary size (an integer)")
    largest, floor = max(settings.vocab_sizes), 256 + len(settings.special_tokens)
    if not floor <= transition_size(settings) < largest:
        raise ConfigError(f"superword_transition={transition!r} puts the transition at {transition_size(settings)} "
                          f"pieces: it must lie from {floor} (the bytes and special tokens) to below the largest "
                          f"vocab size {largest}")
    if settings.superword_pattern not in PATTERNS or settings.superword_pattern == settings.pattern:
        raise ConfigError(f"superword_pattern={settings.superword_pattern!r}: use a coarser split than pattern "
                          f"{settings.pattern!r}, one of {sorted(set(PATTERNS) - {settings.pattern})}")
    words = settings.superword_max_words
    if isinstance(words, bool) or not isinstance(words, (int, np.integer)) or words < 1:
        raise ConfigError(f"superword_max_words={words!r} is invalid: use an integer >= 1")


def transition_size(settings) -> int:
    """The vocabulary size at the transition: ``superword_transition`` itself, or that share of the largest vocab
    size (rounded). ``transition_size(BpeSettings(vocab_sizes=(1000,), superword_transition=0.8))`` -> ``800``."""
    transition = settings.superword_transition
    if transition < 1:
        return int(round(float(transition) * max(settings.vocab_sizes)))
    return int(transition)


def stage_one_merges(settings) -> int:
    """How many merges the first stage learns: the transition's size less the bytes and special tokens."""
    return transition_size(settings) - 256 - len(settings.special_tokens)


def stage_two_settings(settings):
    """The settings the second stage counts its chunks with: plain BPE settings whose pattern is the coarse one
    (what :func:`tokenizer.trainers.bpe.count_chunks` and the engines' counters take)."""
    return dataclasses.replace(settings, pattern=settings.superword_pattern, superword_transition=None)


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
