"""Superword BPE's settings (:class:`tokenizer.trainers.bpe.BpeSettings` fields ``superword_*``): their checks and
the transition they set; its own module so that :mod:`tokenizer.trainers.bpe` checks them without importing the
trainer (:mod:`tokenizer.trainers.superword`). ``transition_size(BpeSettings(vocab_sizes=(1000,),
superword_transition=0.8))`` -> ``800``.
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
