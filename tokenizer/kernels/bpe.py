"""SentencePiece-style BPE segmentation kernel with BPE-dropout, over the bytes of one text (the deterministic
encoder is :mod:`tokenizer.kernels.bpe_pairs`, the same rule by integer tables).

Algorithm (SentencePiece's ``bpe::Model::SampleEncode``):

1. Initial symbols: at each position the longest USER_DEFINED piece that is a prefix (a *frozen* symbol, never
   merged), else one UTF-8 character (an invalid byte is a one-byte character), or one byte in ``byte_mode``.
2. Every adjacent pair of unfrozen symbols whose concatenation is a matchable piece (NORMAL or USER_DEFINED) goes
   into a max-heap keyed by the piece's score, ties to the leftmost pair.
3. Pop the best pair; skip it if either symbol changed since it was pushed; with dropout probability ``p`` drop it
   (``p <= 0``: never, ``p >= 1``: always, else when a uniform draw is ``< p``); otherwise merge the two symbols and
   push the new pairs with the left and right neighbours.
4. Each final symbol becomes its piece id, or an unknown node (see :func:`tokenizer.kernels.unigram.emit_node`).

Differences from SentencePiece: UNUSED pieces are never merged into (SentencePiece merges and then re-splits them).

Example (hand-checkable): pieces ``a``, ``b``, ``c``, ``ab`` (score -1), ``bc`` (score -1): ``"abc"`` -> symbols
a|b|c, pairs ab and bc tie, the leftmost wins -> ``[ab, c]``.

Work buffers (int32 unless noted; ``n = end - start``): ``sym_start``, ``sym_len``, ``sym_prev``, ``sym_next``,
``sym_frozen`` (length >= n), ``heap_score`` (float32), ``heap_left``, ``heap_right``, ``heap_size`` (length >= 3n).
"""

from __future__ import annotations

import numpy as np

from tokenizer.kernels import kernel
from tokenizer.kernels.double_array import exact_match, step, unit_value
from tokenizer.kernels.random import next_float64
from tokenizer.kernels.unigram import UNKNOWN_NODE, emit_node
from tokenizer.kernels.utf8 import char_length


@kernel
def _better(heap_score, heap_left, i, j):
    """Heap entry ``i`` comes before ``j``: higher score, then smaller left index."""
    return heap_score[i] > heap_score[j] or (heap_score[i] == heap_score[j] and heap_left[i] < heap_left[j])


@kernel
def _swap(heap_score, heap_left, heap_right, heap_size, i, j):
    heap_score[i], heap_score[j] = heap_score[j], heap_score[i]
    heap_left[i], heap_left[j] = heap_left[j], heap_left[i]
    heap_right[i], heap_right[j] = heap_right[j], heap_right[i]
    heap_size[i], heap_size[j] = heap_size[j], heap_size[i]


@kernel
def _push(heap_score, heap_left, heap_right, heap_size, count, score, left, right, size):
    i = count
    heap_score[i] = score
    heap_left[i] = left
    heap_right[i] = right
    heap_size[i] = size
    while i > 0:
        parent = (i - 1) // 2
        if _better(heap_score, heap_left, i, parent):
            _swap(heap_score, heap_left, heap_right, heap_size, i, parent)
            i = parent
        else:
            break
    return count + 1


@kernel
def _pop(heap_score, heap_left, heap_right, heap_size, count):
    """Move the best entry to slot ``count - 1`` and restore the heap on ``[0, count - 1)``; returns count - 1."""
    count -= 1
    _swap(heap_score, heap_left, heap_right, heap_size, 0, count)
    i = 0
    while True:
        left = 2 * i + 1
        if left >= count:
            break
        best = left
        right = left + 1
        if right < count and _better(heap_score, heap_left, right, left):
            best = right
        if _better(heap_score, heap_left, best, i):
            _swap(heap_score, heap_left, heap_right, heap_size, i, best)
            i = best
        else:
            break
    return count


@kernel
def _maybe_push(units, merge_score, data, start, left, right, sym_start, sym_len, sym_frozen,
                heap_score, heap_left, heap_right, heap_size, count):
    if left < 0 or right < 0 or sym_frozen[left] or sym_frozen[right]:
        return count
    begin = start + sym_start[left]
    stop = start + sym_start[right] + sym_len[right]
    piece = exact_match(units, data, begin, stop)
    if piece < 0:
        return count
    return _push(heap_score, heap_left, heap_right, heap_size, count, merge_score[piece], left, right, stop - begin)


