"""The binary heaps of the BPE merge loops, in place in caller-owned arrays (every function returns the new size):

* a min-heap of int64 keys (:func:`min_heap_push`, :func:`min_heap_pop`): encoding's pending merges as ``rank << 32
  | position``, the lowest rank and then the leftmost first;
* a heap of ``(count, tie, key)`` entries in three parallel int64 arrays (:func:`triple_heap_push`,
  :func:`triple_heap_pop`): training's merge candidates, the highest count first, then the smaller tie value (see
  :mod:`tokenizer.kernels.bpe_merge_ties`), then the smaller pair key. Its order does not fit one int64.

Example: after pushing 5, 3 and 4 onto an empty min-heap, reading ``heap[0]`` before each of three pops gives 3, 4, 5.
"""

from __future__ import annotations

from tokenizer.kernels import kernel


@kernel
def min_heap_push(heap, size, key):
    """Push ``key`` onto the binary min-heap ``heap[:size]``; returns the new size."""
    i = size
    heap[i] = key
    while i > 0:
        parent = (i - 1) >> 1
        if heap[parent] <= key:
            break
        heap[i] = heap[parent]
        i = parent
    heap[i] = key
    return size + 1


@kernel
def min_heap_pop(heap, size):
    """Remove the smallest key (``heap[0]``, read it before) from ``heap[:size]``; returns the new size."""
    size -= 1
    last = heap[size]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        if child + 1 < size and heap[child + 1] < heap[child]:
            child += 1
        if last <= heap[child]:
            break
        heap[i] = heap[child]
        i = child
    heap[i] = last
    return size


@kernel
def _ranks_before(count_x, tie_x, key_x, count_y, tie_y, key_y):
    """Whether entry x comes out before entry y: the higher count, then the smaller tie, then the smaller key."""
    return count_x > count_y or (count_x == count_y and (tie_x < tie_y or (tie_x == tie_y and key_x < key_y)))


@kernel
def triple_heap_push(heap_count, heap_tie, heap_key, size, count, tie, key):
    """Push the entry ``(count, tie, key)`` onto the heap ``heap_*[:size]``; returns the new size."""
    i = size
    heap_count[i] = count
    heap_tie[i] = tie
    heap_key[i] = key
    while i > 0:
        parent = (i - 1) >> 1
        if _ranks_before(heap_count[i], heap_tie[i], heap_key[i], heap_count[parent], heap_tie[parent],
                         heap_key[parent]):
            heap_count[i], heap_count[parent] = heap_count[parent], heap_count[i]
            heap_tie[i], heap_tie[parent] = heap_tie[parent], heap_tie[i]
            heap_key[i], heap_key[parent] = heap_key[parent], heap_key[i]
            i = parent
        else:
            break
    return size + 1


@kernel
def triple_heap_pop(heap_count, heap_tie, heap_key, size):
    """Remove the best entry (left at index ``size - 1``); returns the new size."""
    size -= 1
    heap_count[0], heap_count[size] = heap_count[size], heap_count[0]
    heap_tie[0], heap_tie[size] = heap_tie[size], heap_tie[0]
    heap_key[0], heap_key[size] = heap_key[size], heap_key[0]
    i = 0
    while True:
        best = i
        left = 2 * i + 1
        right = left + 1
        if left < size and _ranks_before(heap_count[left], heap_tie[left], heap_key[left], heap_count[best],
                                   heap_tie[best], heap_key[best]):
            best = left
        if right < size and _ranks_before(heap_count[right], heap_tie[right], heap_key[right], heap_count[best],
                                    heap_tie[best], heap_key[best]):
            best = right
        if best == i:
            break
        heap_count[i], heap_count[best] = heap_count[best], heap_count[i]
        heap_tie[i], heap_tie[best] = heap_tie[best], heap_tie[i]
        heap_key[i], heap_key[best] = heap_key[best], heap_key[i]
        i = best
    return size
