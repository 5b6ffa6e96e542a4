"""The per-call encoder of ``Tokenizer.encode``: one text (bytes) in, a list of ids out, through the C entry point
of :mod:`tokenizer.kernels.one_text` with a call block per thread, so a call unboxes no array.

    >>> from tokenizer.compiled import CompiledModel
    >>> from tokenizer.model import Model
    >>> one_text_encoder(CompiledModel(Model.byte_level([b"ab"], [-1.0])))(b"abab", -1, -1)
    [256, 256]
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

from tokenizer.errors import unrepresentable_error
from tokenizer.kernels.batch import VITERBI
from tokenizer.kernels.one_text import (BLOCK_WORDS, DID_NOT_FIT, IN_OFFSETS, NORMALIZE, NORMALIZED,
                                        NORMALIZER_FLAGS, OFFSETS, OUT_IDS, OUT_OFFSETS, NARROW, TRIE,
                                        UNREPRESENTABLE, UNITS, WIDE, one_text_entry)

MAX_KEPT_BUFFER = 1 << 20  # a thread keeps its buffers between calls for texts up to this many bytes
_C_CALL = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int64, ctypes.c_int64,
                            ctypes.c_int64)  # CFUNCTYPE: the GIL is released during the call, so threads run at once


def _put(block: np.ndarray, k: int, array: np.ndarray) -> None:
    """Array ``k`` of the call block: its address and length (it must stay alive while the block is used)."""
    assert array.flags.c_contiguous and array.ndim == 1
    block[2 * k], block[2 * k + 1] = array.ctypes.data, len(array)


def one_text_encoder(compiled, normalizer=None):
    """``encode(data: bytes, bos_id, eos_id) -> list[int]`` for ``compiled`` (a :class:`CompiledModel`); with
    ``normalizer`` (a :class:`~tokenizer.normalizers.SentencePieceNormalizer`) the raw bytes are normalized by its
    kernel into the thread's buffer first (a text its growth bound cannot hold takes ``normalizer.normalize``).
    Each thread has its own block and buffers, kept for texts up to :data:`MAX_KEPT_BUFFER` bytes. Raises what
    :meth:`CompiledModel.encode_range` raises."""
    units, scores, ints, small, longs = compiled.record
    wide_dtype = compiled.score_dtype if compiled.rule == VITERBI else np.int64
    entry = one_text_entry(compiled.rule, units.dtype, scores.dtype, wide_dtype)
    if not hasattr(entry, "address"):  # the JIT is disabled: the batch path on one text
        return _one_text_by_batch(compiled, normalizer)
    call = _C_CALL(entry.address)
    fixed = np.zeros(BLOCK_WORDS, np.int64)
    for k, array in enumerate(compiled.record):
        _put(fixed, UNITS + k, array)
    tables: tuple = ()
    if normalizer is not None:
        _, tables = normalizer.kernel_parts()
        for k, table in enumerate(tables[:-1]):
            _put(fixed, TRIE + k, table)
        fixed[NORMALIZE], fixed[NORMALIZER_FLAGS] = 1, int(tables[-1])
    local = threading.local()

    def grow(n: int) -> tuple:
        capacity = max(256, 1 << (n - 1).bit_length())
        longest = capacity if normalizer is None else 4 * capacity + 144
        arrays = {WIDE: None, NARROW: None, OUT_IDS: np.empty(longest + 2, np.int32),
                  OUT_OFFSETS: np.zeros(2, np.int64), OFFSETS: np.zeros(2, np.int64),
                  IN_OFFSETS: np.zeros(2, np.int64),
                  NORMALIZED: np.empty(longest if normalizer is not None else 0, np.uint8)}
        arrays[WIDE], arrays[NARROW] = compiled.work_arrays(longest)
        block = fixed.copy()
        for k, array in arrays.items():
            _put(block, k, array)
        state = (capacity, block.ctypes.data, arrays[OUT_IDS], block, arrays, tables, compiled.record)
        if capacity <= MAX_KEPT_BUFFER:
            local.state = state
        return state

    plain = None if normalizer is None else one_text_encoder(compiled)

    def encode(data: bytes, bos_id: int, eos_id: int) -> list[int]:
        n = len(data)
        state = getattr(local, "state", None)
        if state is None or state[0] < n:
            state = grow(n)
        total = call(state[1], data, n, bos_id, eos_id)
        if total < 0:
            if total == DID_NOT_FIT:
                return plain(normalizer.normalize(data), bos_id, eos_id)
            assert total == UNREPRESENTABLE
            raise unrepresentable_error(0)
        return state[2][:total].tolist()

    return encode


def _one_text_by_batch(compiled, normalizer):
    """The same encoder through :meth:`CompiledModel.encode_range` with fresh arrays (the JIT disabled)."""
    def encode(data: bytes, bos_id: int, eos_id: int) -> list[int]:
        if normalizer is not None:
            data = normalizer.normalize(data)
        out_ids = np.empty(len(data) + 2, np.int32)
        total = compiled.encode_range(np.frombuffer(data, np.uint8), np.array([0, len(data)], np.int64),
                                      np.zeros(0, np.uint8), 0, 1, bos_id, eos_id, out_ids, np.empty(2, np.int64))
        return out_ids[:total].tolist()

    return encode
