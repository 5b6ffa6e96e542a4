"""Pure-Python twins of :mod:`tokenizer.kernels.chunk_chars` (strict UTF-8 decoding with Python's codec; slow, for
tests).

    >>> ref_chars_to_symbols([b"ab\\xff"], {ord("a"): 300})
    [[300, 98, 255]]
"""

from __future__ import annotations

from tokenizer.twins.utf8 import ref_utf8_chars


def ref_weighted_char_counts(spans: list[bytes], weights: list[int]) -> tuple[dict[int, int], int]:
    """Twin of ``weighted_char_counts``: ``({code point: weighted count}, weighted invalid bytes)``."""
    out: dict[int, int] = {}
    invalid = 0
    for span, weight in zip(spans, weights):
        for piece in _utf8_units(span):
            if len(piece) == 1 and piece[0] >= 0x80:
                invalid += weight
            else:
                cp = ord(piece.decode("utf-8"))
                out[cp] = out.get(cp, 0) + weight
    return out, invalid


def ref_chars_to_symbols(spans: list[bytes], char_symbol: dict[int, int]) -> list[list[int]]:
    """Twin of ``chars_to_symbols``: mapped characters become their id, everything else its bytes."""
    out = []
    for span in spans:
        symbols = []
        for piece in _utf8_units(span):
            cp = ord(piece.decode("utf-8")) if not (len(piece) == 1 and piece[0] >= 0x80) else -1
            if cp >= 0 and cp in char_symbol:
                symbols.append(char_symbol[cp])
            else:
                symbols.extend(piece)
        out.append(symbols)
    return out


def _utf8_units(data: bytes) -> list[bytes]:
    """Valid UTF-8 characters, and every other byte alone (strict decoding, as ``decode_char``)."""
    return [piece for piece, _ in ref_utf8_chars(data)]
