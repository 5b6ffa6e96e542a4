"""The driver's memory bound on a count table: keep the ``limit`` most frequent entries, ties by key, and say what
was dropped. Pure functions of the table's count histogram, so a distributed engine can decide the cut before
anything is collected (:mod:`pipelines.bound`).

The kept set is exactly defined: every entry whose count is above the cut count, then, among the entries at the
cut count, the smallest keys (int64 keys numerically, byte keys as bytes) until ``limit`` entries are kept. It
depends only on the table, never on how it was counted or partitioned.

    >>> cut({5: 1, 3: 2, 1: 4}, 2)       # counts 5, 3, 3, 1, 1, 1, 1 -> keep 5 and one of the 3s
    (3, 1)
    >>> cut({5: 1, 3: 2}, 10) is None
    True
"""

from __future__ import annotations

import numpy as np


def histogram(counts: np.ndarray) -> dict[int, int]:
    """``{count: number of entries with that count}`` of an int64 count array."""
    values, entries = np.unique(np.asarray(counts, np.int64), return_counts=True)
    return dict(zip(values.tolist(), entries.tolist()))


def add_histograms(*parts: dict[int, int]) -> dict[int, int]:
    total: dict[int, int] = {}
    for part in parts:
        for count, entries in part.items():
            total[int(count)] = total.get(int(count), 0) + int(entries)
    return total


def cut(entries_by_count: dict[int, int], limit: int) -> tuple[int, int] | None:
    """``(cut count, entries to keep at the cut count)`` that keeps exactly ``limit`` entries (see the module
    docstring), or ``None`` when the table has at most ``limit`` entries."""
    if sum(entries_by_count.values()) <= limit:
        return None
    kept = 0
    for count in sorted(entries_by_count, reverse=True):
        if kept + entries_by_count[count] >= limit:
            return count, limit - kept
        kept += entries_by_count[count]
    raise AssertionError("unreachable: the table has more than limit entries")


def report(entries_by_count: dict[int, int], limit: int, decision: tuple[int, int] | None) -> dict:
    """What the bound did, for the manifest and the summary: entries and occurrences (the sum of the counts)
    before and after, and the share of occurrences kept."""
    entries = sum(entries_by_count.values())
    occurrences = sum(count * n for count, n in entries_by_count.items())
    if decision is None:
        kept_entries, kept_occurrences = entries, occurrences
    else:
        count_at_cut, at_cut = decision
        kept_entries = limit
        kept_occurrences = sum(c * n for c, n in entries_by_count.items() if c > count_at_cut) + count_at_cut * at_cut
    return {"limit": int(limit), "entries": int(entries), "kept_entries": int(kept_entries),
            "dropped_entries": int(entries - kept_entries), "occurrences": int(occurrences),
            "kept_occurrences": int(kept_occurrences),
            "kept_share": round(kept_occurrences / occurrences, 6) if occurrences else 1.0,
            "cut_count": None if decision is None else int(decision[0])}


def provenance(bounds: dict[str, dict]) -> dict:
    """The models' provenance entry of the bounds that dropped entries (``{}`` when none did, so a bound that
    changed nothing leaves the model bytes as they were): ``{"table_bound": {"chunks": {"limit": ..., ...}}}``."""
    dropped = {name: {k: report[k] for k in ("limit", "entries", "kept_entries", "kept_share", "cut_count")}
               for name, report in sorted(bounds.items()) if report.get("dropped_entries")}
    return {"table_bound": dropped} if dropped else {}
