"""The work of a parallel batch as its threads' tasks: each thread takes the next document range cut in advance
(:func:`tokenizer.batching._ranges`), normalizes and encodes it, and when none is left takes the back half of
what another thread has not claimed yet of its own (:mod:`tokenizer.kernels.claims`), so that the threads end
together even when the ranges, of about equal bytes, take unequal times. ``tok`` below is a Tokenizer.
"""

from __future__ import annotations

import threading

import numpy as np

from tokenizer.compiled import NO_CLAIMS
from tokenizer.kernels.claims import claims_state, claims_word, steal_documents

#: the least a thread takes of another's range (and leaves it): below, the Python around a task costs too much
MIN_BYTES_TO_SHARE = 1 << 13
#: bytes of each output buffer (ids, offsets) a thread keeps from batch to batch (:class:`OutputBuffers`)
KEEP_OUTPUT_BYTES = 16 << 20


class Batch:
    """A batch (or a one-thread call) whose tasks take output buffers (:class:`OutputBuffers`); ``done`` once its
    caller has copied or consumed every task's ids, after which the threads may reuse the buffers."""

    __slots__ = ("done",)

    def __init__(self) -> None:
        self.done = False


class OutputBuffers(threading.local):
    """Per thread, the buffers the kernels write ids and offsets into, kept from batch to batch: memory fresh
    from the system costs a page fault per 4 KB on first touch, as much as the encoding of a few hundred bytes.
    Within a batch a thread's tasks take consecutive slices (each task's ids live until the batch is done); the
    next batch starts over, in the same arrays if the last batch is done, else in new ones (an encoding thread
    may start another caller's batch while the caller of its last one is still joining the ids). Up to
    :data:`KEEP_OUTPUT_BYTES` per thread and buffer are kept; a larger request gets an array of its own. Example:
    ``take(batch, 10, np.int32)`` twice in one batch -> two int32 slices of 10, back to back; in the next batch,
    the first 10 again."""

    def __init__(self) -> None:
        self.batch: Batch | None = None
        self.arrays: dict = {}  # dtype -> [kept array, used items]

    def take(self, batch: Batch, count: int, dtype) -> np.ndarray:
        """``count`` items of ``dtype`` (contents undefined) for a task of ``batch``."""
        if batch is not self.batch:
            if self.batch is not None and not self.batch.done:
                self.arrays = {}  # (the unfinished batch's slices keep its arrays alive)
            self.batch = batch
            for slot in self.arrays.values():
                slot[1] = 0
        slot = self.arrays.get(dtype)
        if slot is None or slot[1] + count > slot[0].shape[0]:
            itemsize = np.dtype(dtype).itemsize
            size = max(count, 2 * slot[0].shape[0] if slot is not None else 0)
            if size * itemsize > KEEP_OUTPUT_BYTES:
                if count * itemsize > KEEP_OUTPUT_BYTES:
                    return np.empty(count, dtype)
                size = KEEP_OUTPUT_BYTES // itemsize
            slot = self.arrays[dtype] = [np.empty(size, dtype), 0]  # (earlier slices keep the old array alive)
        start = slot[1]
        slot[1] = start + count
        return slot[0][start:start + count]


_OUTPUT_BUFFERS = OutputBuffers()


class RangeTask:
    """Documents ``begin .. end - 1`` of ``data``/``offsets`` (texts normalized, a range of the batch whose first
    document is the batch's ``first``; ``valid`` as the entries take it), encoded by one thread, which shares
    what it has not claimed yet through ``claims`` (int64[1])."""

    __slots__ = ("first", "data", "offsets", "valid", "begin", "end", "claims")

    def __init__(self, first: int, data: np.ndarray, offsets: np.ndarray, valid: np.ndarray, begin: int,
                 end: int) -> None:
        self.first, self.data, self.offsets, self.valid, self.begin, self.end = first, data, offsets, valid, begin, end
        self.claims = np.array([claims_word(begin, end)], np.int64) if end < 2**31 else NO_CLAIMS

    def unclaimed_bytes(self) -> int:
        """Bytes of the documents its thread has not claimed yet (read without a lock: a hint)."""
        if not self.claims.shape[0]:
            return 0
        claimed, limit = claims_state(self.claims)
        return int(self.offsets[limit]) - int(self.offsets[claimed])


