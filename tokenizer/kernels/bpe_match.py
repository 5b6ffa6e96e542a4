"""Merge replay by matching pieces: the ids of :mod:`tokenizer.kernels.bpe_ranked` for a long pre-token, found left
to right without replaying its merges.

When every merge's two parts exist before it (single bytes, or pieces of lower rank: what training produces), the
ids that merge replay gives a text are the one sequence of *usable* pieces (a single byte, or a merged piece whose
own bytes replay to itself) in which every two neighbours are *compatible*: replaying the bytes of ``a + b`` gives
``[a, b]`` back (:func:`compatible`). So a text can be encoded piece by piece: at each position take the longest
usable piece that starts there; keep it when it is compatible with the piece before it, else try the next shorter
usable piece (``prefix_of``). When no piece fits, the position is a dead end: the pieces kept before it are the
only replay of the text before it (every two neighbours compatible), so it would stay one; it is marked, and the
last piece kept is exchanged for its next shorter one. A position dies at most once and tries each of its prefix
pieces at most once, so the work is linear in the text's length (times the longest piece), with no heap and no
array per byte beyond three int32 ones. Where pieces are short (one per byte) or the search backtracks much,
replaying the merges costs less: :func:`matched_bpe_into` then gives way (its ``patience``).

:func:`compatible` walks back through the two pieces' merges. The pair across their boundary is, over the replay,
(right end of ``a``, left end of ``b``): each end changes when a merge takes it in, in rank order (on a tie, the
left one first, as replay merges the leftmost pair first). Undoing those merges from the last one back visits every
pair that ever stood across the boundary, together with the ranks of the merges that end it (``until_left``,
``until_right``); if one of them is a merge of rank below ``until_left`` (and at most ``until_right``, where the
pair across, being further left, is merged first), replay would have merged across, so ``a, b`` are not compatible.

Example (hand-checkable): bytes ``a``=0, ``b``=1, ``c``=2; merges ``(a, b) -> 3`` rank 0, ``(b, c) -> 4`` rank 1.
``"abc"``: the longest usable piece at 0 is ``ab`` (3), then ``c`` (2); ``compatible(3, 2)``: ``(ab, c)`` is no
merge; undo ``ab`` (rank 0): ``(b, c)`` is the merge of rank 1, not below 0 (``ab`` took ``b`` in first), so it
never merged: compatible, ``[3, 2]``, as replay gives.

The twins (:mod:`tokenizer.twins.bpe_match`) are the definitions: :func:`compatible`'s replays the two pieces'
bytes, :func:`matched_bpe_into`'s is merge replay (the same ids).
"""

from __future__ import annotations

import numpy as np

from tokenizer.kernels import kernel
from tokenizer.kernels.bpe_ranked import filtered_pair_merge, ranked_bpe_into
from tokenizer.kernels.double_array import (HAS_VALUE, IS_LEAF, PAYLOAD_SHIFT, TAG_MASK, common_prefix_search,
                                            unit_value)
from tokenizer.kernels.hash_table import hash_slot
from tokenizer.packed import pack

BYTE = -1          # created[id] of a single byte
NOT_USABLE = -2    # created[id] of a piece that matching never emits (not a merge's result, or not its own replay)
NO_LIMIT = np.int64(1) << 40  # a rank above every merge's
MEMO_BITS = 12
MEMO_WORDS = 1 << MEMO_BITS  # the work arrays' memo of compatible pairs (:func:`remembered_compatible`)
GIVE_WAY_AFTER = 64  # match_pieces' patience in the entries: candidates tried before it weighs its work against replay
MATCH_ABOVE = 8  # the batch entry matches pre-tokens longer than this many bytes; shorter ones replay in an array


