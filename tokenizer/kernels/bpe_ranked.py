"""Merge-replay BPE (Hugging Face ``tokenizers`` / tiktoken semantics) inside regex pre-tokens.

A ranked BPE model is a table of merges ``(left id, right id) -> (merged id, rank)``. Inside one pre-token the
symbols start as single bytes (``byte_to_id``); then, repeatedly, the adjacent pair with the lowest rank is merged,
the leftmost one among equal ranks, until no adjacent pair is a merge. Unlike SentencePiece's rule (merge the pair
whose *concatenation* is the best piece), only listed pairs merge, which is what a merges list means.

The pair table (``pair_table``, int64, ``2**bits`` slots of two words) is open addressing: slot ``h`` holds the key
``left << 32 | right`` at ``2 * h`` (-1 = empty) and the pair's merge ``rank << 32 | merged`` at ``2 * h + 1``, so
a probe that hits reads one cache line and nothing else. After the slots (at ``2 << bits``) comes the merge filter:
``2**(bits + FILTER_EXTRA_BITS)`` bits, one set for each merge (the top bits of its key's hash), so that
:func:`filtered_pair_merge` answers most pairs that are no merge from one word of an array an eighth of the slots'
size, without probing them (the walks of :func:`tokenizer.kernels.bpe_match.compatible` ask mostly of such pairs).

Inside a pre-token of n bytes the symbols are a linked list over the byte positions and the candidate merges a binary
min-heap of ``rank << 32 | position`` (lowest rank first, then leftmost); an entry whose pair has changed since it was
pushed is skipped when it comes up. Each merge pushes at most two entries, so the heap holds at most 2n and the work is
O(n log n) whatever the text: one long pre-token (100,000 x ``a``, a run of one CJK character) costs what its length
costs, never n^2. A pre-token of at most :data:`SHORT_SYMBOLS` bytes (most words) is merged in an array instead, by
scanning its pairs' ranks (:func:`scan_merges`: the same ids, no heap); one of more than :data:`BUCKETS_ABOVE` (a run of
spaces) with a bucket per rank in place of the heap (:func:`bucket_merges`: the same ids; a node enters its bucket in
constant time, where every merge makes only pairs of higher rank). The batch entry encodes a pre-token of more than
:data:`tokenizer.kernels.bpe_match.MATCH_ABOVE` bytes by matching pieces where the model's merges allow it, and comes
back here where matching gives way (:mod:`tokenizer.kernels.bpe_match`: the same ids).
:func:`tokenizer.twins.bpe.ref_ranked_bpe` is the slow twin.

Example (hand-checkable): bytes ``a``=0, ``b``=1, ``c``=2; merges ``(b, c) -> 3`` rank 0, ``(a, b) -> 4`` rank 1,
``(4, 2) -> 5`` rank 2: ``"abc"`` -> a|b|c -> a|bc (rank 0) -> no merge ``(a, bc)`` -> ``[0, 3]``, whereas the
concatenation rule would go on to ``abc``.
"""

from __future__ import annotations

import numpy as np

from tokenizer.kernels import kernel
from tokenizer.kernels.hash_table import EMPTY, find_slot, hash_slot, table_bits
from tokenizer.kernels.heaps import min_heap_pop, min_heap_push
from tokenizer.kernels.random import next_float64

NO_RANK = np.int32(2**31 - 1)
JOINABLE = -2  # the pair table's value for a pair that is no merge but appears inside a piece (see bpe.py)
SHORT_SYMBOLS = 16  # up to this many symbols a text merges by scanning an array (scan_merges), not with a heap
BUCKETS_ABOVE = 1 << 14  # past this many symbols a text merges with a bucket per rank (bucket_merges), not a heap
FILTER_EXTRA_BITS = 4  # the merge filter has 16 bits per slot of the pair table, so at least 32 per merge


