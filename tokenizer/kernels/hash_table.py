"""Open-addressing hash tables of int64 keys, one convention for every kernel.

A table is an int64 array of ``2**bits`` slots whose keys are non-negative; :data:`EMPTY` (-1) marks a free slot. A
key's home slot is the top ``bits`` bits of its Fibonacci hash (:func:`hash_slot`), and a collision probes the next
slot, wrapping around (:func:`find_slot`). Values sit in parallel arrays at the key's slot; BytePiece's n-gram model
interleaves key and value in one array instead (one cache line per probe, ``tokenizer.kernels.ngram_segment``), with
the same slots and the same empty mark. Tables are sized by :func:`table_bits` to stay at most half full.

A table far larger than the caches costs a cache miss per probe. :func:`prefetch` asks for a slot's cache line
ahead of the probe, so that a kernel can have the misses of several later probes in flight while it works on the
current one (``tokenizer.kernels.ngram_segment``).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from tokenizer.kernels import _DISABLE_JIT, kernel

EMPTY = -1
GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # 2**64 / the golden ratio: Fibonacci hashing's multiplier


@kernel
def table_bits(min_slots):
    """The smallest ``bits >= 4`` with ``2**bits >= min_slots``: ``table_bits(17) == 5``."""
    bits = 4
    while (np.int64(1) << bits) < min_slots:
        bits += 1
    return bits


@kernel
def hash_slot(key, bits):
    """Home slot of ``key`` (int64 or uint64) in a table of ``2**bits`` slots: the top bits of ``key * GOLDEN``."""
    return np.int64((np.uint64(key) * GOLDEN) >> np.uint64(64 - bits))


if _DISABLE_JIT:
    def prefetch(array, index):
        """A hint without effect on any result: nothing to do in plain Python."""
else:
    @intrinsic
    def prefetch(typingctx, array, index):
        """Ask the CPU to bring the cache line of ``array[index]`` (a 1-d array; ``index`` in range) into the caches,
        without waiting for it (LLVM's ``llvm.prefetch``, read, high locality): a hint that changes no result, so
        it has no twin. Example: ``prefetch(table, 2 * hash_slot(key, bits))`` a few positions before the probe."""

        def codegen(context, builder, signature, args):
            view = context.make_array(signature.args[0])(context, builder, args[0])
            address = cgutils.get_item_pointer(context, builder, signature.args[0], view, [args[1]],
                                               wraparound=False)
            byte_pointer = ir.IntType(8).as_pointer()
            int32 = ir.IntType(32)
            function = builder.module.declare_intrinsic(  # named llvm.prefetch.p0 (or .p0i8: typed pointers)
                "llvm.prefetch", [byte_pointer], ir.FunctionType(ir.VoidType(), [byte_pointer, int32, int32, int32]))
            builder.call(function, [builder.bitcast(address, byte_pointer), int32(0), int32(3), int32(1)])
            return context.get_dummy_value()

        return types.void(array, types.int64), codegen


@kernel
def find_slot(keys, bits, key):
    """The slot of ``keys`` (int64, ``2**bits``) holding ``key``, or the empty slot where it belongs."""
    mask = (np.int64(1) << bits) - 1
    slot = hash_slot(key, bits)
    while True:
        found = keys[slot]
        if found == key or found == EMPTY:
            return slot
        slot = (slot + 1) & mask