@kernel
def compatible(pair_table, bits, created, split_left, split_right, a, b):
    """True when replaying the bytes of usable pieces ``a`` then ``b`` gives ``[a, b]`` (int32 tables per id:
    ``created`` the rank of the merge that makes it, :data:`BYTE` for a single byte; ``split_left``/``split_right``
    that merge's parts). With merges ``(a, b) -> 3`` rank 0 only: ``compatible(.., 0, 1)`` is False,
    ``compatible(.., 3, 3)`` True."""
    until_left = NO_LIMIT
    until_right = NO_LIMIT
    x = a
    y = b
    while True:
        merge = filtered_pair_merge(pair_table, bits, x, y)
        if merge >= 0:
            rank = merge >> 32
            if rank < until_left and rank <= until_right:
                return False
        made_x = created[np.uint64(x)]
        made_y = created[np.uint64(y)]
        if made_x < 0 and made_y < 0:
            return True
        if made_x > made_y:  # the later merge is x's: before it, x's right part stood at the boundary
            until_left = made_x
            x = split_right[np.uint64(x)]
        else:  # y's (on a tie the same merge made both, the left one first: undo the right one first)
            until_right = made_y
            y = split_left[np.uint64(y)]


@kernel
def remembered_compatible(memo, pair_table, bits, created, split_left, split_right, a, b):
    """:func:`compatible` through ``memo`` (int64, ``2**MEMO_BITS`` words, zeroed before first use): a
    direct-mapped slot per pair holding ``key + 1`` (compatible) or ``-(key + 1)`` (not), ``key = a << 32 | b``;
    a pair that meets another's slot is worked out again and takes the slot."""
    key = (np.int64(a) << 32) | np.int64(b)
    slot = hash_slot(key, MEMO_BITS)
    word = memo[np.uint64(slot)]
    if word == key + 1:
        return True
    if word == -(key + 1):
        return False
    answer = compatible(pair_table, bits, created, split_left, split_right, a, b)
    memo[slot] = key + 1 if answer else -(key + 1)
    return answer


@kernel(inline="always")
def longest_piece(units, created, prefix_of, data, start, end):
    """Id of the longest usable piece (``created[id] != NOT_USABLE``) that is a prefix of ``data[start:end]``, or
    -1; ``units`` is the model's double array of pieces. The walk keeps the last node where a piece ends and reads
    its value once (:func:`~tokenizer.kernels.double_array.unit_value`); an unusable piece gives way to
    ``prefix_of`` it. Tables are indexed with ``np.uint64`` here and in :func:`compatible` (no negative-index test
    per read, as in :func:`tokenizer.kernels.unigram.viterbi_bytes_into`; every such index is >= 0)."""
    node = units[0]
    last = np.int64(-1)
    for k in range(start, end):
        c = data[np.uint64(k)]
        unit = units[np.uint64((node >> PAYLOAD_SHIFT) + 1 + c)]
        if (unit & TAG_MASK) != c:
            break
        node = unit
        if unit & HAS_VALUE:
            last = unit
        if unit & IS_LEAF:
            break
    if last < 0:
        return np.int64(-1)
    piece = np.int64(unit_value(units, last))
    if created[np.uint64(piece)] == NOT_USABLE:
        piece = np.int64(prefix_of[np.uint64(piece)])
    return piece