def build_pair_table(left: np.ndarray, right: np.ndarray, merged: np.ndarray, rank_of: np.ndarray,
                     joinable: tuple = ((), ())) -> tuple[np.ndarray, int]:
    """``(pair_table int64, bits)`` for merges ``(left[m], right[m]) -> merged[m]`` of rank ``rank_of[merged[m]]``
    (Python, load time); see the module docstring for the layout. A repeated pair keeps its first entry, as a merges
    list lookup does. The pairs ``joinable`` (two sequences of ids) that are no merge get the value
    :data:`JOINABLE`. ``build_pair_table([97], [98], [256], rank_of)`` with ``rank_of[256] == 0``: one slot holds
    ``97 << 32 | 98`` and ``0 << 32 | 256``, the rest ``-1``, and the filter has one bit set."""
    left, right = np.asarray(left, np.int64), np.asarray(right, np.int64)
    joinable_left, joinable_right = (np.asarray(ids, np.int64) for ids in joinable)
    distinct = len(np.unique(np.concatenate([(left << 32) | right, (joinable_left << 32) | joinable_right])))
    bits = int(table_bits(2 * distinct + 16))  # at most half full: a miss (most probes) ends within a line or two
    table = np.full((2 << bits) + (1 << (bits + FILTER_EXTRA_BITS - 6)), EMPTY, np.int64)
    merged = np.asarray(merged, np.int64)
    merges = (np.asarray(rank_of, np.int64)[merged] << 32) | merged if len(merged) else merged
    _fill_pair_table(left, right, merges, table, bits)
    _fill_pair_table(joinable_left, joinable_right, np.full(len(joinable_left), JOINABLE, np.int64), table, bits)
    _fill_merge_filter(table, bits)
    return table, bits


def merge_ranks(merged: np.ndarray, ranks: np.ndarray, size: int) -> np.ndarray:
    """``rank_of`` (int32, ``size``): the lowest ``ranks[m]`` of each id ``merged[m]``, NO_RANK for ids no merge
    makes. ``merge_ranks([5, 3, 5], [0, 1, 2], 6)`` -> ``[NO_RANK x 3, 1, NO_RANK, 0]``."""
    rank_of = np.full(size, NO_RANK, np.int32)
    np.minimum.at(rank_of, np.asarray(merged, np.int64), np.asarray(ranks, np.int64).astype(np.int32))
    return rank_of


@kernel
def _fill_pair_table(left, right, merges, table, bits):
    keys = table[:2 << bits:2]
    for m in range(left.shape[0]):
        key = (left[m] << 32) | right[m]
        h = find_slot(keys, bits, key)
        if keys[h] == EMPTY:
            keys[h] = key
            table[2 * h + 1] = merges[m]


@kernel
def pair_merge(pair_table, bits, a, b):
    """``rank << 32 | merged`` of the merge of symbols ``a`` and ``b``; else negative: :data:`JOINABLE` when the
    table lists them as that, -1 when it does not list them (or either is not a mergeable symbol, < 0)."""
    if a < 0 or b < 0:
        return np.int64(-1)
    key = (np.int64(a) << 32) | np.int64(b)
    mask = (np.int64(1) << bits) - 1
    h = hash_slot(key, bits)
    while True:  # a hot loop: return on the hit or the empty slot without a second look
        found = pair_table[2 * h]
        if found == key:
            return pair_table[2 * h + 1]
        if found == EMPTY:
            return np.int64(-1)
        h = (h + 1) & mask


@kernel
def _fill_merge_filter(table, bits):
    """Set the merge filter's bit of every merge in the slots (a value >= 0), the filter zeroed first."""
    filter_at = np.int64(2) << bits
    table[filter_at:] = 0
    for h in range(np.int64(1) << bits):
        if table[2 * h] != EMPTY and table[2 * h + 1] >= 0:
            bit = hash_slot(table[2 * h], bits + FILTER_EXTRA_BITS)
            table[filter_at + (bit >> 6)] |= np.int64(1) << (bit & 63)


