"""The driver's memory bound on a count table: keep the most frequent entries, ties by key, within at most
``limit`` entries and at most ``byte_limit`` bytes of keys, and say what was dropped. Pure functions of the
table's count histogram (entries and key bytes at each count) and of the keys at one count, so a distributed engine
can decide the cut before anything is collected (:func:`pipelines.spark.reduce.bounded_collect`).

The kept set is exactly defined: entries are ranked by count (descending), then key (int64 keys numerically, byte
keys as bytes), and the longest run from the top is kept whose entries and key bytes (a byte key's length; 8 for an
int64 key) stay within both limits. It depends only on the table, never on how it was counted or partitioned. The
engines find it in two steps: :func:`cut` on the histogram names the count where the run ends and the room left
there, :func:`fitting` takes the smallest keys at that count that fit the room (of the :func:`candidates` each
part of a distributed table sends).

    >>> cut(histogram(np.array([5, 3, 3, 1, 1, 1, 1])), 2)     # entries only: keep 5 and one of the 3s
    (3, 1, 16)
    >>> fitting([b"ab", b"c", b"de"], 3, 3)                    # the smallest keys within 3 entries and 3 bytes
    [b'ab', b'c']
    >>> cut(histogram(np.array([5, 3])), 10) is None
    True
"""

from __future__ import annotations

import numpy as np

#: the bytes an int64 key (a packed BytePiece n-gram) counts for
INT64_KEY_BYTES = 8


def limits(limit) -> tuple[int | None, int | None]:
    """``(entries, key bytes)`` of a bound given as an entry count, an ``(entries, bytes)`` pair (either None) or
    None: ``limits(5) == (5, None)``; 0 is no bound."""
    entries, key_bytes = (limit if isinstance(limit, tuple) else (limit, None))
    return entries or None, key_bytes or None


def histogram(counts: np.ndarray, key_bytes: np.ndarray | None = None) -> dict[int, tuple[int, int]]:
    """``{count: (entries with that count, their key bytes)}`` of an int64 count array and the key length of each
    entry (None: int64 keys, :data:`INT64_KEY_BYTES` each)."""
    counts = np.asarray(counts, np.int64)
    lengths = np.full(len(counts), INT64_KEY_BYTES, np.int64) if key_bytes is None else np.asarray(key_bytes, np.int64)
    values, inverse, entries = np.unique(counts, return_inverse=True, return_counts=True)
    total = np.bincount(inverse.reshape(-1), weights=lengths, minlength=len(values)).astype(np.int64)
    return {int(c): (int(n), int(b)) for c, n, b in zip(values.tolist(), entries.tolist(), total.tolist())}


def add_histograms(*parts) -> dict[int, tuple[int, int]]:
    """The sum of histograms (a part may be JSON's ``[[count, [entries, bytes]], ...]`` or a dict)."""
    total: dict[int, tuple[int, int]] = {}
    for part in parts:
        for count, (entries, key_bytes) in (part.items() if isinstance(part, dict) else part):
            old = total.get(int(count), (0, 0))
            total[int(count)] = (old[0] + int(entries), old[1] + int(key_bytes))
    return total


def cut(by_count: dict[int, tuple[int, int]], limit) -> tuple[int, int, int] | None:
    """``(cut count, entries room, bytes room)``: every entry above the cut count is kept, and at the cut count the
    smallest keys that fit both rooms (:func:`fitting`); ``None`` when the whole table is within ``limit``
    (:func:`limits`). With an entry limit only, the room is exactly what is kept at the cut count."""
    max_entries, max_bytes = limits(limit)
    entries = sum(n for n, _ in by_count.values())
    key_bytes = sum(b for _, b in by_count.values())
    if (max_entries is None or entries <= max_entries) and (max_bytes is None or key_bytes <= max_bytes):
        return None
    kept_entries = kept_bytes = 0
    for count in sorted(by_count, reverse=True):
        n, b = by_count[count]
        if (max_entries is not None and kept_entries + n >= max_entries) or \
                (max_bytes is not None and kept_bytes + b > max_bytes):
            return (count, n if max_entries is None else min(n, max_entries - kept_entries),
                    b if max_bytes is None else max_bytes - kept_bytes)
        kept_entries += n
        kept_bytes += b
    raise AssertionError("unreachable: the table is over its limit")