@kernel
def match_pieces(units, pair_table, bits, created, split_left, split_right, prefix_of, piece_length, data, start,
                 end, stack, ends, dead, memo, patience, steps):
    """Match the pieces of ``data[start:end]`` (see the module docstring): returns how many, ``top``, with the
    pieces in ``stack[:top]`` and where each ends (absolute) in ``ends[:top]``; or -1 when matching gives way to
    replaying the merges. It gives way once it has tried more than one candidate per two bytes passed, plus
    ``patience`` (:data:`GIVE_WAY_AFTER` in the entries), or once the pieces it kept average under two bytes past
    ``patience / 4`` bytes: short pieces (random bytes, a run of one byte) or much backtracking (a run of
    spaces, where each position tries its prefix pieces) make matching dearer than replay. It also gives way where
    the tables break the rule (no sequence found).

    Work buffers of length >= ``end - start + 1``: ``stack`` and ``ends`` (int32), ``dead`` (dead-end marks per
    position, any integer dtype); ``memo`` is :func:`remembered_compatible`'s. ``steps[0]`` grows by the
    candidates tried (tests bound it). Tables per id (int32): ``created``, ``split_left``, ``split_right``
    (:func:`compatible`), ``prefix_of`` (the longest usable piece that is a proper prefix of it, -1 for none),
    ``piece_length`` (its bytes)."""
    n = end - start
    if n == 0:
        return 0
    cleared = 0  # dead[:cleared] zeroed, as far as the candidates have reached (matching may give way early)
    top = 0
    p = start
    tried = 0
    piece = longest_piece(units, created, prefix_of, data, p, end)
    while True:
        steps[0] += 1
        tried += 1
        if tried > ((p - start) >> 1) + patience:
            return -1
        if piece >= 0:
            q = p + piece_length[piece]
            while cleared <= q - start:
                dead[cleared] = 0
                cleared += 1
            if (q == end or dead[q - start] == 0) and (
                    top == 0 or remembered_compatible(memo, pair_table, bits, created, split_left, split_right,
                                                      stack[top - 1], piece)):
                stack[top] = piece
                ends[top] = q
                top += 1
                p = q
                if p == end:
                    return top
                if 2 * top > p - start >= patience >> 2:
                    return -1  # pieces of under two bytes on average: replay costs less
                piece = longest_piece(units, created, prefix_of, data, p, end)
            else:
                piece = prefix_of[piece]
            continue
        if top == 0:
            return -1
        dead[p - start] = 1
        top -= 1
        p = ends[top - 1] if top > 0 else start
        piece = prefix_of[stack[top]]


@kernel
def matched_bpe_into(units, pair_table, bits, created, split_left, split_right, prefix_of, piece_length, data,
                     start, end, stack, ends, dead, memo, patience, steps, out, pos):
    """Encode ``data[start:end]`` (one pre-token) by :func:`match_pieces` (the arguments as it takes them); ids to
    ``out[pos:]``; returns the new ``pos``, or -1 when matching gives way to replaying the merges (the caller's
    next step)."""
    top = match_pieces(units, pair_table, bits, created, split_left, split_right, prefix_of, piece_length, data,
                       start, end, stack, ends, dead, memo, patience, steps)
    if top < 0:
        return -1
    for k in range(top):
        out[pos + k] = stack[k]
    return pos + top


@kernel
def _replays_to_itself(pair_table, bits, byte_to_id, data, offsets, ids, out):
    """``out[k] = 1`` where merge replay of piece ``k``'s bytes (``data[offsets[k]:offsets[k + 1]]``) gives
    ``[ids[k]]``."""
    longest = 1
    for k in range(ids.shape[0]):
        longest = max(longest, offsets[k + 1] - offsets[k])
    n = longest + 1
    sym, nxt, prv = np.empty(n, np.int32), np.empty(n, np.int32), np.empty(n, np.int32)
    cand, heap, steps = np.empty(n, np.int64), np.empty(2 * n, np.int64), np.zeros(1, np.int64)
    rng_state = np.zeros(1, np.uint64)
    got = np.empty(n, np.int32)
    for k in range(ids.shape[0]):
        count = ranked_bpe_into(pair_table, bits, byte_to_id, data, offsets[k], offsets[k + 1], sym, nxt, prv, cand,
                                heap, steps, rng_state, got, 0)
        out[k] = 1 if count == 1 and got[0] == ids[k] else 0