@kernel
def filtered_pair_merge(pair_table, bits, a, b):
    """:func:`pair_merge`'s merge of ``a`` and ``b`` where it is one; else negative (-1 or :data:`JOINABLE`): a
    pair whose bit in the merge filter is clear is no merge, and the slots are not probed. For lookups that
    mostly miss (a pair of pieces' ends)."""
    if a < 0 or b < 0:
        return np.int64(-1)
    bit = hash_slot((np.int64(a) << 32) | np.int64(b), bits + FILTER_EXTRA_BITS)
    if (pair_table[(np.int64(2) << bits) + (bit >> 6)] >> (bit & 63)) & 1 == 0:
        return np.int64(-1)
    return pair_merge(pair_table, bits, a, b)


# A per-thread cache of pre-token -> ids in front of merge replay (most pre-tokens of ordinary text are words that
# recur): CACHE_SLOTS direct-mapped slots of SLOT_WORDS int64 words: [hash, length | id count << 8, key bytes (3
# words), ids (3 words, two int32 each)]. A slot whose length is 0 is empty; a hit compares the key's bytes, so a
# hash collision only costs a miss. Pre-tokens longer than CACHE_KEY_BYTES or of more than CACHE_IDS ids are not
# cached.
CACHE_SLOTS = 16384
SLOT_WORDS = 8
CACHE_WORDS = CACHE_SLOTS * SLOT_WORDS
CACHE_KEY_BYTES = 24
CACHE_IDS = 6
_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


@kernel(inline="always")
def _pretoken_hash(data, start, end):
    """FNV-1a over ``data[start:end]``."""
    h = _FNV_OFFSET
    for k in range(start, end):
        h = (h ^ np.uint64(data[k])) * _FNV_PRIME
    return h


@kernel(inline="always")
def cached_ids(cache, data, start, end, out, pos):
    """Write the cached ids of the pre-token ``data[start:end]`` at ``out[pos:]`` and return the new ``pos``, or
    -1 when it is not cached."""
    n = end - start
    if n > CACHE_KEY_BYTES:
        return -1
    h = _pretoken_hash(data, start, end)
    slot = np.int64(h & np.uint64(CACHE_SLOTS - 1)) * SLOT_WORDS
    meta = cache[slot + 1]
    if (meta & 0xFF) != n or np.uint64(cache[slot]) != h:
        return -1
    for k in range(n):
        if ((cache[slot + 2 + (k >> 3)] >> ((k & 7) * 8)) & 0xFF) != data[start + k]:
            return -1
    count = (meta >> 8) & 0xFF
    for j in range(count):
        out[pos + j] = np.int32((cache[slot + 5 + (j >> 1)] >> ((j & 1) * 32)) & 0xFFFFFFFF)
    return pos + count


@kernel(inline="always")
def cache_ids(cache, data, start, end, out, first, stop):
    """Remember ``out[first:stop]`` as the ids of the pre-token ``data[start:end]`` (when it fits a slot)."""
    n = end - start
    count = stop - first
    if n > CACHE_KEY_BYTES or count > CACHE_IDS:
        return
    h = _pretoken_hash(data, start, end)
    slot = np.int64(h & np.uint64(CACHE_SLOTS - 1)) * SLOT_WORDS
    cache[slot] = np.int64(h)
    cache[slot + 1] = np.int64(n) | (np.int64(count) << 8)
    for w in range(3):
        cache[slot + 2 + w] = 0
        cache[slot + 5 + w] = 0
    for k in range(n):
        cache[slot + 2 + (k >> 3)] |= np.int64(data[start + k]) << ((k & 7) * 8)
    for j in range(count):
        cache[slot + 5 + (j >> 1)] |= np.int64(out[first + j]) << ((j & 1) * 32)


