"""A document range that several threads share: its owner encodes it a claim of a few kilobytes at a time, and a
thread with nothing left to do takes the back half of what the owner has not claimed yet. Ranges cut in advance
by bytes take unequal times (the cost of a byte varies along a corpus), so without this one thread often ends a
parallel batch alone.

The range's state is one int64 word, ``claims[0]``: the end of the owner's claims (high 32 bits) and the range's
limit (low 32 bits), both document indexes below 2**31. Only the owner raises the claimed end
(:func:`next_claim`), only another thread lowers the limit (:func:`steal_documents`), never to the claimed end
or below, and both change the word by compare-and-swap: each document is encoded by exactly one thread, and once
the claimed end reaches the limit neither moves again (the owner's documents are those below the final limit).
An empty ``claims`` array: no sharing (the caller's ``doc_end`` is the limit).

Example: documents 0..9 of 1 KB each, word ``(0, 10)``; the owner claims ``0 .. 3`` (:data:`CLAIM_BYTES` 4 KB):
``(4, 10)``; another thread takes ``7 .. 9`` (the back half of ``4 .. 9`` by bytes): ``(4, 7)``; the owner claims
``4 .. 6``: ``(7, 7)``, and its range is done at 7. Twin: :mod:`tokenizer.twins.claims`.
"""

from __future__ import annotations

import threading

import numpy as np
from numba import types
from numba.extending import intrinsic

from tokenizer.kernels import _DISABLE_JIT, kernel

#: bytes of documents the owner claims at a time (one compare-and-swap each)
CLAIM_BYTES = 4096
_LOW = (1 << 32) - 1


def claims_word(claimed_end: int, limit: int) -> int:
    """The word of a range whose owner has claimed up to ``claimed_end`` and whose limit is ``limit``:
    ``claims_word(4, 10)`` -> ``(4 << 32) | 10``."""
    return (claimed_end << 32) | limit


def claims_state(claims: np.ndarray) -> tuple[int, int]:
    """``(claimed_end, limit)`` of ``claims`` (int64[1], read without a lock); once the owner's kernel has
    returned, the limit is where its range ends. Example: a word ``claims_word(4, 10)`` -> ``(4, 10)``."""
    word = int(claims[0])
    return word >> 32, word & _LOW


if _DISABLE_JIT:
    _SWAP_LOCK = threading.Lock()

    def _load_word(claims):
        return int(claims[0])

    def _swap_word(claims, expected, new):
        with _SWAP_LOCK:
            if int(claims[0]) != expected:
                return False
            claims[0] = new
            return True
else:
    @intrinsic
    def _load_word(typingctx, claims):
        """``claims[0]``, read atomically (whole, and anew at each call: never kept in a register)."""

        def codegen(context, builder, signature, args):
            word = context.make_array(signature.args[0])(context, builder, args[0]).data
            return builder.load_atomic(word, "monotonic", 8)

        return types.int64(claims), codegen

    @intrinsic
    def _swap_word(typingctx, claims, expected, new):
        """Compare-and-swap of ``claims[0]``: set to ``new`` if it holds ``expected``; whether it did."""

        def codegen(context, builder, signature, args):
            word = context.make_array(signature.args[0])(context, builder, args[0]).data
            outcome = builder.cmpxchg(word, args[1], args[2], "monotonic", "monotonic")
            return builder.extract_value(outcome, 1)

        return types.boolean(claims, types.int64, types.int64), codegen


@kernel(borrows=True)
def next_claim(claims, offsets, first):
    """The end of the owner's claim that holds ``first`` (int), or of a new one from ``first``: documents
    (``offsets`` int32 or int64) up to :data:`CLAIM_BYTES` past ``offsets[first]`` (one at least), short of the
    limit; ``first`` when the range is done. Example:
    word ``(4, 10)``, 1 KB documents, ``first`` 4 -> 7, word ``(7, 10)``."""
    while True:
        word = _load_word(claims)
        claimed, limit = word >> 32, word & _LOW
        if first < claimed:
            return claimed
        if first >= limit:
            return first
        end = first + 1
        enough = offsets[first] + CLAIM_BYTES
        while end < limit and offsets[end] < enough:
            end += 1
        if _swap_word(claims, word, (end << 32) | limit):
            return end


@kernel
def steal_documents(claims, offsets, least_bytes):
    """Take the back half, by bytes, of what the owner of ``claims`` has not claimed, when that is at least twice
    ``least_bytes`` and more than one document: ``(begin, end)``, the documents now the caller's (the owner's
    limit lowered to ``begin``); ``(0, 0)`` when there is too little. Example: word ``(4, 10)``, 1 KB documents,
    ``least_bytes`` 1024 -> ``(7, 10)``, word ``(4, 7)``."""
    while True:
        word = _load_word(claims)
        claimed, limit = word >> 32, word & _LOW
        if limit - claimed < 2 or offsets[limit] - offsets[claimed] < 2 * least_bytes:
            return 0, 0
        middle = offsets[claimed] + (offsets[limit] - offsets[claimed]) // 2
        low, high = claimed + 1, limit - 1  # the first document from the middle on, in claimed + 1 .. limit - 1
        while low < high:
            probe = (low + high) // 2
            if offsets[probe] < middle:
                low = probe + 1
            else:
                high = probe
        begin = low
        if _swap_word(claims, word, (claimed << 32) | begin):
            return begin, limit
