"""Real lines of the shipped sample corpus (``data/sample``) and small models of every kind trained on them, for
tests that need the same models in several files (the ``tokenizers`` fixture of ``conftest.py``)."""

from __future__ import annotations

import gzip
import os

from tokenizer import Tokenizer

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def sample_lines(count: int) -> list[bytes]:
    """The first ``count`` lines of each of the en, zh and ja samples, empty ones left out."""
    lines = []
    for name in ("en", "zh", "ja"):
        with gzip.open(os.path.join(REPO, "data", "sample", f"{name}.txt.gz"), "rb") as handle:
            lines.extend(line for line in handle.read().split(b"\n")[:count] if line)
    return lines


def sample_texts(count: int) -> list[str]:
    """:func:`sample_lines` as str (an invalid byte, should a sample hold one, as U+FFFD)."""
    return [line.decode("utf-8", "replace") for line in sample_lines(count)]


def sample_tokenizers() -> dict[str, Tokenizer]:
    """A 2,000-piece model of each kind (unigram, BytePiece, SentencePiece-style and byte-level BPE) trained on
    300 lines of each sample."""
    from tokenizer.trainers import bpe, bytepiece, unigram

    lines = sample_lines(300)
    return {
        "unigram": Tokenizer(unigram.train_unigram_local(lines, unigram.UnigramSettings(vocab_size=2000))),
        "bytepiece": Tokenizer(bytepiece.train_bytepiece_local(
            lines, bytepiece.TrainSettings(vocab_sizes=(2000,), min_count=2))[2000]),
        "bpe sentencepiece": Tokenizer(bpe.train_bpe_local(
            lines, bpe.BpeSettings(vocab_sizes=(2000,), pretokenizer="sentencepiece"))[2000]),
        "bpe byte_level": Tokenizer(bpe.train_bpe_local(lines, bpe.BpeSettings(vocab_sizes=(2000,)))[2000]),
    }