@kernel
def pair_at(pair_table, bits, sym, cand, heap, size, left, right):
    """Record in ``cand[left]`` the merge of node ``left`` with node ``right`` (``rank << 32 | merged``, or -1 when
    their symbols are no merge) and push its heap entry ``rank << 32 | left``; returns the heap size. A node's
    ``cand`` is what a popped entry is checked against, so no pair is looked up twice."""
    merge = pair_merge(pair_table, bits, sym[left], sym[right])
    cand[left] = merge
    if merge < 0:
        return size
    return min_heap_push(heap, size, ((merge >> 32) << 32) | np.int64(left))


@kernel
def merge_pending(pair_table, bits, sym, nxt, prv, cand, heap, size, n, dropout, rng_state):
    """The merge loop of both BPE rules over nodes ``0 .. n - 1`` (linked by ``nxt``/``prv``, pending merges in
    ``cand``, their entries in ``heap[:size]``): pop the lowest ``rank << 32 | node``, skip it when the node's
    pending merge has changed, else merge the node with its right neighbour and record the new pairs on both
    sides. Returns how many entries were popped.

    BPE-dropout (``dropout`` > 0; ``rng_state`` uint64[1], drawn only when ``0 < dropout < 1``): each pending merge
    that comes up is dropped with that probability and forgotten until one of its two symbols changes, as
    SentencePiece's ``SampleEncode`` does: one draw per pair, in the order the pairs come up."""
    popped = 0
    while size > 0:
        key = heap[0]
        size = min_heap_pop(heap, size)
        popped += 1
        left = np.int64(key & 0xFFFFFFFF)
        pending = cand[left]
        if pending < 0 or (pending >> 32) != (key >> 32):
            continue  # the pair at this node changed since the entry was pushed (or the node is gone)
        if dropout > 0.0 and (dropout >= 1.0 or next_float64(rng_state) < dropout):
            cand[left] = -1
            continue
        right = nxt[left]
        sym[left] = np.int32(pending & 0xFFFFFFFF)
        cand[right] = -1
        after = nxt[right]
        nxt[left] = after
        if after < n:
            prv[after] = left
            size = pair_at(pair_table, bits, sym, cand, heap, size, left, after)
        else:
            cand[left] = -1
        before = prv[left]
        if before >= 0:
            size = pair_at(pair_table, bits, sym, cand, heap, size, before, left)
    return popped


@kernel
def heap_merges(pair_table, bits, sym, nxt, prv, cand, heap, n, dropout, rng_state):
    """:func:`merge_pending` over the symbols ``sym[:n]`` as nodes ``0 .. n - 1``, given the merge of each adjacent
    pair in ``cand[:n - 1]`` (:func:`pair_merge`'s): links the nodes, pushes the pending merges and runs the loop;
    returns how many entries were popped. The result is read from node 0 along ``nxt`` (a node ``i`` holds
    ``sym[i]`` until ``nxt[i]``). Symbols ``a``, ``b`` with the merge ``(a, b)`` -> ``sym[0]`` the merged id,
    ``nxt[0] == 2``, 1 popped."""
    size = 0
    cand[n - 1] = -1
    for i in range(n):
        nxt[i] = i + 1
        prv[i] = i - 1
        if cand[i] >= 0:
            size = min_heap_push(heap, size, ((cand[i] >> 32) << 32) | np.int64(i))
    return merge_pending(pair_table, bits, sym, nxt, prv, cand, heap, size, n, dropout, rng_state)


@kernel(inline="always")
def _bucket_push(pool, head, tail, free, unused, rank, node):
    """Append ``node`` to the bucket of ``rank`` (an entry of ``pool``: ``next entry << 32 | node``, -1 ending a
    list; a freed entry first, else the next unused one); returns the new ``(free, unused)``."""
    if free >= 0:
        entry = free
        free = pool[entry] >> 32
    else:
        entry = unused
        unused += 1
    pool[entry] = (np.int64(-1) << 32) | np.int64(node)
    last = tail[rank]
    if last >= 0:
        pool[last] = (np.int64(entry) << 32) | (pool[last] & 0xFFFFFFFF)
    else:
        head[rank] = entry
    tail[rank] = entry
    return free, unused


