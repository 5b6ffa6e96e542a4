"""Pure-Python twins of the BPE training kernels of :mod:`tokenizer.kernels.chunk_count`,
:mod:`tokenizer.kernels.chunk_chars`, :mod:`tokenizer.kernels.bpe_pair_rules` and :mod:`tokenizer.kernels.bpe_merges`
(recount everything at every step; slow, for tests).

    >>> ref_learn_merges([[0, 1, 0, 1], [0, 1]], [1, 2], [1, 1], 5, 1, 99)
    [(0, 1, 4), (2, 2, 1)]
    >>> ref_learn_merges([[0, 1], [1, 0]], [1, 1], [1, 1], 1, 1, 99)                        # smaller ids
    [(0, 1, 1)]
    >>> ref_learn_merges([[0, 1], [1, 0]], [1, 1], [1, 1], 1, 1, 99, symbol_bytes=[b"b", b"a"])  # "ab" < "ba"
    [(1, 0, 1)]
"""

from __future__ import annotations

from tokenizer.kernels.bpe_pair_rules import ALL_SPACE, FROZEN, LEAD_SPACE, NO_SPACE, SCRIPT_ANY


def ref_count_spans(spans: list[bytes], weights: list[int]) -> tuple[list[int], list[int]]:
    """``(first occurrence index, summed weight)`` of each distinct span, in order of first occurrence."""
    first: dict[bytes, int] = {}
    counts: dict[bytes, int] = {}
    for i, (span, weight) in enumerate(zip(spans, weights)):
        first.setdefault(span, i)
        counts[span] = counts.get(span, 0) + weight
    return list(first.values()), [counts[s] for s in first]


def ref_pair_allowed(left: tuple, right: tuple, max_piece_length: int) -> bool:
    """Twin of ``pair_allowed`` on ``(length, first script, last script, flags)`` tuples."""
    (la, fa_script, la_script, fa), (lb, fb_script, lb_script, fb) = left, right
    if (fa | fb) & FROZEN or la + lb > max_piece_length:
        return False
    if not ((fa & ALL_SPACE and fb & ALL_SPACE) or (fb & NO_SPACE and fa & (NO_SPACE | LEAD_SPACE))):
        return False
    return SCRIPT_ANY in (la_script, fb_script) or la_script == fb_script


def ref_merged(left: tuple, right: tuple) -> tuple:
    (la, fa_script, la_script, fa), (lb, fb_script, lb_script, fb) = left, right
    flags = ALL_SPACE if fa & ALL_SPACE and fb & ALL_SPACE else fa & (NO_SPACE | LEAD_SPACE)
    return (la + lb, fa_script if fa_script != SCRIPT_ANY else fb_script,
            lb_script if lb_script != SCRIPT_ANY else la_script, flags)


def ref_learn_merges(words: list[list[int]], counts: list[int], symbol_lengths: list[int], max_merges: int,
                     min_count: int, max_piece_length: int, attributes: list[tuple] | None = None,
                     symbol_bytes: list[bytes] | None = None) -> list[tuple[int, int, int]]:
    """Merges ``(left, right, count)``: the most frequent adjacent pair (ties: smallest ``(left, right)``, or,
    given ``symbol_bytes`` (the string of each initial symbol), SentencePiece's order: fewest units
    ``symbol_lengths`` in the merged piece, then the smallest merged string, then smallest ``(left, right)``) that
    may merge (``ref_pair_allowed``: length at most ``max_piece_length``, SentencePiece's piece rules from
    ``attributes``: ``(first script, last script, flags)`` per initial symbol, default any script and no ``▁``),
    replaced left to right without overlaps, until ``max_merges`` or the best count is below ``min_count``."""
    words = [list(w) for w in words]
    if attributes is None:
        attributes = [(SCRIPT_ANY, SCRIPT_ANY, NO_SPACE)] * len(symbol_lengths)
    pieces = [(length, *attr) for length, attr in zip(symbol_lengths, attributes)]
    strings = list(symbol_bytes) if symbol_bytes is not None else None

    def order(pair):
        if strings is None:
            return (-pairs[pair], pair)
        left, right = pair
        return (-pairs[pair], pieces[left][0] + pieces[right][0], strings[left] + strings[right], pair)
    merges = []
    while len(merges) < max_merges:
        pairs: dict[tuple[int, int], int] = {}
        for word, count in zip(words, counts):
            for left, right in zip(word, word[1:]):
                if ref_pair_allowed(pieces[left], pieces[right], max_piece_length):
                    pairs[(left, right)] = pairs.get((left, right), 0) + count
        if not pairs:
            break
        best = min(pairs, key=order)
        if pairs[best] < min_count:
            break
        new_id = len(pieces)
        pieces.append(ref_merged(pieces[best[0]], pieces[best[1]]))
        if strings is not None:
            strings.append(strings[best[0]] + strings[best[1]])
        merges.append((best[0], best[1], pairs[best]))
        for k, word in enumerate(words):
            out, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    out.append(new_id)
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            words[k] = out
    return merges


def ref_count_chunk_table(chunks_per_document: list[list[bytes]]) -> tuple[list[bytes], list[int]]:
    """Twin of ``count_chunk_table`` once the documents are split: distinct chunks in order of first occurrence
    and their counts."""
    counts: dict[bytes, int] = {}
    for chunks in chunks_per_document:
        for chunk in chunks:
            counts[chunk] = counts.get(chunk, 0) + 1
    return list(counts), list(counts.values())


def ref_split_before(document: bytes, delimiter: bytes | None) -> list[bytes]:
    """Twin of ``split_before_end`` over a whole document: a chunk starts at the start and before each
    ``delimiter`` (``None``: the document is one chunk); no empty chunks.
    ``ref_split_before(b"a b  c", b" ")`` -> ``[b"a", b" b", b" ", b" c"]``."""
    if not document:
        return []
    if delimiter is None:
        return [document]
    parts = document.split(delimiter)
    return ([parts[0]] if parts[0] else []) + [delimiter + p for p in parts[1:]]


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
    units, pos = [], 0
    while pos < len(data):
        for length in (1, 2, 3, 4):
            try:
                if len(data[pos:pos + length].decode("utf-8")) == 1:
                    break
            except UnicodeDecodeError:
                continue
        else:
            length = 1
        units.append(data[pos:pos + length])
        pos += length
    return units
