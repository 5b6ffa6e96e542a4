"""Which pairs of pieces BPE training may merge: the per-symbol attributes (first and last script, ``NO_SPACE``,
``LEAD_SPACE``, ``ALL_SPACE``, ``FROZEN`` flags) and SentencePiece's piece rules for a merged pair
(:func:`pair_allowed`), and the attributes of the merged piece. Their pure-Python twins are in
:mod:`tokenizer.twins.bpe_merges`.
"""

from __future__ import annotations

from tokenizer.kernels import kernel

NO_SPACE, LEAD_SPACE, ALL_SPACE, FROZEN = 1, 2, 4, 8
SCRIPT_ANY = -1


@kernel
def pair_allowed(length, first, last, flags, a, b, max_piece_length):
    """May pieces ``a`` and ``b`` merge? (SentencePiece's ``IsValidSentencePiece`` for the concatenation of two
    valid pieces, with allow_whitespace_only_pieces and split_by_whitespace.) Neither is ``FROZEN``; the lengths
    add up to at most ``max_piece_length``; ``▁`` only leads (``▁`` + ``ab``) or the result is all ``▁``; the last
    script of ``a`` and the first of ``b`` agree unless one is ``SCRIPT_ANY``."""
    fa = flags[a]
    fb = flags[b]
    if (fa | fb) & FROZEN:
        return False
    if length[a] + length[b] > max_piece_length:
        return False
    both_space = (fa & ALL_SPACE) != 0 and (fb & ALL_SPACE) != 0
    space_leads = (fb & NO_SPACE) != 0 and (fa & (NO_SPACE | LEAD_SPACE)) != 0
    if not (both_space or space_leads):
        return False
    return last[a] == SCRIPT_ANY or first[b] == SCRIPT_ANY or last[a] == first[b]


@kernel
def _set_merged(length, first, last, flags, a, b, z):
    """Attributes of the new piece ``z = a + b`` (an allowed pair)."""
    length[z] = length[a] + length[b]
    first[z] = first[a] if first[a] != SCRIPT_ANY else first[b]
    last[z] = last[b] if last[b] != SCRIPT_ANY else last[a]
    if (flags[a] & ALL_SPACE) != 0 and (flags[b] & ALL_SPACE) != 0:
        flags[z] = ALL_SPACE
    else:
        flags[z] = flags[a] & (NO_SPACE | LEAD_SPACE)
