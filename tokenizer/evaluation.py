"""Measuring models on documents, in this process (no Spark): the held-out figure ``shardpiece train`` reports
(:func:`bytes_per_token`) and the figures ``shardpiece evaluate`` compares models by (:func:`measure`).

What :func:`measure` reports for one model on one list of documents (each a ``bytes`` object, e.g. a line):

- ``bytes_per_token``: the documents' bytes over the ids they encode to (no BOS/EOS added);
- ``tokens_per_word``: ids per whitespace-separated word, or per character for text without spaces: an input whose
  whitespace words average more than :data:`LONGEST_MEAN_WORD` characters (Chinese, Japanese, Thai) is measured per
  character (UTF-8 characters), and ``word_unit`` says which (``"word"`` or ``"character"``);
- ``vocab_used``: the share of the vocabulary's ids (``vocab_size``, special ids included) that occur at least once;
- ``unknown_rate``: the share of the ids that are the unknown piece or a byte-fallback piece (``<0xAB>``);
- ``round_trip``: every document decodes back to its exact bytes;
- ``encode_mb_per_s``: the documents' bytes (10**6 a MB) over the seconds one thread takes to encode them all,
  after a warm-up encode of the first documents (so a first use's kernel compilation is not counted).

Models are what :func:`load_evaluated_model` reads: a shardpiece model, a SentencePiece ``.model``, a BytePiece JSON,
a Hugging Face ``tokenizer.json`` or the folder holding one, and tiktoken ``.tiktoken`` files with a pre-tokenizer
pattern (``FILE.tiktoken:gpt2``, :mod:`tokenizer.interop.tiktoken_files`).

Example (hand-checkable): a byte-level model with no learned piece on the one document ``b"ab cd"`` gives 5 ids:
``bytes_per_token`` 1.0, 2 whitespace words so ``tokens_per_word`` 2.5 (``word_unit`` ``"word"``), 5 distinct ids.
"""

from __future__ import annotations

import time
from typing import Sequence

from tokenizer.interop.tiktoken_files import TIKTOKEN_SUFFIX, split_tiktoken_pattern

#: an input whose whitespace-separated words average more characters than this is text without spaces: its
#: tokens_per_word is per character
LONGEST_MEAN_WORD = 10
#: the documents encoded before the timed encode: the first ones, up to this many bytes (at least one document)
WARM_UP_BYTES = 1 << 16


def bytes_per_token(model_path: str, texts: Sequence[bytes]) -> dict:
    """Encode ``texts`` with the model file and report ``{documents, bytes, tokens, bytes_per_token, lossless}``.

    ``lossless`` is true when every text decodes back to its exact bytes. ``bytes_per_token`` is ``None`` for no
    text. Example: a byte-level model with no learned pieces gives exactly 1.0 bytes per token.
    """
    from tokenizer.core import Tokenizer

    tokenizer = Tokenizer.load(model_path)
    texts = [bytes(t) for t in texts]
    encoded = tokenizer.encode_batch(texts, num_threads=1) if texts else []
    n_bytes = sum(len(t) for t in texts)
    n_tokens = sum(len(ids) for ids in encoded)
    return {
        "documents": len(texts),
        "bytes": n_bytes,
        "tokens": n_tokens,
        "bytes_per_token": round(n_bytes / n_tokens, 4) if n_tokens else None,
        "lossless": round_trips(tokenizer, texts, encoded),
    }


def round_trips(tokenizer, texts: Sequence[bytes], encoded: Sequence[Sequence[int]]) -> bool:
    """True when every text decodes back from its ids to its exact bytes (``decode_bytes(ids) == text``)."""
    return all(tokenizer.decode_bytes(ids) == text for ids, text in zip(encoded, texts))


def count_words(texts: Sequence[bytes]) -> tuple[int, str]:
    """``(count, unit)``: the texts' whitespace-separated words with unit ``"word"``, or, when those words average
    more than :data:`LONGEST_MEAN_WORD` characters (text without spaces), their UTF-8 characters with unit
    ``"character"``. ``count_words([b"ab cd"]) == (2, "word")``;
    ``count_words(["これは日本語の文章です".encode()] * 2) == (22, "character")`` (one 11-character word per text)."""
    import numpy as np

    words = sum(len(text.split()) for text in texts)
    data = np.frombuffer(b"".join(texts), dtype=np.uint8)
    characters = len(data) - int(np.count_nonzero((data & 0xC0) == 0x80))  # continuation bytes start no character
    if words and characters <= LONGEST_MEAN_WORD * words:
        return words, "word"
    return characters, "character"


