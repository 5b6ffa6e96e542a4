"""Shards of Arrow text columns: zero-copy buffers, packed shards of ~2 MB, and a small thread pool over them.

Every Spark step that counts or encodes text reads its partition's Arrow batches through :func:`iter_shards`
(packed ``(data uint8, offsets int64)`` shards, fewer kernel calls than one per batch) and runs its nogil kernels
on several shards at once with :func:`map_shards`.

    >>> import pyarrow as pa
    >>> [(d.tobytes(), o.tolist()) for d, o in iter_shards([pa.record_batch([pa.array([b"ab", b"c"])], ["text"])])]
    [(b'abc', [0, 2, 3])]
"""

from __future__ import annotations

from typing import Callable, Iterable, Iterator, TypeVar

import numpy as np

from tokenizer.errors import InputError
from tokenizer.ordered_threads import map_in_order
from tokenizer.packed import from_arrow

SHARD_BYTES = 2 << 20  # per kernel call: counting a shard's n-grams takes ~30 bytes per text byte


def binary_buffers(array) -> tuple[np.ndarray, np.ndarray]:
    """``(data uint8, offsets int64)`` of a pyarrow binary/string (or large_) array without copying the data
    (:func:`tokenizer.packed.from_arrow`, offsets widened to int64).

    Nulls must have been filtered out. Example: ``pa.array([b"ab", b"c"])`` -> ``(b"abc", [0, 2, 3])``.
    """
    if array.null_count:
        raise InputError(f"{array.null_count} null documents reached the counting step: filter nulls first")
    data, offsets = from_arrow(array)
    return data, offsets.astype(np.int64)


def iter_shards(batches: Iterator, shard_bytes: int = SHARD_BYTES) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """Group Arrow batches of one ``text`` column into packed shards of about ``shard_bytes`` (fewer kernel calls
    and merges per partition). Yields ``(data uint8, offsets int64 starting at 0)``."""
    pending, size = [], 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        data, offsets = binary_buffers(batch.column(0))
        pending.append((data, offsets))
        size += int(offsets[-1] - offsets[0])
        if size >= shard_bytes:
            yield _concat(pending)
            pending, size = [], 0
    if pending:
        yield _concat(pending)


_Shard = TypeVar("_Shard")
_Result = TypeVar("_Result")


def map_shards(function: Callable[[_Shard], _Result], shards: Iterable[_Shard], threads: int = 1
               ) -> Iterator[_Result]:
    """``function(shard)`` for every shard, in input order, computed by up to ``threads`` threads at once.

    The kernels ``function`` calls are compiled ``nogil`` (and numpy's sort releases the GIL), so one Python worker
    uses ``threads`` cores. At most ``threads + 1`` shards are in flight: the next shard is taken from ``shards``
    only after the oldest result has been handed to the caller, who merges it in the calling thread while the
    ``threads`` threads go on with the others. ``threads=1``
    runs everything in the calling thread. Example: ``list(map_shards(len, [b"ab", b"c"], threads=2))`` -> ``[2, 1]``.

    In a Spark task, the worker's heap is frozen after the first result (:mod:`pipelines.spark.worker_heap`).
    """
    from pipelines.spark.worker_heap import freeze_worker_heap

    for index, result in enumerate(map_in_order(function, shards, threads, ahead=1 if threads > 1 else 0)):
        yield result
        if index == 0:
            freeze_worker_heap()


def _concat(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    datas, offset_parts, base = [], [np.zeros(1, np.int64)], 0
    for data, offsets in parts:
        datas.append(data[offsets[0]:offsets[-1]])
        offset_parts.append(offsets[1:] - offsets[0] + base)
        base += int(offsets[-1] - offsets[0])
    return np.concatenate(datas) if datas else np.zeros(0, np.uint8), np.concatenate(offset_parts)


def check_holdout_fraction(fraction: float) -> None:
    """The held-out share of documents must lie in 0..0.5: ``check_holdout_fraction(0.6)`` raises
    :class:`~tokenizer.errors.ConfigError` saying so."""
    from tokenizer.errors import ConfigError

    if not 0.0 <= fraction <= 0.5:
        raise ConfigError(f"--holdout-fraction {fraction} is outside 0..0.5: give a share between 0 and 0.5")
