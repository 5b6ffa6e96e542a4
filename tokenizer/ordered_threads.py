"""A map over an iterator on a few threads, results in input order, at most ``threads`` items in flight: the
driver's and the Spark tasks' way of running nogil kernels (and numpy's sorts, which release the GIL too) on
several cores from one Python process.

    >>> list(map_in_order(len, iter([b"ab", b"c"]), threads=2))
    [2, 1]
"""

from __future__ import annotations

from collections import deque
from typing import Callable, Iterable, Iterator, TypeVar

_Item = TypeVar("_Item")
_Result = TypeVar("_Result")


def map_in_order(function: Callable[[_Item], _Result], items: Iterable[_Item], threads: int = 1,
                 ahead: int = 0) -> Iterator[_Result]:
    """``function(item)`` for every item, in input order, computed by up to ``threads`` threads at once. At most
    ``threads + ahead`` items are in flight: the next item is taken from ``items`` only after the oldest result has
    been handed to the caller once that many are (``ahead=1``: every thread has an item while the caller works on
    a result), so at most that many items and results are held at once; ``threads=1`` runs everything in the
    calling thread."""
    if threads <= 1:
        for item in items:
            yield function(item)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="shardpiece-map") as pool:
        pending: deque = deque()
        for item in items:
            while len(pending) >= threads + ahead:
                yield pending.popleft().result()
            pending.append(pool.submit(function, item))
            del item
        while pending:
            yield pending.popleft().result()