def encode_timed(tokenizer, texts: list[bytes]) -> tuple[list[list[int]], float]:
    """``(ids of each text, seconds)``: the texts encoded on one thread, timed after a warm-up encode of the first
    texts (up to :data:`WARM_UP_BYTES`)."""
    warm, size = 0, 0
    while warm < len(texts) and (warm == 0 or size + len(texts[warm]) <= WARM_UP_BYTES):
        size += len(texts[warm])
        warm += 1
    if warm:
        tokenizer.encode_batch(texts[:warm], num_threads=1)
    started = time.perf_counter()
    encoded = tokenizer.encode_batch(texts, num_threads=1) if texts else []
    return encoded, time.perf_counter() - started


def measure(tokenizer, texts: Sequence[bytes]) -> dict:
    """The figures of the module docstring for ``tokenizer`` (a :class:`~tokenizer.core.Tokenizer`) on ``texts``,
    plus ``documents``, ``bytes``, ``tokens``, ``words`` (in ``word_unit``) and ``seconds`` (the timed encode).
    Ratios with a zero denominator are ``None``. Example: the byte-level model of the module docstring on
    ``[b"ab cd"]`` -> ``bytes_per_token == 1.0``, ``tokens_per_word == 2.5``, ``vocab_used == 5 / 256``."""
    import numpy as np

    from tokenizer.piece_types import PieceType

    texts = [bytes(t) for t in texts]
    encoded, seconds = encode_timed(tokenizer, texts)
    n_bytes = sum(len(t) for t in texts)
    n_tokens = sum(len(ids) for ids in encoded)
    ids = np.fromiter((i for row in encoded for i in row), dtype=np.int64, count=n_tokens)
    counts = np.bincount(ids, minlength=tokenizer.vocab_size)
    types = np.asarray(tokenizer.model.types)
    unknown = int(counts[(types == PieceType.UNKNOWN) | (types == PieceType.BYTE)].sum())
    words, unit = count_words(texts)
    return {
        "documents": len(texts),
        "bytes": n_bytes,
        "tokens": n_tokens,
        "words": words,
        "word_unit": unit,
        "seconds": seconds,
        "bytes_per_token": n_bytes / n_tokens if n_tokens else None,
        "tokens_per_word": n_tokens / words if words else None,
        "vocab_used": int(np.count_nonzero(counts)) / tokenizer.vocab_size,
        "unknown_rate": unknown / n_tokens if n_tokens else None,
        "round_trip": round_trips(tokenizer, texts, encoded),
        "encode_mb_per_s": n_bytes / seconds / 1e6 if seconds > 0 else None,
    }


# ---------------------------------------------------------------------------------------------- models
def load_evaluated_model(spec: str, tiktoken_pattern: str | None = None):
    """A :class:`~tokenizer.core.Tokenizer` for a ``--model`` value: whatever ``Tokenizer.load`` reads (a model file,
    a Hugging Face tokenizer folder, ``FILE.tiktoken:PATTERN``), a ``.tiktoken`` file without a pattern taking
    ``tiktoken_pattern``. Raises :class:`ModelFileError` or :class:`ConfigError` with the fix.
    ``load_evaluated_model("out/hf")`` reads ``out/hf/tokenizer.json``."""
    from tokenizer.core import Tokenizer
    from tokenizer.errors import ConfigError
    from tokenizer.interop.tiktoken_files import PATTERNS

    path, pattern = split_tiktoken_pattern(spec)
    if path.endswith(TIKTOKEN_SUFFIX) and pattern is None:
        if tiktoken_pattern is None:
            raise ConfigError(f"--model {spec}: a .tiktoken file needs its pre-tokenizer pattern: write "
                              f"{path}:PATTERN or give --tiktoken-pattern, PATTERN one of {', '.join(PATTERNS)}")
        spec = f"{path}:{tiktoken_pattern}"
    return Tokenizer.load(spec)


def describe_model(model) -> dict:
    """``{algorithm, format, vocab_size}`` of a :class:`~tokenizer.model.Model`: the algorithm it was trained with
    when its provenance says (``"bytepiece"``), else how it segments (``"unigram"`` or ``"bpe"``); the format it was
    read from (``"shardpiece"``, ``"sentencepiece"``, ``"tokenizer.json"``, ``"bytepiece"``, ``"tiktoken"``)."""
    provenance = model.provenance or {}
    source = provenance.get("imported_from") or provenance.get("source_format") or "shardpiece"
    return {"algorithm": provenance.get("algorithm", model.algorithm), "format": source.lstrip("."),
            "vocab_size": model.vocab_size}
