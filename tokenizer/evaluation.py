"""Measuring a trained model on sample documents: bytes per token and the lossless round trip (no Spark)."""

from __future__ import annotations

from typing import Sequence


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
    lossless = all(tokenizer.decode_bytes(ids) == text for ids, text in zip(encoded, texts))
    return {
        "documents": len(texts),
        "bytes": n_bytes,
        "tokens": n_tokens,
        "bytes_per_token": round(n_bytes / n_tokens, 4) if n_tokens else None,
        "lossless": lossless,
    }
