"""Double-array trie over byte strings in compact units: one array read per input byte (O(1) transitions).

Layout: ONE integer array ``units`` (int32, or int64 when a payload does not fit in 20 bits); slot 0 is the root.
Each slot holds one unit::

    bits 0..8   tag: the byte (0..255) that leads to this node, or NOT_A_TARGET (256) for a free slot, the root,
                or a value slot; a lookup of byte c matches only a unit whose tag is c
    bit  9      HAS_VALUE: a key ends at this node
    bit  10     IS_LEAF: the node has no children; then the payload is the key's value
    bits 11..   payload: the node's base (children of byte c at ``base + 1 + c``), or its value for a leaf

An inner node that is also a key end keeps its value in the *value slot* ``base + 0`` (tag NOT_A_TARGET, payload
= value), next to its children. Lookup of byte ``c`` from a non-leaf unit ``u``::

    t = (u >> 11) + 1 + c;   child = units[t];   matched iff (child & 0x1FF) == c

The tag alone proves the match because every node with children has a base of its own (no two nodes share a
base): a slot ``t`` with tag ``c`` belongs to the one parent whose base is ``t - 1 - c``. The array is at least
``max(base) + 257`` long, so ``base + 1 + c`` never indexes out of bounds, and every base is >= 1, so no child
or value slot is slot 0. Leaves (most nodes) take no base at all; for a 32k-piece model this is about 4 bytes a
slot and fewer slots than a base/check/value layout with one slot per node and 12 bytes a slot.

Keys are inserted into an explicit trie (keys sorted, so each node's children are appended in label order), then
the nodes are placed breadth-first at the first base where the value slot (if any) and every child slot are free.

Example (hand-checkable)::

    >>> da = DoubleArray.build([b"a", b"ab", b"b"], [7, 8, 9])
    >>> data = np.frombuffer(b"abc", dtype=np.uint8)
    >>> ids, lengths = np.empty(4, np.int32), np.empty(4, np.int32)
    >>> n = common_prefix_search(da.units, data, 0, 3, ids, lengths)
    >>> ids[:n].tolist(), lengths[:n].tolist()
    ([7, 8], [1, 2])
    >>> int(exact_match(da.units, data, 1, 2))
    9
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenizer.kernels import kernel
from tokenizer.packed import pack

NO_VALUE = -1
NO_NODE = -1          # what step() returns when no transition exists (every real unit is >= 0)
TAG_MASK = 0x1FF
NOT_A_TARGET = 0x100  # tag of free slots, the root and value slots: equal to no byte
HAS_VALUE = 0x200
IS_LEAF = 0x400
PAYLOAD_SHIFT = 11
GIVE_UP_AFTER = 200   # placement: a free slot that failed this often as a first slot is no longer tried first
FIRST_SLACK = 1024    # placement starts with room for the nodes plus this many slots, and doubles when short
BYTE_LAYOUT = (NOT_A_TARGET, HAS_VALUE, IS_LEAF, PAYLOAD_SHIFT)


@kernel
def _build_trie(key_bytes, key_offsets, sorted_keys, key_values):
    """Explicit trie of the keys in ``sorted_keys`` order (lexicographic): first-child / next-sibling arrays.

    key_bytes uint8 (concatenated keys; or any integer labels, e.g. int32 character ids), key_offsets int64
    (n + 1), sorted_keys int64 (n), key_values int32 (n). Returns ``(label (the dtype of key_bytes), first_child
    int32, next_sibling int32, node_value int32, n_nodes)``; node 0 is the root.
    Raises ValueError on an empty or duplicate key.
    """
    capacity = key_bytes.shape[0] + 1
    label = np.zeros(capacity, key_bytes.dtype)
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
def _place(label, first_child, next_sibling, node_value, n_nodes, alphabet):
    """Choose a base for every node with children (breadth first, first fit, each base used once).

    Labels are ``0 .. alphabet - 1`` (256 for bytes). Returns ``(slot_of_node int64[n_nodes], base_of_node
    int64[n_nodes] (-1 for leaves), size, probes)``, ``probes`` the first slots tried in all (what the build's
    time follows; tests bound it by the node count): node 0 sits in slot 0; the children of a node with base ``b`` sit at
    ``b + 1 + label``, its value (if it has children and a value) at ``b``. Free slots form a doubly linked list
    (``next_free``/``prev_free``, slot 0 is its head), so the first-fit search visits free slots only; every slot
    past the last used one is free. A free slot that has failed as the first slot of ``GIVE_UP_AFTER`` placements
    leaves that list (it stays free for other nodes' children): without this, each placement would walk every
    hopeless hole left near the front (quadratic).
    """
    capacity = max(n_nodes + FIRST_SLACK, 2)
    used = np.zeros(capacity, np.uint8)
    listed = np.ones(capacity, np.uint8)  # in the free list (free, and not given up on)
    failures = np.zeros(capacity, np.uint8)
    base_taken = np.zeros(capacity, np.uint8)
    next_free = np.arange(1, capacity + 1).astype(np.int64)
    prev_free = np.arange(-1, capacity - 1).astype(np.int64)
    slot_of = np.zeros(n_nodes, np.int64)
    base_of = np.full(n_nodes, -1, np.int64)
    used[0] = 1
    listed[0] = 0
    next_free[0] = 1
    prev_free[1] = 0
    queue = np.empty(n_nodes, np.int64)
    queue[0] = 0
    head = 0
    tail = 1
    size = 1
    probes = 0
    need = np.empty(alphabet + 1, np.int64)  # slot offsets from the base: 0 for the value slot, 1 + label per child
    while head < tail:
        node = queue[head]
        head += 1
        count = 0
        if node != 0 and node_value[node] != NO_VALUE and first_child[node] >= 0:
            need[0] = 0
            count = 1
        child = first_child[node]
        while child >= 0:
            need[count] = 1 + np.int64(label[child])
            count += 1
            child = next_sibling[child]
        if first_child[node] < 0:
            continue
        p = next_free[0]
        b = 0
        while True:
            probes += 1
            if p + alphabet + 2 > capacity:
                grown = max(2 * capacity, p + 2 * alphabet + 2)
                new_used = np.zeros(grown, np.uint8)
                new_listed = np.ones(grown, np.uint8)
                new_failures = np.zeros(grown, np.uint8)
                new_listed[:capacity] = listed
                new_failures[:capacity] = failures
                new_taken = np.zeros(grown, np.uint8)
                new_next = np.arange(1, grown + 1).astype(np.int64)
                new_prev = np.arange(-1, grown - 1).astype(np.int64)
                new_used[:capacity] = used
                new_taken[:capacity] = base_taken
                new_next[:capacity] = next_free
                new_prev[:capacity] = prev_free
                last_free = capacity - 1  # the free slot before the new ones (0, the list head, if none)
                while last_free > 0 and (used[last_free] or not listed[last_free]):
                    last_free -= 1
                new_prev[capacity] = last_free
                used, base_taken, next_free, prev_free, capacity = new_used, new_taken, new_next, new_prev, grown
                listed, failures = new_listed, new_failures
            b = p - need[0]
            if b >= 1 and base_taken[b] == 0:
                fits = True
                for j in range(1, count):
                    if used[b + need[j]]:
                        fits = False
                        break
                if fits:
                    break
            following = next_free[p]
            failures[p] += 1
            if failures[p] >= GIVE_UP_AFTER:
                next_free[prev_free[p]] = following
                prev_free[following] = prev_free[p]
                listed[p] = 0
            p = following
        base_taken[b] = 1
        base_of[node] = b
        if b + alphabet + 1 > size:
            size = b + alphabet + 1
        j = 0
        if need[0] == 0:
            j = 1
        for k in range(count):
            slot = b + need[k]
            used[slot] = 1
            if listed[slot]:
                listed[slot] = 0
                next_free[prev_free[slot]] = next_free[slot]
                prev_free[next_free[slot]] = prev_free[slot]
            if slot + 1 > size:
                size = slot + 1
        child = first_child[node]
        while child >= 0:
            slot_of[child] = b + need[j]
            j += 1
            queue[tail] = child
            tail += 1
            child = next_sibling[child]
    if n_nodes == 1:
        size = alphabet + 2  # the root's base 0 (+ 1 + label) must stay in bounds
    return slot_of, base_of, size, probes


@kernel
def _encode_units(units, label, first_child, node_value, n_nodes, slot_of, base_of, not_a_target, has_value, is_leaf,
                  payload_shift):
    """Write every node's unit (and value slot) into ``units`` (pre-filled with ``not_a_target``), in the layout
    the last four arguments give (the module docstring's: NOT_A_TARGET, HAS_VALUE, IS_LEAF, PAYLOAD_SHIFT)."""
    root_base = base_of[0] if base_of[0] >= 0 else 0
    units[0] = not_a_target | (root_base << payload_shift)
    for node in range(1, n_nodes):
        value = node_value[node]
        tag = np.int64(label[node])
        if first_child[node] < 0:  # a leaf: always a key end
            units[slot_of[node]] = tag | has_value | is_leaf | (np.int64(value) << payload_shift)
        else:
            b = base_of[node]
            if value != NO_VALUE:
                units[slot_of[node]] = tag | has_value | (b << payload_shift)
                units[b] = not_a_target | (np.int64(value) << payload_shift)
            else:
                units[slot_of[node]] = tag | (b << payload_shift)


@kernel
def step(units, unit, byte):
    """The unit reached from node ``unit`` by ``byte``, or NO_NODE (-1). ``unit`` is ``units[0]`` for the root."""
    if unit & IS_LEAF:
        return NO_NODE
    child = units[(unit >> PAYLOAD_SHIFT) + 1 + byte]
    if (child & TAG_MASK) != byte:
        return NO_NODE
    return child


@kernel
def unit_value(units, unit):
    """The value of the key ending at node ``unit``, or NO_VALUE (-1) when no key ends there."""
    if unit & HAS_VALUE == 0:
        return NO_VALUE
    if unit & IS_LEAF:
        return unit >> PAYLOAD_SHIFT
    return units[unit >> PAYLOAD_SHIFT] >> PAYLOAD_SHIFT


@kernel(inline="always")
def unit_value_unbranched(units, unit):
    """:func:`unit_value` of a node where a key ends (``unit & HAS_VALUE``), without branching on leaf or inner node:
    the value slot is read either way (slot 0 for a leaf, whose value is in the unit itself). For a hot loop whose
    matches are leaves and inner nodes at random."""
    leaf = (unit & IS_LEAF) != 0
    slot = units[np.uint64(0 if leaf else unit >> PAYLOAD_SHIFT)]
    return (unit if leaf else slot) >> PAYLOAD_SHIFT


@kernel
def fill_two_byte_steps(units, table):
    """Fill ``table`` (``units``' dtype, 65536) with the unit reached from the root by byte ``c1`` then ``c2`` at
    ``c1 * 256 + c2``, or NO_NODE (-1): one read where a walk takes two dependent ones. Keys ``ab``, ``b``:
    ``table[ord("a") * 256 + ord("b")]`` is the unit of ``ab``, ``table[ord("b") * 256 + ord("a")]`` is -1."""
    root = units[0]
    for c1 in range(256):
        first = step(units, root, c1)
        for c2 in range(256):
            table[c1 * 256 + c2] = NO_NODE if first < 0 else step(units, first, c2)


@kernel
def common_prefix_search(units, data, start, end, out_ids, out_lengths):
    """Every key that is a prefix of ``data[start:end]``, shortest first.

    units int32 or int64 (a :class:`DoubleArray`), data uint8, out_ids/out_lengths int32 with room for the
    longest key length. Writes ids and byte lengths; returns how many matched.
    """
    node = units[0]
    count = 0
    for k in range(start, end):
        c = data[k]
        unit = units[(node >> PAYLOAD_SHIFT) + 1 + c]
        if (unit & TAG_MASK) != c:
            break
        node = unit
        if unit & HAS_VALUE:
            out_lengths[count] = k - start + 1
            if unit & IS_LEAF:
                out_ids[count] = unit >> PAYLOAD_SHIFT
                count += 1
                break
            out_ids[count] = units[unit >> PAYLOAD_SHIFT] >> PAYLOAD_SHIFT
            count += 1
    return count


@kernel
def exact_match(units, data, start, end):
    """Id of the key equal to ``data[start:end]``, or -1 (also for an empty range)."""
    if end <= start:
        return NO_VALUE
    node = units[0]
    for k in range(start, end):
        node = step(units, node, data[k])
        if node < 0:
            return NO_VALUE
    return unit_value(units, node)


@dataclass
class DoubleArray:
    """A built double array: ``units`` is an int32 array (int64 when a base or value exceeds 2**20 - 1)."""

    units: np.ndarray

    @classmethod
    def build(cls, keys: list[bytes], values: list[int] | np.ndarray | None = None, *,
              wide: bool = False) -> "DoubleArray":
        """Build from byte-string keys (non-empty, distinct) and their int32 values (default: the key index).

        ``wide=True`` forces int64 units (what large vocabularies get automatically; tests use it)."""
        n = len(keys)
        if values is None:
            values = np.arange(n, dtype=np.int32)
        values = np.ascontiguousarray(values, dtype=np.int32)
        if values.shape != (n,):
            raise ValueError(f"{n} keys but {values.shape[0]} values: pass one value per key")
        if n and values.min() < 0:
            raise ValueError("values must be >= 0 (-1 marks 'no key here')")
        blob, offsets = pack(keys)
        return cls(placed_units(keys, blob, offsets, values, 256, BYTE_LAYOUT, wide))

    @property
    def nbytes(self) -> int:
        return self.units.nbytes


def placed_units(keys: list, blob: np.ndarray, offsets: np.ndarray, values: np.ndarray, alphabet: int,
                 layout: tuple[int, int, int, int], wide: bool) -> np.ndarray:
    """The units of a double array over ``keys`` (non-empty, distinct; bytes, or tuples of character ids), whose
    labels ``blob``/``offsets`` hold packed (uint8 bytes, or int32 ids below ``alphabet``), with int32 ``values``,
    in ``layout`` ``(not_a_target, has_value, is_leaf, payload_shift)``: int32 units unless ``wide`` or a base or
    value needs more than ``31 - payload_shift`` bits. Raises ValueError naming an empty or repeated key."""
    n = len(keys)
    order = np.array(sorted(range(n), key=keys.__getitem__), dtype=np.int64)
    try:
        label, first_child, next_sibling, node_value, n_nodes = _build_trie(blob, offsets, order, values)
    except ValueError as exc:
        bad = [k for k in keys if not k] if "empty" in str(exc) else _duplicates(keys)
        raise ValueError(f"cannot build the trie: {exc} ({bad[:3]!r}); keys must be non-empty and distinct") from None
    slot_of, base_of, size, _ = _place(label, first_child, next_sibling, node_value, n_nodes, alphabet)
    largest = max(int(size), int(values.max()) if n else 0)
    not_a_target, has_value, is_leaf, payload_shift = layout
    dtype = np.int64 if wide or largest >= 1 << (31 - payload_shift) else np.int32
    units = np.full(int(size), not_a_target, dtype=dtype)
    _encode_units(units, label, first_child, node_value, n_nodes, slot_of, base_of, *layout)
    return units


def _duplicates(keys: list[bytes]) -> list[bytes]:
    seen: set[bytes] = set()
    return [k for k in keys if k in seen or seen.add(k)]