@kernel
def _longest_usable_prefixes(units, created, data, offsets, ids, prefix_of):
    """``prefix_of[ids[k]]`` = the longest usable piece that is a proper prefix of piece ``k``'s bytes, or -1.
    Returns how many usable pieces ``units`` does not map to themselves (0 for a model's distinct pieces)."""
    longest = 0
    for k in range(ids.shape[0]):
        longest = max(longest, offsets[k + 1] - offsets[k])
    found = np.empty(longest + 1, np.int32)
    lengths = np.empty(longest + 1, np.int32)
    astray = 0
    for k in range(ids.shape[0]):
        count = common_prefix_search(units, data, offsets[k], offsets[k + 1], found, lengths)
        size = offsets[k + 1] - offsets[k]
        best = -1
        for j in range(count):
            if lengths[j] < size and created[found[j]] != NOT_USABLE:
                best = found[j]
        prefix_of[ids[k]] = best
        if created[ids[k]] != NOT_USABLE and (count == 0 or lengths[count - 1] != size or found[count - 1] != ids[k]):
            astray += 1
    return astray


def build_match_tables(units: np.ndarray, pieces: list[bytes], merged: np.ndarray, left: np.ndarray,
                       right: np.ndarray, byte_to_id: np.ndarray, pair_table: np.ndarray, bits: int) -> list | None:
    """The tables of :func:`matched_bpe_into` (int32 per id, ``len(pieces)`` each): ``[created, split_left,
    split_right, prefix_of, piece_length]``, for merges ``(left[m], right[m]) -> merged[m]`` in rank order
    (``pair_table``/``bits``: :func:`tokenizer.kernels.bpe_ranked.build_pair_table`'s) over the single bytes
    ``byte_to_id`` and the double array ``units`` of the pieces. ``None`` when matching cannot stand for replay
    here: a merge's part made by a later merge, a merged piece made twice, or a usable piece that ``units`` does not
    map to itself.
    Merges ``(97, 98) -> 256``: ``created[256] == 0``, ``split_left[256] == 97``, ``prefix_of[256] == 97``."""
    size = len(pieces)
    created = np.full(size, NOT_USABLE, np.int64)
    created[byte_to_id] = BYTE
    merged = np.asarray(merged, np.int64)
    if len(np.unique(merged)) != len(merged) or (created[merged] == BYTE).any():
        return None
    created[merged] = np.arange(len(merged))
    ranks = np.arange(len(merged))
    left, right = np.asarray(left, np.int64), np.asarray(right, np.int64)
    if len(merged) and ((created[left] == NOT_USABLE) | (created[left] >= ranks)
                        | (created[right] == NOT_USABLE) | (created[right] >= ranks)).any():
        return None
    split_left, split_right = np.full(size, -1, np.int32), np.full(size, -1, np.int32)
    split_left[merged], split_right[merged] = left, right
    data, offsets = pack([pieces[i] for i in merged.tolist()])
    replays = np.zeros(len(merged), np.uint8)
    if len(merged):
        _replays_to_itself(pair_table, bits, byte_to_id, data, offsets, merged.astype(np.int32), replays)
    created[merged[replays == 0]] = NOT_USABLE
    created = created.astype(np.int32)
    prefixes = usable_prefix_tables(units, created, pieces, np.arange(size, dtype=np.int32), size)
    return None if prefixes is None else [created, split_left, split_right, *prefixes]


def usable_prefix_tables(units: np.ndarray, created: np.ndarray, keys: list[bytes], ids: np.ndarray,
                         size: int) -> tuple | None:
    """``(prefix_of, piece_length)`` (int32, ``size`` each) for the pieces ``keys`` of ids ``ids`` (int32) in the
    double array ``units``: the longest usable piece (``created`` int32) that is a proper prefix of each, -1 for
    none, and each one's byte length (0 for an id not in ``ids``); ``None`` when ``units`` does not map a usable
    piece to itself. Pieces ``a``=0, ``ab``=1, both usable: ``([-1, 0], [1, 2])``."""
    data, offsets = pack(keys)
    prefix_of = np.full(size, -1, np.int32)
    if _longest_usable_prefixes(units, created, data, offsets, ids, prefix_of):
        return None
    piece_length = np.zeros(size, np.int32)
    piece_length[ids] = np.diff(offsets)
    return prefix_of, piece_length