@kernel
def bucket_merges(pair_table, bits, sym, nxt, prv, cand, pool, n):
    """:func:`heap_merges`' merges (the same arguments and result, ``pool`` sized as its heap) with a bucket per
    rank instead of a heap, for a long pre-token: the ranks come up in increasing order and each bucket's nodes
    left to right, the order the heap pops them in, but a node enters its bucket in constant time and the buckets
    are read in order, not sifted at random. That order holds when every merge makes only pairs of higher rank
    than its own (its parts exist before it, as training makes them); a model that breaks this gets -1 as soon as
    a merge makes such a pair (its caller starts over with the heap). Returns how many entries were taken, else.
    Example: symbols ``a a a`` with the merge ``(a, a)`` -> ``aa`` rank 0: ``[aa, a]``, 2 entries taken."""
    # a bucket per rank below the table's slots over two: above the merges it holds, at most half full (a merge
    # ranked higher, possible only in a merges list that repeats pairs, sends the pre-token to the heap)
    ranks = np.int64(1) << (bits - 1)
    head = np.full(ranks, -1, np.int64)
    tail = np.full(ranks, -1, np.int64)
    order = np.empty(n, np.int32)  # one bucket's nodes (no more than n but for stale entries: then grown)
    free, unused = np.int64(-1), np.int64(0)
    cand[n - 1] = -1
    for i in range(n):
        nxt[i] = i + 1
        prv[i] = i - 1
        if cand[i] >= 0:
            if (cand[i] >> 32) >= ranks:
                return -1
            free, unused = _bucket_push(pool, head, tail, free, unused, cand[i] >> 32, i)
    taken = 0
    for rank in range(ranks):
        count = 0
        in_order = True
        entry = head[rank]
        while entry >= 0:  # the bucket's nodes (no merge of this rank adds any), its entries freed
            if count == order.shape[0]:
                grown = np.empty(2 * count, np.int32)
                grown[:count] = order
                order = grown
            order[count] = pool[entry] & 0xFFFFFFFF
            in_order = in_order and (count == 0 or order[count] > order[count - 1])
            count += 1
            following = pool[entry] >> 32
            pool[entry] = free << 32
            free = entry
            entry = following
        if count == 0:
            continue
        head[rank] = -1
        tail[rank] = -1
        if not in_order:
            order[:count].sort()
        taken += count
        for k in range(count):
            left = order[k]
            pending = cand[left]
            if pending < 0 or (pending >> 32) != rank:
                continue  # the pair at this node changed since it entered the bucket (or the node is gone)
            right = nxt[left]
            sym[left] = np.int32(pending & 0xFFFFFFFF)
            cand[right] = -1
            after = nxt[right]
            nxt[left] = after
            cand[left] = -1
            if after < n:
                prv[after] = left
                merge = pair_merge(pair_table, bits, sym[left], sym[after])
                if merge >= 0:
                    if (merge >> 32) <= rank or (merge >> 32) >= ranks:
                        return -1
                    cand[left] = merge
                    free, unused = _bucket_push(pool, head, tail, free, unused, merge >> 32, left)
            before = prv[left]
            if before >= 0:
                merge = pair_merge(pair_table, bits, sym[before], sym[left])
                cand[before] = -1
                if merge >= 0:
                    if (merge >> 32) <= rank or (merge >> 32) >= ranks:
                        return -1
                    cand[before] = merge
                    free, unused = _bucket_push(pool, head, tail, free, unused, merge >> 32, before)
    return taken