class RangeTasks:
    """The tasks of a parallel batch over ``source`` (texts by range: ``source.texts(begin, end)``), cut in
    advance at ``ranges``; :meth:`take` gives each thread its next task, :meth:`encode` runs one. Example: two
    ranges of 64 KB, two threads: each takes one; the first to finish takes the back half of what the other has
    not claimed (above :data:`MIN_BYTES_TO_SHARE` twice), and so on until nothing is worth taking."""

    def __init__(self, tok, source, valid: np.ndarray, ranges: list[tuple[int, int]]) -> None:
        self.tok, self.source, self.valid = tok, source, valid
        self.batch = Batch()  # (its caller sets done once it has joined the tasks' ids)
        self.ranges = iter(ranges)  # shared; next() on it is atomic under the GIL
        self.running: list[RangeTask] = []

    def take(self) -> RangeTask | None:
        """The next range cut in advance, normalized; else a part of a running task; None when none is left."""
        for begin, end in self.ranges:
            data, offsets = normalized(self.tok, *self.source.texts(begin, end))
            valid = self.valid[begin:end] if self.valid.shape[0] else self.valid
            return RangeTask(begin, data, offsets, valid, 0, end - begin)
        for victim in sorted(self.running, key=RangeTask.unclaimed_bytes, reverse=True):
            if victim.claims.shape[0]:
                begin, end = steal_documents(victim.claims, victim.offsets, MIN_BYTES_TO_SHARE)
                if end > begin:
                    return RangeTask(victim.first, victim.data, victim.offsets, victim.valid, int(begin), int(end))
        return None

    def encode(self, task: RangeTask, bos: int, eos: int) -> tuple[int, np.ndarray, np.ndarray]:
        """``(first, ids int32, offsets int64 from 0)``: the ids of the documents the task's thread encoded,
        from the batch's document ``first`` on (others may have taken the rest of the task)."""
        self.running.append(task)
        try:
            ids, offsets = encode_documents(self.tok, task.data, task.offsets, task.valid, task.begin, task.end,
                                            bos, eos, self.batch, task.claims)
        finally:
            self.running.remove(task)
        return task.first + task.begin, ids, offsets


def normalized(tok, data: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The texts at ``offsets`` (int64, into ``data``) normalized by the tokenizer's normalizer."""
    if tok.normalizer.is_identity:
        return data, offsets
    return tok.normalizer.normalize_batch(data, offsets)


def encode_documents(tok, data, offsets, valid, begin, end, bos, eos, batch: Batch, claims=NO_CLAIMS):
    """Encode the (normalized) documents ``begin .. end - 1`` at ``offsets`` (int64, into ``data``), with
    ``claims`` up to where its thread stopped; returns ``(ids int32, offsets int64)``, offsets from 0, one per
    document encoded plus one. Both are slices of this thread's :class:`OutputBuffers`, valid until ``batch`` is
    done: a caller that keeps them copies them."""
    count = end - begin
    extra = (bos >= 0) + (eos >= 0)
    capacity = int(offsets[end] - offsets[begin]) + extra * count
    out_ids = _OUTPUT_BUFFERS.take(batch, max(capacity, 1), np.int32)
    out_offsets = _OUTPUT_BUFFERS.take(batch, count + 1, np.int64)
    total = tok.compiled.encode_range(data, offsets, valid, begin, end, bos, eos, out_ids, out_offsets, claims)
    if claims.shape[0]:
        out_offsets = out_offsets[:claims_state(claims)[1] - begin + 1]
    return out_ids[:total], out_offsets
