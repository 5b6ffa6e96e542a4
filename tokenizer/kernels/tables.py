"""A model's tables as one record of five typed arrays, so that an entry point takes five arguments instead of one
per table.

Every array argument of a compiled function is unboxed on every call (tens of nanoseconds each), and so is every
``.view`` that reinterprets bytes; slicing an array costs next to nothing. A record therefore groups the tables by
dtype, each group concatenated into one array::

    units   the double arrays (int32, or int64 when one of them needs it)
    scores  the score tables (float32 or float64)
    ints    int32 tables          small   uint8 tables          longs   int64: a header, then int64 tables

The header (the first ``2k`` words of ``longs``) gives each table's ``[start, stop)`` inside its group, table
``i`` at words ``2i, 2i + 1``; tables are numbered through the groups in the order above (all units tables first,
then scores, ...). An entry point reads table ``i`` as ``part(group, longs, i)``.

Example (hand-checkable)::

    >>> units, scores, ints, small, longs = pack_record(ints=[np.array([7, 8], np.int32)], longs=[np.array([9])])
    >>> part(ints, longs, 0).tolist(), part(longs, longs, 1).tolist()
    ([7, 8], [9])
"""

from __future__ import annotations

import numpy as np

from tokenizer.kernels import kernel


def pack_record(units=(), scores=(), ints=(), small=(), longs=(), score_dtype=np.float32) -> tuple:
    """``(units, scores, ints, small, longs)`` arrays holding the given tables (see the module docstring); an empty
    ``scores`` group takes ``score_dtype``."""
    units_dtype = np.int64 if any(np.asarray(u).dtype == np.int64 for u in units) else np.int32
    if scores:
        score_dtype = np.asarray(scores[0]).dtype
    groups = [[np.asarray(t, dtype) for t in group] for group, dtype in
              ((units, units_dtype), (scores, score_dtype), (ints, np.int32), (small, np.uint8), (longs, np.int64))]
    count = sum(len(group) for group in groups)
    header = np.zeros(2 * count, np.int64)
    packed, slot = [], 0
    for g, group in enumerate(groups):
        position = 2 * count if g == 4 else 0
        for t in group:
            header[2 * slot], header[2 * slot + 1] = position, position + len(t)
            position += len(t)
            slot += 1
        parts = ([header] if g == 4 else []) + group
        dtype = (units_dtype, score_dtype, np.int32, np.uint8, np.int64)[g]
        packed.append(np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype))
    return tuple(packed)


@kernel(inline="always")
def part(group, longs, i):
    """Table ``i`` of a record: a slice of its ``group`` array (no copy). Compiled into its caller, so that an
    entry that borrows its arrays (``@kernel(borrows=True)``) may take views of them."""
    return group[longs[2 * i]:longs[2 * i + 1]]