@kernel
def scan_merges(pair_table, bits, sym, starts, count, cand):
    """:func:`merge_pending`'s merges for a few symbols (at most :data:`SHORT_SYMBOLS`), in an array: the symbols
    in ``sym[:count]`` (int32), where each starts in ``starts[:count]`` (int32, kept in step with them), and on
    entry the merge of each adjacent pair in ``cand[:count - 1]`` (int64, :func:`pair_merge`'s); each round scans
    for the lowest rank (the leftmost on a tie), merges it and looks up only the two pairs it changed. Quadratic in
    ``count``, so only for a few symbols, where it beats a heap (most words). Returns ``(symbols left, merges
    done)``; ``sym[:count]`` and ``starts[:count]`` then hold the result. Symbols ``a``, ``b``, ``c`` with one
    merge ``(b, c)`` -> ``(2, 1)``."""
    merges = 0
    while count > 1:
        best = np.int64(NO_RANK)  # every merge's rank is below it
        at = -1
        for i in range(count - 1):
            if cand[i] >= 0 and (cand[i] >> 32) < best:
                best = cand[i] >> 32
                at = i
        if at < 0:
            break
        sym[at] = np.int32(cand[at] & 0xFFFFFFFF)
        for i in range(at + 1, count - 1):
            sym[i] = sym[i + 1]
            starts[i] = starts[i + 1]
            cand[i] = cand[i + 1]
        count -= 1
        merges += 1
        if at > 0:
            cand[at - 1] = pair_merge(pair_table, bits, sym[at - 1], sym[at])
        if at < count - 1:
            cand[at] = pair_merge(pair_table, bits, sym[at], sym[at + 1])
    return count, merges


@kernel(inline="always")
def _start_symbols(pair_table, bits, byte_to_id, data, start, n, sym, cand):
    """The single bytes of ``data[start:start + n]`` as symbols in ``sym[:n]`` and the merge of each adjacent pair
    in ``cand[:n - 1]`` (:func:`pair_merge`'s), as merge replay starts; returns whether any pair is a merge."""
    for i in range(n):
        sym[i] = byte_to_id[data[start + i]]
    merges = False
    for i in range(n - 1):
        cand[i] = pair_merge(pair_table, bits, sym[i], sym[i + 1])
        merges |= cand[i] >= 0
    return merges


@kernel
def ranked_bpe_into(pair_table, bits, byte_to_id, data, start, end, sym, nxt, prv, cand, heap,
                    steps, rng_state, out, pos):
    """Encode ``data[start:end]`` (one pre-token) by merge replay; ids to ``out[pos:]``; returns the new ``pos``.

    Work buffers of length >= ``end - start``: ``sym``, ``nxt``, ``prv`` (int32: each node's symbol, next and
    previous node), ``cand`` (int64: each node's pending merge, see :func:`pair_at`) and ``heap`` (int64, twice
    the length). ``steps[0]`` (int64) grows by the heap entries popped (merges done, for a short pre-token), a
    measure of the work done (tests bound it). ``rng_state`` (uint64[1]) is :func:`merge_pending`'s, never drawn
    from (merge replay has no dropout here). A pre-token in which no two neighbouring bytes merge is its bytes'
    ids at once (a long run of invalid UTF-8, say: one pass, no linked list); else pre-tokens of at most
    :data:`SHORT_SYMBOLS` bytes go through :func:`scan_merges`, of more than :data:`BUCKETS_ABOVE` through
    :func:`bucket_merges` (the same ids).
    """
    n = end - start
    if n == 0:
        return pos
    if not _start_symbols(pair_table, bits, byte_to_id, data, start, n, sym, cand):
        for i in range(n):  # no pair merges: the bytes as they are
            out[pos + i] = sym[i]
        return pos + n
    if n <= SHORT_SYMBOLS:
        for i in range(n):
            nxt[i] = i
        count, merges = scan_merges(pair_table, bits, sym, nxt, n, cand)
        steps[0] += merges
        for i in range(count):
            out[pos + i] = sym[i]
        return pos + count
    # buckets for a long pre-token, where their fixed cost (a pass over a bucket per rank) is small beside it
    buckets = n > BUCKETS_ABOVE and 8 * n >= np.int64(1) << (bits - 1)
    taken = bucket_merges(pair_table, bits, sym, nxt, prv, cand, heap, n) if buckets else -1
    if taken < 0:  # a shorter pre-token, or merges that do not rank upwards: the heap (from the start)
        if buckets:
            _start_symbols(pair_table, bits, byte_to_id, data, start, n, sym, cand)
        taken = heap_merges(pair_table, bits, sym, nxt, prv, cand, heap, n, 0.0, rng_state)
    steps[0] += taken
    node = 0
    while node < n:
        out[pos] = sym[node]
        pos += 1
        node = nxt[node]
    return pos


