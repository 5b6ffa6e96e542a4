"""Pure-Python twins of the BPE merge kernels of :mod:`tokenizer.kernels.bpe_merges` and the piece rules of
:mod:`tokenizer.kernels.bpe_pair_rules` (recount everything at every step; slow, for tests). The chunk counting
twins of BPE training are in :mod:`tokenizer.twins.chunk_count` and :mod:`tokenizer.twins.chunk_chars`.

    >>> ref_learn_merges([[0, 1, 0, 1], [0, 1]], [1, 2], [1, 1], 5, 1, 99)
    [(0, 1, 4), (2, 2, 1)]
    >>> ref_learn_merges([[0, 1], [1, 0]], [1, 1], [1, 1], 1, 1, 99)                        # smaller ids
    [(0, 1, 1)]
    >>> ref_learn_merges([[0, 1], [1, 0]], [1, 1], [1, 1], 1, 1, 99, symbol_bytes=[b"b", b"a"])  # "ab" < "ba"
    [(1, 0, 1)]
"""

from __future__ import annotations

from tokenizer.kernels.bpe_pair_rules import ALL_SPACE, FROZEN, LEAD_SPACE, NO_SPACE, SCRIPT_ANY


def ref_pair_allowed(left: tuple, right: tuple, max_piece_length: int) -> bool:
    """Twin of ``pair_allowed`` on ``(length, first script, last script, flags)`` tuples."""
    (la, _, la_script, fa), (lb, fb_script, _, fb) = left, right
    if (fa | fb) & FROZEN or la + lb > max_piece_length:
        return False
    if not ((fa & ALL_SPACE and fb & ALL_SPACE) or (fb & NO_SPACE and fa & (NO_SPACE | LEAD_SPACE))):
        return False
    return SCRIPT_ANY in (la_script, fb_script) or la_script == fb_script


def ref_merged(left: tuple, right: tuple) -> tuple:
    """Twin of ``_set_merged``: the ``(length, first script, last script, flags)`` of the piece ``left + right``."""
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
