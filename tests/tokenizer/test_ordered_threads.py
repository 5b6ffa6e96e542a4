"""map_in_order: results in input order; with ``ahead=1`` every thread has an item while the caller holds a result
(the order forced with events, not timed)."""

from __future__ import annotations

import threading

from tokenizer.ordered_threads import map_in_order

DEADLOCK_GUARD = 600  # seconds; reached only if an item never starts (a bug), never by a slow machine


def test_results_in_input_order_with_every_thread_busy_while_the_caller_works():
    started = [threading.Event() for _ in range(6)]
    release = threading.Event()

    def work(i: int) -> int:
        started[i].set()
        if i > 0:
            assert release.wait(DEADLOCK_GUARD)
        return i * i

    results = map_in_order(work, iter(range(6)), threads=2, ahead=1)
    assert next(results) == 0
    # the caller holds result 0: items 1 and 2 both run now, one per thread
    assert started[1].wait(DEADLOCK_GUARD) and started[2].wait(DEADLOCK_GUARD)
    assert not started[3].is_set()  # at most threads + ahead items in flight
    release.set()
    assert list(results) == [1, 4, 9, 16, 25]


def test_without_ahead_at_most_threads_items_are_in_flight():
    taken = []

    def items():
        for i in range(5):
            taken.append(i)
            yield i

    results = map_in_order(lambda i: i + 1, items(), threads=2)
    assert next(results) == 1 and len(taken) <= 3
    assert list(results) == [2, 3, 4, 5]