@kernel
def user_defined_prefix(units, is_user_defined, data, pos, end):
    """``(length, piece)`` of the longest USER_DEFINED piece that ``data[pos:end]`` starts with, or ``(0, -1)``:
    such a prefix becomes one frozen symbol that never merges."""
    length = 0
    found = -1
    node = units[0]
    k = pos
    while k < end:
        node = step(units, node, data[k])
        if node < 0:
            break
        k += 1
        piece = unit_value(units, node)
        if piece >= 0 and is_user_defined[piece]:
            length = k - pos
            found = piece
    return length, found


@kernel
def bpe_into(units, merge_score, is_user_defined, byte_to_id, byte_mode, unk_id, byte_fallback,
             has_user_defined, dropout, rng_state, data, start, end, sym_start, sym_len, sym_prev, sym_next,
             sym_frozen, heap_score, heap_left, heap_right, heap_size, out, pos):
    """BPE segmentation of ``data[start:end]``; writes ids at ``out[pos:]``, returns the new ``pos`` (or -1).

    ``merge_score`` float32 (vocab), ``is_user_defined`` uint8 (vocab), ``dropout`` float64, ``rng_state``
    uint64[1] (used only when ``0 < dropout < 1``).
    """
    n = end - start
    if n == 0:
        return pos
    count = 0
    q = 0
    while q < n:
        length = user_defined_prefix(units, is_user_defined, data, start + q, end)[0] if has_user_defined else 0
        frozen = length > 0
        if not frozen:
            length = 1 if byte_mode else char_length(data, start + q, end)
        sym_start[count] = q
        sym_len[count] = length
        sym_prev[count] = count - 1
        sym_next[count] = count + 1
        sym_frozen[count] = frozen
        count += 1
        q += length
    sym_next[count - 1] = -1
    heap_count = 0
    for i in range(1, count):
        heap_count = _maybe_push(units, merge_score, data, start, i - 1, i, sym_start, sym_len,
                                 sym_frozen, heap_score, heap_left, heap_right, heap_size, heap_count)
    while heap_count > 0:
        heap_count = _pop(heap_score, heap_left, heap_right, heap_size, heap_count)
        left = heap_left[heap_count]
        right = heap_right[heap_count]
        if sym_len[left] == 0 or sym_len[right] == 0 or sym_len[left] + sym_len[right] != heap_size[heap_count]:
            continue
        if dropout > 0.0:
            if dropout >= 1.0:
                continue
            if next_float64(rng_state) < dropout:
                continue
        sym_len[left] += sym_len[right]
        sym_len[right] = 0
        following = sym_next[right]
        sym_next[left] = following
        if following >= 0:
            sym_prev[following] = left
        heap_count = _maybe_push(units, merge_score, data, start, sym_prev[left], left, sym_start,
                                 sym_len, sym_frozen, heap_score, heap_left, heap_right, heap_size, heap_count)
        heap_count = _maybe_push(units, merge_score, data, start, left, following, sym_start,
                                 sym_len, sym_frozen, heap_score, heap_left, heap_right, heap_size, heap_count)
    prev_unknown = False
    i = 0
    while i >= 0:
        begin = start + sym_start[i]
        stop = begin + sym_len[i]
        piece = exact_match(units, data, begin, stop)
        node = piece if piece >= 0 else UNKNOWN_NODE
        pos, prev_unknown = emit_node(node, data, begin, stop, unk_id, byte_fallback, byte_to_id, out, pos,
                                      prev_unknown)
        if pos < 0:
            return pos
        i = sym_next[i]
    return pos


def dropout_buffers(longest: int) -> tuple:
    """Work buffers of :func:`bpe_into` for texts of up to ``longest`` bytes, 65 bytes per byte (refused when the
    system lacks the memory: :func:`tokenizer.memory.check_work_memory`)."""
    from tokenizer.memory import check_work_memory

    n = longest + 1
    check_work_memory(65 * n, longest)
    return (np.empty(n, np.int32), np.empty(n, np.int32), np.empty(n, np.int32), np.empty(n, np.int32),
            np.empty(n, np.uint8), np.empty(3 * n, np.float32), np.empty(3 * n, np.int32),
            np.empty(3 * n, np.int32), np.empty(3 * n, np.int32))
