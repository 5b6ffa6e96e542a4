"""C entry points that encode one text per call, the path of ``Tokenizer.encode``, with no array unboxed per call.

A compiled function's Python entry unboxes every array argument on every call, which for a short text costs more
than encoding it. The arrays a call needs stay the same from call to call (the model's record, the normalizer's
tables, one thread's work and output buffers), so their addresses and lengths are written once into a *call block*
(int64: two words per array, in the order of :data:`BLOCK_ARRAYS`, then the scalars of :data:`BLOCK_SCALARS`), and a
call passes the block's address, the text's bytes and three integers (through ctypes). The entry point views each
array in place, runs the SentencePiece normalizer kernel into the block's ``normalized`` buffer when it was built to
(an entry without it does not compile it), then the rule's entry point of :mod:`tokenizer.kernels.batch` on the one
text, writing its ids to ``out_ids``. It calls those kernels with the argument types the batch path uses (int64
values, a read-only text), so a model's first use compiles each once.

``entry(block, data, n, bos_id, eos_id)`` (C: ``int64 (int64 *, uint8 *, int64, int64, int64)``) returns the number
of ids, :data:`UNREPRESENTABLE` when the text holds unknown text the model can represent neither by an unk piece
nor by byte fallback, or :data:`DID_NOT_FIT` when the normalized text outgrew ``normalized`` (the caller then
normalizes otherwise and encodes the result without the normalizer).

Example: an entry built without the normalizer, a block whose arrays are those of a byte-level model with the
piece ``ab`` (id 256):
``entry(block, b"abab", 4, -1, -1)`` returns 2 and ``out_ids[:2]`` holds ``[256, 256]``.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic

from tokenizer.kernels import kernel
from tokenizer.kernels.batch import CUT_TYPES, PIECE_BPE, VITERBI, piece_bpe_entry, ranked_bpe_entry, viterbi_entry
from tokenizer.kernels.normalize import normalize_batch_into

BLOCK_ARRAYS = ("units", "scores", "ints", "small", "longs", "wide", "narrow", "out_ids", "out_offsets", "offsets",
                "in_offsets", "normalized", "trie", "replacements", "plain_chars", "ascii_pairs", "uds_edge_start",
                "uds_edge_label", "uds_edge_target", "uds_terminal", "uds_first_bytes")
BLOCK_SCALARS = ("normalizer_flags",)
BLOCK_WORDS = 2 * len(BLOCK_ARRAYS) + len(BLOCK_SCALARS)
(UNITS, SCORES, INTS, SMALL, LONGS, WIDE, NARROW, OUT_IDS, OUT_OFFSETS, OFFSETS, IN_OFFSETS, NORMALIZED, TRIE,
 REPLACEMENTS, PLAIN_CHARS, ASCII_PAIRS, UDS_EDGE_START, UDS_EDGE_LABEL, UDS_EDGE_TARGET, UDS_TERMINAL,
 UDS_FIRST_BYTES) = range(len(BLOCK_ARRAYS))
NORMALIZER_FLAGS = 2 * len(BLOCK_ARRAYS)
UNREPRESENTABLE, DID_NOT_FIT = -1, -2
SIGNATURE = types.int64(types.CPointer(types.int64), types.CPointer(types.uint8), types.int64, types.int64,
                        types.int64)


@intrinsic
def typed_pointer(typingctx, address, dtype):
    """``address`` (int64) as a pointer to ``dtype`` (a numpy scalar type): the start of an array in the block."""
    pointer_type = types.CPointer(dtype.instance_type)

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], context.get_value_type(pointer_type))

    return pointer_type(address, dtype), codegen


@intrinsic
def read_only(typingctx, array):
    """``array`` typed read-only (the same array; Numba compiles a kernel once per such flag): the entries and the
    normalizer take their text read-only on every path (batches from Arrow buffers are)."""

    def codegen(context, builder, signature, args):
        return impl_ret_borrowed(context, builder, signature.return_type, args[0])

    return array.copy(readonly=True)(array), codegen


@kernel
def _block_array(block, k, dtype):
    """Array ``k`` of the block, viewed in place (no copy, no reference counting)."""
    return numba.carray(typed_pointer(block[2 * k], dtype), (block[2 * k + 1],))


_ENTRIES: dict = {}


def one_text_entry(rule: int, units_dtype, score_dtype, wide_dtype, normalize: bool = False, cuts: int = 0):
    """The C entry point (a Numba ``cfunc``: call its ``address``) for models of ``rule`` whose record groups have
    these dtypes and that cut documents as ``cuts`` says (:func:`tokenizer.kernels.batch.cuts_of`), which runs the
    SentencePiece normalizer first when ``normalize``; built on first use, one per combination, and cached on disk
    like every kernel. With the JIT disabled it is plain Python and has no ``address`` (callers take another
    path)."""
    key = (rule, np.dtype(units_dtype).name, np.dtype(score_dtype).name, np.dtype(wide_dtype).name, bool(normalize),
           int(cuts))
    if key not in _ENTRIES:
        _ENTRIES[key] = _build_entry(int(rule), np.dtype(units_dtype).type, np.dtype(score_dtype).type,
                                     np.dtype(wide_dtype).type, bool(normalize), int(cuts), CUT_TYPES[int(cuts)])
    return _ENTRIES[key]


def _build_entry(rule, units_type, score_type, wide_type, normalize, cuts, cut_type):
    # The closure holds ints, a bool and numpy scalar types only: Numba keys a closure's disk cache by its pickled
    # cell contents, which for a compiled function differ from process to process (a cache miss every time).
    # ``rule`` and ``normalize`` are constants, so only their branches are compiled (a model without the
    # SentencePiece normalizer does not compile it); ``cut_type(cuts)`` is the batch path's ``cuts`` argument.
    @kernel(c_signature=SIGNATURE)
    def encode_one_text(block, data, n, bos_id, eos_id):
        units = _block_array(block, UNITS, units_type)
        scores = _block_array(block, SCORES, score_type)
        ints = _block_array(block, INTS, np.int32)
        small = _block_array(block, SMALL, np.uint8)
        longs = _block_array(block, LONGS, np.int64)
        wide = _block_array(block, WIDE, wide_type)
        narrow = _block_array(block, NARROW, np.int32)
        out_ids = _block_array(block, OUT_IDS, np.int32)
        out_offsets = _block_array(block, OUT_OFFSETS, np.int64)
        offsets = _block_array(block, OFFSETS, np.int64)
        text = read_only(numba.carray(data, (n,)))
        all_valid = numba.carray(data, (0,))
        # int64 values, not constants: a constant argument is typed Literal[int], which compiles the callee once
        # more (the batch path passes int64), as a writable text would (it passes its text read-only)
        zero = n - n
        one = zero + 1
        none = zero - 1
        cut = cut_type(cuts)  # the batch path's marker (tokenizer.kernels.batch.cut_marker)
        no_claims = offsets[:0]  # (one text, one thread)
        offsets[0] = 0
        if normalize:
            in_offsets = _block_array(block, IN_OFFSETS, np.int64)
            in_offsets[0] = 0
            in_offsets[1] = n
            normalized = _block_array(block, NORMALIZED, np.uint8)
            fitted = normalize_batch_into(
                text, in_offsets, zero, normalized, offsets, _block_array(block, TRIE, np.uint32),
                _block_array(block, REPLACEMENTS, np.uint8), _block_array(block, PLAIN_CHARS, np.uint8),
                _block_array(block, ASCII_PAIRS, np.uint8), _block_array(block, UDS_EDGE_START, np.int32),
                _block_array(block, UDS_EDGE_LABEL, np.uint8), _block_array(block, UDS_EDGE_TARGET, np.int32),
                _block_array(block, UDS_TERMINAL, np.uint8), _block_array(block, UDS_FIRST_BYTES, np.uint8),
                block[NORMALIZER_FLAGS])
            if fitted < 1:
                return DID_NOT_FIT
            text = read_only(normalized)
        else:
            offsets[1] = n
        # the work arrays hold the whole text, so no entry stops on a segment (resume_at -1: from the start)
        if rule == VITERBI:
            total, failed, _, _ = viterbi_entry(units, scores, ints, small, longs, text, offsets, all_valid, zero, one,
                                                no_claims, none, none, bos_id, eos_id, wide, narrow, out_ids,
                                                out_offsets, cut)
        elif rule == PIECE_BPE:
            total, failed, _, _ = piece_bpe_entry(units, scores, ints, small, longs, text, offsets, all_valid, zero,
                                                  one, no_claims, none, none, bos_id, eos_id, wide, narrow, out_ids,
                                                  out_offsets, cut)
        else:
            total, failed, _, _ = ranked_bpe_entry(units, scores, ints, small, longs, text, offsets, all_valid, zero,
                                                   one, no_claims, none, none, bos_id, eos_id, wide, narrow, out_ids,
                                                   out_offsets, cut)
        return total if failed < 0 else UNREPRESENTABLE

    return encode_one_text