class ByteLevelEncoder:
    """The encoder of a model whose ``pretokenizer`` is ``{"name": "byte_level", "pattern": "gpt2" | "llama3" |
    "o200k" | None}``: regex pre-split, then merge replay (``bpe`` models; the merges come from
    ``provenance["bpe_merges"]["left_lengths"]``: for the NORMAL pieces of two or more bytes in rank order, i.e.
    by decreasing score then id, the byte length of each one's left part) or Viterbi (``unigram`` models) inside
    each pre-token. Built by :class:`tokenizer.compiled.CompiledModel`; read-only once built."""

    def __init__(self, model) -> None:
        from tokenizer.errors import ModelError
        from tokenizer.kernels.pretokenize import PATTERNS, char_class_table
        from tokenizer.model import PieceType

        pattern = model.pretokenizer.get("pattern")
        if pattern is not None and pattern not in PATTERNS:
            raise ModelError(f"unknown byte_level pattern {pattern!r}: use one of {sorted(PATTERNS)} or null")
        self.pattern = PATTERNS.get(pattern, 0) if pattern is not None else 0
        self.char_class = char_class_table() if self.pattern else np.zeros(1, np.uint8)
        self.is_bpe = model.algorithm == "bpe"
        self.ignore_merges = bool(model.pretokenizer.get("ignore_merges", False))
        # learned pieces only: an added token (e.g. "\n", CONTROL or USER_DEFINED) must not stand for its bytes
        types = np.asarray(model.types)
        learned = np.flatnonzero((types == int(PieceType.NORMAL)) | (types == int(PieceType.UNUSED))).tolist()
        normal_id = {model.pieces[i]: i for i in learned}  # as one pass over the pieces: a repeated piece's last id
        byte_to_id = np.array([normal_id.get(bytes([b]), -1) for b in range(256)], dtype=np.int32)
        if self.is_bpe:
            if (byte_to_id < 0).any():
                raise ModelError("a byte_level BPE model needs all 256 single bytes as pieces")
            self.byte_to_id = byte_to_id
            lengths_of = np.fromiter(map(len, model.pieces), np.int64, len(model.pieces))
            merged = np.flatnonzero((types == int(PieceType.NORMAL)) & (lengths_of > 1))
            scores = np.asarray(model.scores, np.float64)[merged]
            normal = merged[np.lexsort((merged, -scores))].tolist()  # by score, highest first; ties by id
            lengths = ((model.provenance or {}).get("bpe_merges") or {}).get("left_lengths")
            if lengths is None or len(lengths) != len(normal):
                raise ModelError(
                    f"this byte_level BPE model lists {0 if lengths is None else len(lengths)} merges for "
                    f"{len(normal)} merged pieces (provenance bpe_merges.left_lengths): retrain or re-import it"
                )
            left, right = [], []
            for i, split in zip(normal, lengths):
                piece = model.pieces[i]
                a, b = normal_id.get(piece[:split], -1), normal_id.get(piece[split:], -1)
                if not 0 < split < len(piece) or a < 0 or b < 0:
                    raise ModelError(f"merge of piece {i} ({piece!r}) at byte {split} does not split it into two "
                                     "pieces: the model file is inconsistent")
                left.append(a)
                right.append(b)
            self.merges = (np.array(left, np.int64), np.array(right, np.int64), np.array(normal, np.int64))
            rank_of = merge_ranks(self.merges[2], np.arange(len(normal)), model.vocab_size)
            self.pair_table, self.bits = build_pair_table(*self.merges, rank_of)
