"""The per-call encoder of ``Tokenizer.encode``: one text (bytes) in, a list of ids out, through the C entry point
of :mod:`tokenizer.kernels.one_text` with a call block per thread, so a call unboxes no array. Each thread calls
it through a built-in function (:mod:`tokenizer.kernels.python_call`) bound to its block, or through ctypes where
this interpreter's object layout does not allow that (:func:`builtin_calls_work`).

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
from tokenizer.kernels.one_text import (BLOCK_WORDS, DID_NOT_FIT, IN_OFFSETS, NORMALIZED,
                                        NORMALIZER_FLAGS, OFFSETS, OUT_IDS, OUT_OFFSETS, NARROW, TRIE,
                                        UNREPRESENTABLE, UNITS, WIDE, one_text_entry)
from tokenizer.shared_ids import c_api_addresses, split_ids

METH_FASTCALL = 0x0080
# A thread keeps its call block and buffers between calls for texts up to this many bytes (with a normalizer, the
# buffers hold four times that); longer texts take the batch entry, with work arrays sized by their segments.
MAX_KEPT_BUFFER = 1 << 16
_C_CALL = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int64, ctypes.c_int64,
                            ctypes.c_int64)  # CFUNCTYPE: the GIL is released during the call, so threads run at once


def _put(block: np.ndarray, k: int, array: np.ndarray) -> None:
    """Array ``k`` of the call block: its address and length (it must stay alive while the block is used)."""
    assert array.flags.c_contiguous and array.ndim == 1
    block[2 * k], block[2 * k + 1] = array.ctypes.data, len(array)


class _MethodDef(ctypes.Structure):
    """CPython's ``PyMethodDef``: what a built-in function object calls."""
    _fields_ = [("name", ctypes.c_char_p), ("function", ctypes.c_void_p), ("flags", ctypes.c_int),
                ("doc", ctypes.c_char_p)]


_NEW_FUNCTION = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.py_object, ctypes.py_object)(
    ("PyCFunction_NewEx", ctypes.pythonapi))
_METHOD_DEFS: list = []  # the one PyMethodDef of encode_call, alive as long as the process (functions point to it)


def builtin_calls_work() -> bool:
    """True when :func:`tokenizer.kernels.python_call.encode_call` can serve as a built-in function here: CPython,
    the JIT on, and numpy's ``data`` field where the kernel reads it."""
    import sys

    from tokenizer.kernels.python_call import ARRAY_DATA_OFFSET, encode_call

    if sys.implementation.name != "cpython" or not hasattr(encode_call, "address"):
        return False
    probe = np.zeros(1, np.int64)
    return ctypes.c_int64.from_address(id(probe) + ARRAY_DATA_OFFSET).value == probe.ctypes.data


def _builtin(header: np.ndarray):
    """A built-in function ``f(data: bytes, bos_id: int, eos_id: int)`` running
    :func:`tokenizer.kernels.python_call.encode_call` on ``header`` (which it keeps alive)."""
    from tokenizer.kernels.python_call import encode_call

    if not _METHOD_DEFS:
        _METHOD_DEFS.append(_MethodDef(b"encode_one", encode_call.address, METH_FASTCALL, None))
    return _NEW_FUNCTION(ctypes.addressof(_METHOD_DEFS[0]), header, None)


def _call_header(block: np.ndarray, entry_address: int, out_ids: np.ndarray, shared) -> np.ndarray:
    """The header of :mod:`tokenizer.kernels.python_call` for one call block and its id buffer."""
    from tokenizer.kernels import python_call as pc

    header = np.zeros(pc.HEADER_WORDS, np.int64)
    header[:len(pc.API_NAMES)] = c_api_addresses(pc.API_NAMES)
    header[pc.NONE], header[pc.BLOCK], header[pc.ENTRY] = id(None), block.ctypes.data, entry_address
    header[pc.OUT_IDS], header[pc.OBJECTS] = out_ids.ctypes.data, shared.addresses.ctypes.data
    header[pc.OBJECT_COUNT] = len(shared.addresses)
    return header


