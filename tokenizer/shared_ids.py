"""The Python int objects that lists of ids share, and the addresses of C API functions that compiled code calls.

    >>> SharedIds(3).objects.tolist()
    [0, 1, 2]
"""

from __future__ import annotations

import numpy as np


class SharedIds:
    """The Python ints ``0 .. size - 1`` that id lists share (one object per id, not one per occurrence): ``objects``
    (an object array) and, for the compiled list builders (:func:`tokenizer.kernels.python_lists.build_id_lists`,
    :func:`tokenizer.kernels.python_call.encode_call`), their addresses (int64) and those of the C API functions
    ``build_id_lists`` calls, then whether it may write in place (``api``). Built once per model
    (:meth:`tokenizer.compiled.CompiledModel.shared_ids`); it keeps the ints alive."""

    def __init__(self, size: int) -> None:
        from tokenizer.kernels.python_lists import API_FUNCTIONS

        self.objects = np.arange(size, dtype=np.int64).astype(object)
        self.addresses = np.array([id(value) for value in self.objects.tolist()], dtype=np.int64)
        self.api = np.append(c_api_addresses(API_FUNCTIONS), np.int64(direct_writes_work()))


def c_api_addresses(names) -> np.ndarray:
    """The addresses (int64) of the CPython C API functions ``names`` in this interpreter:
    ``c_api_addresses(["Py_IncRef"])`` -> one nonzero address."""
    import ctypes

    return np.array([ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value for name in names],
                    dtype=np.int64)


def direct_writes_work() -> bool:
    """True when compiled code may fill a new list's items and raise a reference count by writing them in place
    (:func:`tokenizer.kernels.python_lists.build_id_lists`): CPython before 3.12 (no immortal objects), not a debug
    build, and a probe finds a list's items and an object's count where the kernel writes them."""
    import ctypes
    import sys

    from tokenizer.kernels.python_lists import LIST_ITEMS_OFFSET

    if sys.implementation.name != "cpython" or sys.version_info >= (3, 12) or hasattr(sys, "gettotalrefcount"):
        return False
    item = object()
    probe = [item]
    items = ctypes.c_int64.from_address(id(probe) + LIST_ITEMS_OFFSET).value
    count = ctypes.c_int64.from_address(id(item)).value
    return ctypes.c_int64.from_address(items).value == id(item) and count == sys.getrefcount(item) - 1
