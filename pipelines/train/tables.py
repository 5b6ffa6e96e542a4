"""Count tables as every engine reduces them: the two key kinds, their exact merge, hash buckets, a compact byte
encoding, and the driver's memory bound on a table it holds. No engine here: Spark's reduce
(:mod:`pipelines.spark.reduce`) and the in-process engine (:mod:`pipelines.inprocess.engine`) both call these.

Tables have one of two key kinds (:data:`KINDS`): ``int64``, ``(keys int64 sorted, counts int64)`` with packed
n-gram keys (the fast path: keys are bytes plus length in one integer), and ``bytes``, ``(data uint8, offsets
int64, counts int64)`` with any byte strings as keys. Both merge with their trainer's monoid
(:func:`tokenizer.trainers.bytepiece.merge_counts`, :func:`tokenizer.trainers.chunk_table.merge`). A count
(:data:`Counter`) turns Arrow batches of documents into one table and named side statistics; :func:`reduce_table`
is what a reduce does with the tables of one bucket (or, in one process, with the one table): merge, expand
(:class:`KeyGroups`), cut by ``keep``, count the distinct keys.

Example (hand-checkable)::

    >>> keys, counts = merge("int64", [(np.array([1, 5]), np.array([2, 1])), (np.array([5]), np.array([3]))])
    >>> keys.tolist(), counts.tolist()
    ([1, 5], [2, 4])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

from tokenizer.trainers import chunk_table as T
from tokenizer.trainers import table_bound as B

KINDS = ("int64", "bytes")

#: ``(Arrow batches of one binary column, threads) -> (table, stats)``; runs where the engine counts (picklable)
Counter = Callable[[Iterator, int], tuple[tuple, dict]]


@dataclass(frozen=True)
class KeyGroups:
    """How an int64 table whose keys are not yet final is reduced (BytePiece's n-grams: the longest n-gram at each
    position, expanded to every n-gram in the reduce): ``group(keys)`` gives the int64 values whose hash decides
    each key's bucket, so a whole group meets in one reduce task, and ``expand(table)`` turns a merged table of
    whole groups into the final counts (before ``keep``). Both module-level functions (they are pickled)."""

    group: Callable[[np.ndarray], np.ndarray]
    expand: Callable[[tuple], tuple]


def empty(kind: str) -> tuple:
    return (np.zeros(0, np.int64), np.zeros(0, np.int64)) if kind == "int64" else T.empty()[0]


def size(kind: str, table: tuple) -> int:
    """Number of keys of a table."""
    return len(table[-1])


def merge(kind: str, tables: list[tuple]) -> tuple:
    """Sum tables of one kind exactly (int64 ones pairwise as a balanced tree, so the result stays sorted)."""
    if kind == "bytes":
        return T.merge(*((table, {}) for table in tables))[0] if tables else empty(kind)
    from tokenizer.trainers.bytepiece import merge_counts

    tables = list(tables) or [empty(kind)]
    while len(tables) > 1:
        tables = [merge_counts(tables[i], tables[i + 1]) if i + 1 < len(tables) else tables[i]
                  for i in range(0, len(tables), 2)]
    return tables[0]


def buckets_of(kind: str, table: tuple, buckets: int, groups: KeyGroups | None = None) -> np.ndarray:
    """Bucket (0..buckets-1, int64) of every key: a multiplicative hash of int64 keys (packed n-grams keep their
    length in the low bits; with ``groups``, of their group), Spark's xxhash64 of byte keys. Every occurrence of a
    key gets the same bucket."""
    if kind == "int64":
        keys = np.asarray(table[0], np.int64) if groups is None else groups.group(table[0])
        mixed = keys.view(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        return ((mixed >> np.uint64(32)) % np.uint64(buckets)).astype(np.int64)
    from tokenizer.kernels.xxhash import span_buckets

    return span_buckets(table[0], table[1], buckets)


def select(kind: str, table: tuple, mask: np.ndarray) -> tuple:
    """The entries of ``table`` where ``mask`` (bool) is true, in their order, or at the indices ``mask`` (int)
    lists, in that order."""
    if kind == "int64":
        return table[0][mask], table[1][mask]
    from tokenizer.kernels.chunk_count import gather_spans

    data, offsets, counts = table
    starts, ends = offsets[:-1][mask], offsets[1:][mask]
    chunk_data, chunk_offsets = gather_spans(np.ascontiguousarray(data, np.uint8), starts, ends)
    return chunk_data, chunk_offsets, np.asarray(counts, np.int64)[mask]


def slice_rows(kind: str, table: tuple, start: int, stop: int) -> tuple:
    """Entries ``start .. stop - 1`` of ``table``, as a table of its own (byte keys re-based to offset 0)."""
    if kind == "int64":
        return table[0][start:stop], table[1][start:stop]
    data, offsets, counts = table
    return data[offsets[start]:offsets[stop]], offsets[start:stop + 1] - offsets[start], counts[start:stop]


def encode(kind: str, table: tuple) -> bytes:
    """A table as bytes, compact (what the shuffle carries): its number of entries (8 bytes), the int64 keys as
    varints of their differences (:mod:`tokenizer.kernels.varint`: sorted keys take a byte or two each) or the byte
    keys' lengths as varints, the counts as varints, then the byte keys' bytes. Example: an int64 table
    ``([5, 7], [1, 300])`` -> ``02 00 .. 00 | 0a 04 | 01 ac 02``."""
    from tokenizer.kernels.varint import MAX_VARINT_BYTES, encode_varints

    n = size(kind, table)
    columns = ([(table[0], True)] if kind == "int64" else [(np.diff(table[1]), False)]) + [(table[-1], False)]
    out = np.empty(8 + MAX_VARINT_BYTES * n * len(columns), np.uint8)
    out[:8] = np.frombuffer(n.to_bytes(8, "little"), np.uint8)
    end = 8
    for values, delta in columns:
        end = encode_varints(np.ascontiguousarray(values, np.int64), delta, out, end)
    head = out[:end].tobytes()
    if kind == "int64" or not n:
        return head
    data, offsets = table[0], table[1]
    return head + np.ascontiguousarray(data[offsets[0]:offsets[-1]], np.uint8).tobytes()


def decode(kind: str, blob) -> tuple:
    """The table :func:`encode` wrote (``blob``: bytes or a buffer; the byte keys' bytes stay a view of it)."""
    from tokenizer.kernels.varint import decode_varints

    data = np.frombuffer(blob, np.uint8)
    n = int.from_bytes(data[:8].tobytes(), "little") if len(data) >= 8 else -1
    columns = [np.empty(max(n, 0), np.int64) for _ in range(2)]
    end = 8
    for column, delta in zip(columns, (kind == "int64", False)):
        end = decode_varints(data, end, column, delta) if end >= 0 and n >= 0 else -1
    if end < 0 or (kind == "int64" and end != len(data)):
        raise ValueError(f"a shuffled {kind} table of {len(data)} bytes is cut short or corrupt: rerun the job")
    if kind == "int64":
        return columns[0], columns[1]
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(columns[0], out=offsets[1:])
    if int(offsets[-1]) != len(data) - end:
        raise ValueError(f"a shuffled bytes table of {len(data)} bytes is cut short or corrupt: rerun the job")
    return data[end:], offsets, columns[1]


@dataclass
class Reduced:
    """What an engine's count gives the fit: the ``table``, the summed ``stats``, what the memory bound did
    (``bound``, :func:`tokenizer.trainers.table_bound.report`), the first held-out and training documents when the
    count was asked to keep them (in input order), and where the entries ``keep`` set aside are (``aside``: the
    engine's own handle, for its ``map_aside``; ``None`` when nothing was set aside)."""

    table: tuple
    stats: dict
    bound: dict = field(default_factory=dict)
    held_out: list[bytes] = field(default_factory=list)
    training: list[bytes] = field(default_factory=list)
    aside: Any = None


def joined(kind: str, tables: list) -> tuple:
    """Tables of disjoint keys (the reduced hash buckets) as one table in the canonical order the fits take: int64
    keys sorted, byte keys sorted by bytes (no hash table; ``tables`` is emptied as they are copied). Example: int64
    ``[([5], [1]), ([2], [3])]`` -> ``([2, 5], [3, 1])``."""
    if kind == "bytes":
        from tokenizer.trainers.bpe import sort_chunk_tables

        chunks, counts = sort_chunk_tables(tables)
        return chunks.data, chunks.offsets, counts
    from tokenizer.trainers.bytepiece import join_counts

    return join_counts(tables)


def chunk_table_of(reduced: Reduced) -> T.ChunkTable:
    """The sorted :class:`~tokenizer.trainers.chunk_table.ChunkTable` of a reduced ``bytes`` table (unigram's and
    BPE's chunks); its statistics as the counters gave them (the reduce's own ``distinct_keys`` is in the bound's
    report)."""
    stats = {k: v for k, v in reduced.stats.items() if k != "distinct_keys"}
    return T.finish(reduced.table, stats, reduced.held_out, reduced.training, reduced.bound)


def by_bucket(kind: str, table: tuple, buckets: int, groups: KeyGroups | None = None
              ) -> Iterator[tuple[int, tuple]]:
    """``(bucket, part)`` of every hash bucket that has keys: the table reordered by bucket once (a stable sort,
    so each part keeps the table's order), then cut into contiguous parts."""
    if not size(kind, table):
        return
    bucket_of = buckets_of(kind, table, buckets, groups)
    order = np.argsort(bucket_of, kind="stable")
    present = np.flatnonzero(np.bincount(bucket_of, minlength=buckets)).tolist()
    bounds = np.searchsorted(bucket_of[order], np.arange(buckets + 1), side="left")
    ordered = select(kind, table, order)
    for bucket in present:
        yield bucket, slice_rows(kind, ordered, int(bounds[bucket]), int(bounds[bucket + 1]))


def reduce_table(kind: str, tables: list, keep: Callable[[tuple], np.ndarray] | None = None,
                 set_aside: bool = False, groups: KeyGroups | None = None) -> tuple[tuple, tuple | None, int, dict]:
    """Tables of disjoint keys from the rest (one hash bucket, or all of them) merged (with ``groups``, expanded to
    their final counts) and cut down by ``keep``: ``(kept table, set-aside table or None, distinct keys before
    keep, count histogram of the kept entries)``; ``tables`` is emptied. Without ``set_aside`` what ``keep`` drops
    is discarded."""
    merged = merge(kind, tables)
    tables.clear()
    if groups is not None:
        merged = groups.expand(merged)
    distinct = size(kind, merged)
    aside = None
    if keep is not None:
        mask = keep(merged)
        if set_aside:
            aside = select(kind, merged, ~mask)
        merged = select(kind, merged, mask)
    return merged, aside, distinct, histogram(kind, merged)


def histogram(kind: str, table: tuple) -> dict:
    """The table's :func:`tokenizer.trainers.table_bound.histogram`: ``{count: (entries, key bytes)}``."""
    return B.histogram(table[-1], None if kind == "int64" else np.diff(table[1]))


def keys_at(kind: str, table: tuple, count: int) -> list:
    """The keys of the entries at ``count``, sorted (int64 numerically, byte keys as bytes)."""
    at = np.flatnonzero(table[-1] == count)
    if kind == "int64":
        return sorted(table[0][at].tolist())
    data, offsets = table[0], table[1]
    return sorted(data[offsets[i]:offsets[i + 1]].tobytes() for i in at.tolist())


def bounded_table(kind: str, table: tuple, limit) -> tuple[tuple, dict]:
    """``(table, report)``: a table this process holds (the in-process engine) cut to the most frequent entries
    within ``limit`` (entries, or ``(entries, key bytes)``: :func:`tokenizer.trainers.table_bound.limits`), ties
    by key: the cut :func:`pipelines.spark.reduce.bounded_collect` makes on the executors."""
    by_count = histogram(kind, table)
    decision = B.cut(by_count, limit)
    kept_at_cut = None
    if decision is not None:
        count, entries_room, bytes_room = decision
        kept_at_cut = count, B.fitting(keys_at(kind, table, count), entries_room, bytes_room)
        table = select(kind, table, kept_mask(kind, table, count, last_kept(kept_at_cut[1])))
    return table, B.report(by_count, limit, kept_at_cut)


def last_kept(keys: list):
    """The largest key kept at the cut count (None: none is)."""
    return keys[-1] if keys else None


def kept_mask(kind: str, table: tuple, count: int, last_key) -> np.ndarray:
    """Entries above ``count``, and those at ``count`` whose key is at most ``last_key`` (None: none of them)."""
    counts = table[-1]
    mask = counts > count
    if last_key is None:
        return mask
    at = np.flatnonzero(counts == count)
    if kind == "int64":
        mask[at] = table[0][at] <= last_key
    else:
        data, offsets = table[0], table[1]
        for i in at.tolist():
            mask[i] = data[offsets[i]:offsets[i + 1]].tobytes() <= last_key
    return mask
