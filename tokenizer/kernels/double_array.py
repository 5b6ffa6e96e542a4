"""Double-array trie over byte strings: one array lookup per input byte (O(1) transitions).

Layout (three int32 arrays of equal length, state 0 is the root)::

    t = base[s] + byte          # candidate next state
    check[t] == s               # the transition exists iff this holds
    value[t]                    # piece id stored at state t, or -1

Keys are inserted into an explicit trie (keys sorted, so each node's children are appended in label order), then
the nodes are placed breadth-first at the first offset ``base`` where every child slot ``base + label`` is free.
The arrays are at least ``max(base) + 256`` long, so ``base[s] + byte`` never indexes out of bounds.

Example (hand-checkable)::

    >>> da = DoubleArray.build([b"a", b"ab", b"b"], [7, 8, 9])
    >>> data = np.frombuffer(b"abc", dtype=np.uint8)
    >>> ids, lengths = np.empty(4, np.int32), np.empty(4, np.int32)
    >>> n = common_prefix_search(da.base, da.check, da.value, data, 0, 3, ids, lengths)
    >>> ids[:n].tolist(), lengths[:n].tolist()
    ([7, 8], [1, 2])
    >>> int(exact_match(da.base, da.check, da.value, data, 1, 2))
    9
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenizer.kernels import kernel

NO_VALUE = -1
ROOT_CHECK = -2  # slot 0 holds the root; no transition may land there


@kernel
def _build_trie(key_bytes, key_offsets, sorted_keys, key_values):
    """Explicit trie of the keys in ``sorted_keys`` order (lexicographic): first-child / next-sibling arrays.

    key_bytes uint8 (concatenated keys), key_offsets int64 (n + 1), sorted_keys int64 (n), key_values int32 (n).
    Returns ``(label uint8, first_child int32, next_sibling int32, node_value int32, n_nodes)``; node 0 is the root.
    Raises ValueError on an empty or duplicate key.
    """
    capacity = key_bytes.shape[0] + 1
    label = np.zeros(capacity, np.uint8)
    first_child = np.full(capacity, -1, np.int32)
    last_child = np.full(capacity, -1, np.int32)
    next_sibling = np.full(capacity, -1, np.int32)
    node_value = np.full(capacity, NO_VALUE, np.int32)
    n_nodes = 1
    for r in range(sorted_keys.shape[0]):
        k = sorted_keys[r]
        start = key_offsets[k]
        stop = key_offsets[k + 1]
        if stop == start:
            raise ValueError("empty key")
        node = 0
        for i in range(start, stop):
            c = key_bytes[i]
            child = last_child[node]
            if child >= 0 and label[child] == c:
                node = child
                continue
            new = n_nodes
            n_nodes += 1
            label[new] = c
            if child < 0:
                first_child[node] = new
            else:
                next_sibling[child] = new
            last_child[node] = new
            node = new
        if node_value[node] != NO_VALUE:
            raise ValueError("duplicate key")
        node_value[node] = key_values[k]
    return label, first_child, next_sibling, node_value, n_nodes


@kernel
def _place(label, first_child, next_sibling, node_value, n_nodes):
    """Place the trie's nodes into base/check/value arrays (breadth first, first fit). Returns the three arrays.

    Free slots form a doubly linked list (``next_free``/``prev_free``, slot 0 is its head), so the first-fit
    search visits free slots only. Every slot past the last used one is free and at least 257 of them exist.
    """
    capacity = 2 * n_nodes + 1024
    base = np.zeros(capacity, np.int32)
    check = np.full(capacity, -1, np.int32)
    value = np.full(capacity, NO_VALUE, np.int32)
    next_free = np.arange(1, capacity + 1).astype(np.int32)
    prev_free = np.arange(-1, capacity - 1).astype(np.int32)
    position = np.zeros(n_nodes, np.int32)
    check[0] = ROOT_CHECK
    queue = np.empty(n_nodes, np.int32)
    queue[0] = 0
    head = 0
    tail = 1
    max_used = 0
    labels = np.empty(256, np.int32)
    while head < tail:
        node = queue[head]
        head += 1
        here = position[node]
        count = 0
        child = first_child[node]
        while child >= 0:
            labels[count] = label[child]
            count += 1
            child = next_sibling[child]
        if count == 0:
            continue
        p = next_free[0]
        b = 0
        while True:
            if p + 257 > capacity:
                grown = max(2 * capacity, p + 512)
                new_base = np.zeros(grown, np.int32)
                new_check = np.full(grown, -1, np.int32)
                new_value = np.full(grown, NO_VALUE, np.int32)
                new_next = np.arange(1, grown + 1).astype(np.int32)
                new_prev = np.arange(-1, grown - 1).astype(np.int32)
                new_base[:capacity] = base
                new_check[:capacity] = check
                new_value[:capacity] = value
                new_next[:capacity] = next_free
                new_prev[:capacity] = prev_free
                base, check, value, capacity = new_base, new_check, new_value, grown
                next_free, prev_free = new_next, new_prev
            b = p - labels[0]
            if b >= 1:
                fits = True
                for j in range(1, count):
                    if check[b + labels[j]] != -1:
                        fits = False
                        break
                if fits:
                    break
            p = next_free[p]
        base[here] = b
        child = first_child[node]
        j = 0
        while child >= 0:
            slot = b + labels[j]
            check[slot] = here
            value[slot] = node_value[child]
            position[child] = slot
            next_free[prev_free[slot]] = next_free[slot]
            prev_free[next_free[slot]] = prev_free[slot]
            if slot > max_used:
                max_used = slot
            queue[tail] = child
            tail += 1
            child = next_sibling[child]
            j += 1
    size = max_used + 257
    for s in range(capacity):
        if base[s] + 257 > size:
            size = base[s] + 257
    return base[:size].copy(), check[:size].copy(), value[:size].copy()


@kernel
def common_prefix_search(base, check, value, data, start, end, out_ids, out_lengths):
    """Every key that is a prefix of ``data[start:end]``, shortest first.

    base/check/value int32 (a :class:`DoubleArray`), data uint8, out_ids/out_lengths int32 with room for the
    longest key length. Writes ids and byte lengths; returns how many matched.
    """
    state = 0
    count = 0
    for k in range(start, end):
        t = base[state] + data[k]
        if check[t] != state:
            break
        state = t
        if value[t] >= 0:
            out_ids[count] = value[t]
            out_lengths[count] = k - start + 1
            count += 1
    return count


@kernel
def exact_match(base, check, value, data, start, end):
    """Id of the key equal to ``data[start:end]``, or -1 (also for an empty range)."""
    state = 0
    for k in range(start, end):
        t = base[state] + data[k]
        if check[t] != state:
            return NO_VALUE
        state = t
    if end <= start:
        return NO_VALUE
    return value[state]


@dataclass
class DoubleArray:
    """A built double array; ``base``, ``check``, ``value`` are int32 arrays of equal length."""

    base: np.ndarray
    check: np.ndarray
    value: np.ndarray

    @classmethod
    def build(cls, keys: list[bytes], values: list[int] | np.ndarray | None = None) -> "DoubleArray":
        """Build from byte-string keys (non-empty, distinct) and their int32 values (default: the key index)."""
        n = len(keys)
        if values is None:
            values = np.arange(n, dtype=np.int32)
        values = np.ascontiguousarray(values, dtype=np.int32)
        if values.shape != (n,):
            raise ValueError(f"{n} keys but {values.shape[0]} values: pass one value per key")
        if n and values.min() < 0:
            raise ValueError("values must be >= 0 (-1 marks 'no key here')")
        lengths = np.fromiter((len(k) for k in keys), dtype=np.int64, count=n)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        blob = np.frombuffer(b"".join(keys), dtype=np.uint8) if n else np.zeros(0, np.uint8)
        order = np.array(sorted(range(n), key=keys.__getitem__), dtype=np.int64)
        try:
            label, first_child, next_sibling, node_value, n_nodes = _build_trie(blob, offsets, order, values)
        except ValueError as exc:
            bad = [k for k in keys if not k] if "empty" in str(exc) else _duplicates(keys)
            raise ValueError(f"cannot build the trie: {exc} ({bad[:3]!r}); keys must be non-empty and distinct") from None
        base, check, value = _place(label, first_child, next_sibling, node_value, n_nodes)
        return cls(base, check, value)

    @property
    def nbytes(self) -> int:
        return self.base.nbytes + self.check.nbytes + self.value.nbytes


def _duplicates(keys: list[bytes]) -> list[bytes]:
    seen: set[bytes] = set()
    return [k for k in keys if k in seen or seen.add(k)]