def one_text_encoder(compiled, normalizer=None):
    """``encode(data: bytes, bos_id, eos_id) -> list[int]`` for ``compiled`` (a :class:`CompiledModel`); with
    ``normalizer`` (a :class:`~tokenizer.normalizers.SentencePieceNormalizer`) the raw bytes are normalized by its
    kernel into the thread's buffer first (a text its growth bound cannot hold takes ``normalizer.normalize``).
    Each thread has its own block, buffers and built-in function, kept for texts up to :data:`MAX_KEPT_BUFFER`
    bytes; a longer text takes the batch entry (:func:`_one_text_by_batch`). Raises what
    :meth:`CompiledModel.encode_range` raises."""
    from tokenizer.kernels.python_call import HEADER_WORDS, STATUS

    units, scores, ints, small, longs = compiled.record
    wide_dtype = compiled.score_dtype if compiled.rule == VITERBI else np.int64
    entry = one_text_entry(compiled.rule, units.dtype, scores.dtype, wide_dtype, normalizer is not None,
                           int(compiled.cuts))
    if not hasattr(entry, "address"):  # the JIT is disabled: the batch path on one text
        return _one_text_by_batch(compiled, normalizer)
    shared = compiled.shared_ids() if builtin_calls_work() else None
    fixed = np.zeros(BLOCK_WORDS, np.int64)
    for k, array in enumerate(compiled.record):
        _put(fixed, UNITS + k, array)
    tables: tuple = ()
    if normalizer is not None:
        _, tables = normalizer.kernel_parts()
        for k, table in enumerate(tables[:-1]):
            _put(fixed, TRIE + k, table)
        fixed[NORMALIZER_FLAGS] = int(tables[-1])
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
        if shared is not None:
            header = _call_header(block, entry.address, arrays[OUT_IDS], shared)
            function = _builtin(header)
        else:
            header = np.zeros(HEADER_WORDS, np.int64)
            function = _ctypes_function(entry.address, block, arrays[OUT_IDS], header, compiled.vocab_size)
        local.state = (capacity, function, header, block, arrays, tables, compiled.record, shared)
        return local.state

    plain: list = []  # without the normalizer, for a text it grows past the buffer: built on first need
    long_text = _one_text_by_batch(compiled, normalizer)

    def encode(data: bytes, bos_id: int, eos_id: int) -> list[int]:
        if len(data) > MAX_KEPT_BUFFER:
            return long_text(data, bos_id, eos_id)
        state = getattr(local, "state", None)
        if state is None or state[0] < len(data):
            state = grow(len(data))
        ids = state[1](data, bos_id, eos_id)
        if ids is not None:
            return ids
        status = state[2][STATUS]
        if status == DID_NOT_FIT:
            if not plain:
                plain.append(one_text_encoder(compiled))
            return plain[0](normalizer.normalize(data), bos_id, eos_id)
        if status == UNREPRESENTABLE:
            raise unrepresentable_error(0)
        raise ValueError(f"bos_id {bos_id} or eos_id {eos_id} is not an id of this model "
                         f"(0 .. {compiled.vocab_size - 1}): pass a piece id, or -1 for none")

    return encode


def _ctypes_function(address: int, block: np.ndarray, out_ids: np.ndarray, header: np.ndarray, vocab_size: int):
    """The built-in's contract through ctypes: ``f(data, bos_id, eos_id)`` -> the list of ids, or ``None`` with
    the entry's status in ``header[STATUS]``."""
    from tokenizer.kernels.python_call import NO_OBJECT, STATUS

    call = _C_CALL(address)
    block_address = block.ctypes.data

    def function(data: bytes, bos_id: int, eos_id: int) -> list[int] | None:
        if bos_id >= vocab_size or eos_id >= vocab_size:
            header[STATUS] = NO_OBJECT
            return None
        total = call(block_address, data, len(data), bos_id, eos_id)
        if total < 0:
            header[STATUS] = total
            return None
        return out_ids[:total].tolist()

    return function


def _one_text_by_batch(compiled, normalizer):
    """The same encoder through :meth:`CompiledModel.encode_range`: with the JIT disabled, and for texts over
    :data:`MAX_KEPT_BUFFER` bytes, whose work arrays it sizes by their longest segment (a call block's hold the
    whole text)."""
    def encode(data: bytes, bos_id: int, eos_id: int) -> list[int]:
        if normalizer is not None:
            data = normalizer.normalize(data)
        out_ids = np.empty(len(data) + 2, np.int32)
        total = compiled.encode_range(np.frombuffer(data, np.uint8), np.array([0, len(data)], np.int64),
                                      np.zeros(0, np.uint8), 0, 1, bos_id, eos_id, out_ids, np.empty(2, np.int64))
        return split_ids(out_ids[:total], np.array([0, total]), compiled.shared_ids())[0]

    return encode
