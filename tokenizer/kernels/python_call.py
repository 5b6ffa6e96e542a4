"""A compiled body for a Python built-in function: ``Tokenizer.encode``'s call without ctypes.

A ctypes call converts each argument and builds a result object, which costs more than encoding a short line.
:func:`encode_call` is a C function with CPython's ``METH_FASTCALL`` signature (``self``, a pointer to the
arguments, their count) that :mod:`tokenizer.one_text` turns into a built-in function object bound to a *header*
(``self``: an int64 array, :data:`HEADER_WORDS`), so calling it costs what calling ``len`` costs. A call
``f(data, bos_id, eos_id)`` (``data`` bytes, the ids ints) reads the text through ``PyBytes_AsString`` and
``PyBytes_Size``, releases the GIL (``PyEval_SaveThread``), calls the one-text entry point of
:mod:`tokenizer.kernels.one_text` on the header's call block, takes the GIL back, and returns a new list of the
ids built from the shared int objects (``PyList_New``, ``Py_IncRef``, ``PyList_SetItem``), or ``None`` when the
entry returned a negative status (kept in ``header[STATUS]`` for the caller to act on).

Every address (the C API's functions, ``None``, the entry point, the arrays) comes from the header, never from the
compiled code, so the disk cache stays valid from process to process. The header's own address is read from
``self`` as numpy's ``PyArray_DATA`` does (the ``data`` field right after the object header); the caller checks
that layout once (:func:`tokenizer.one_text.builtin_calls_work`) and uses ctypes where it does not hold.

Example: with a header for a byte-level model with the piece ``ab`` (id 256), ``f(b"abab", -1, -1)`` returns
``[256, 256]`` and ``f(b"", -1, -1)`` returns ``[]``.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types

from tokenizer.kernels import kernel
from tokenizer.kernels.one_text import typed_pointer
from tokenizer.kernels.python_lists import call_c, call_void, list_set_item, word_at

#: the C API functions :func:`encode_call` calls, in the order of their header words
API_NAMES = ("PyBytes_AsString", "PyBytes_Size", "PyLong_AsLongLong", "PyErr_Occurred", "PyEval_SaveThread",
             "PyEval_RestoreThread", "PyList_New", "PyList_SetItem", "Py_IncRef")
(BYTES_AS_STRING, BYTES_SIZE, LONG_AS_LONG_LONG, ERR_OCCURRED, SAVE_THREAD, RESTORE_THREAD, LIST_NEW, LIST_SET_ITEM,
 INC_REF) = range(len(API_NAMES))
#: the rest of the header: ``None``'s address, the call block and entry point of :mod:`tokenizer.kernels.one_text`,
#: the block's id buffer, the shared int objects (addresses, int64) and their count, and the last call's status
NONE, BLOCK, ENTRY, OUT_IDS, OBJECTS, OBJECT_COUNT, STATUS = range(len(API_NAMES), len(API_NAMES) + 7)
HEADER_WORDS = STATUS + 1
WRONG_CALL = -100  # the status of a call with other than three arguments
NO_OBJECT = -101  # the status of a call whose ids include one without a shared int object (a bos/eos id too large)
#: the byte offset of numpy's ``data`` field in an array object, right after the object header
ARRAY_DATA_OFFSET = 16



@kernel
def _header(self):
    """The header array of the function object's ``self`` (an int64 numpy array), viewed in place."""
    return numba.carray(typed_pointer(word_at(self + ARRAY_DATA_OFFSET), np.int64), (HEADER_WORDS,))


@kernel(c_signature=types.int64(types.int64, types.CPointer(types.int64), types.int64))
def encode_call(self, args, nargs):
    """``METH_FASTCALL`` body (see the module docstring): a new reference (the list of ids, or ``None`` with
    ``header[STATUS]`` set: the entry's negative status, :data:`WRONG_CALL` or :data:`NO_OBJECT`), or 0 with a
    Python exception set (``data`` not bytes, an id not an int)."""
    header = _header(self)
    if nargs != 3:
        header[STATUS] = WRONG_CALL
        call_void(header[INC_REF], header[NONE])
        return header[NONE]
    data = call_c(header[BYTES_AS_STRING], (args[0],))
    if data == 0:
        return np.int64(0)
    n = call_c(header[BYTES_SIZE], (args[0],))
    bos_id = call_c(header[LONG_AS_LONG_LONG], (args[1],))
    eos_id = call_c(header[LONG_AS_LONG_LONG], (args[2],))
    if (bos_id == -1 or eos_id == -1) and call_c(header[ERR_OCCURRED], ()) != 0:
        return np.int64(0)
    saved = call_c(header[SAVE_THREAD], ())
    total = call_c(header[ENTRY], (header[BLOCK], data, n, bos_id, eos_id))
    call_void(header[RESTORE_THREAD], saved)
    header[STATUS] = total
    ids = numba.carray(typed_pointer(header[OUT_IDS], np.int32), (max(total, 0),))
    for k in range(max(total, 0)):
        if ids[k] < 0 or ids[k] >= header[OBJECT_COUNT]:
            header[STATUS] = NO_OBJECT
    if header[STATUS] < 0:
        call_void(header[INC_REF], header[NONE])
        return header[NONE]
    result = call_c(header[LIST_NEW], (total,))
    if result == 0:
        return np.int64(0)
    objects = numba.carray(typed_pointer(header[OBJECTS], np.int64), (header[OBJECT_COUNT],))
    for k in range(total):
        item = objects[ids[k]]
        call_void(header[INC_REF], item)
        list_set_item(header[LIST_SET_ITEM], result, np.int64(k), item)
    return result