def key_length(key) -> int:
    """The bytes a key counts for: a byte key's length, :data:`INT64_KEY_BYTES` for an int."""
    return INT64_KEY_BYTES if isinstance(key, int) else len(key)


def fitting(sorted_keys: list, entries_room: int, bytes_room: int) -> list:
    """The first keys of ``sorted_keys`` while there are at most ``entries_room`` of them and their bytes
    (:func:`key_length`) stay within ``bytes_room``."""
    kept = 0
    for i, key in enumerate(sorted_keys[:entries_room]):
        kept += key_length(key)
        if kept > bytes_room:
            return sorted_keys[:i]
    return sorted_keys[:entries_room]


def candidates(sorted_keys: list, entries_room: int, bytes_room: int) -> list:
    """:func:`fitting`'s keys and the first key after them (if any): what a part of a table (a partition, a
    bucket) sends so that :func:`fitting` of the sorted union of all parts' candidates is the whole table's. A key
    that fits overall fits in its part (behind fewer smaller keys), and the first key that does not fit overall
    is in its part's fitting keys or right after them. ``candidates([b"ab", b"c", b"de"], 3, 1)`` -> ``[b"ab"]``."""
    kept = fitting(sorted_keys, entries_room, bytes_room)
    return sorted_keys[:len(kept) + 1]


def report(by_count: dict[int, tuple[int, int]], limit, kept_at_cut: tuple[int, list] | None) -> dict:
    """What the bound did, for the manifest and the summary: entries, key bytes and occurrences (the sum of the
    counts) before and after, and the share of occurrences kept. ``kept_at_cut``: ``(cut count, the keys kept at
    it)``, None when nothing was cut."""
    max_entries, max_bytes = limits(limit)
    entries = sum(n for n, _ in by_count.values())
    key_bytes = sum(b for _, b in by_count.values())
    occurrences = sum(count * n for count, (n, _) in by_count.items())
    if kept_at_cut is None:
        kept_entries, kept_bytes, kept_occurrences = entries, key_bytes, occurrences
    else:
        count_at_cut, keys = kept_at_cut
        above = [(c, n, b) for c, (n, b) in by_count.items() if c > count_at_cut]
        kept_entries = sum(n for _, n, _ in above) + len(keys)
        kept_bytes = sum(b for _, _, b in above) + sum(map(key_length, keys))
        kept_occurrences = sum(c * n for c, n, _ in above) + count_at_cut * len(keys)
    return {"limit": max_entries, "byte_limit": max_bytes, "entries": int(entries), "kept_entries": int(kept_entries),
            "dropped_entries": int(entries - kept_entries), "bytes": int(key_bytes), "kept_bytes": int(kept_bytes),
            "occurrences": int(occurrences), "kept_occurrences": int(kept_occurrences),
            "kept_share": round(kept_occurrences / occurrences, 6) if occurrences else 1.0,
            "cut_count": None if kept_at_cut is None else int(kept_at_cut[0])}


def provenance(bounds: dict[str, dict]) -> dict:
    """The models' provenance entry of the bounds that dropped entries (``{}`` when none did, so a bound that
    changed nothing leaves the model bytes as they were): ``{"table_bound": {"chunks": {"limit": ..., ...}}}``;
    the byte fields only where a byte limit was set."""
    fields = ("limit", "entries", "kept_entries", "kept_share", "cut_count")
    dropped = {name: {k: report[k] for k in fields + (("byte_limit", "bytes", "kept_bytes")
                                                       if report.get("byte_limit") else ())}
               for name, report in sorted(bounds.items()) if report.get("dropped_entries")}
    return {"table_bound": dropped} if dropped else {}
