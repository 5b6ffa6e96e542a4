"""The Python int objects that lists of ids share, the addresses of C API functions that compiled code calls, and
the lists of ids built from them (:func:`split_ids`, the list output of ``encode_batch`` and of long texts'
``encode``).

    >>> SharedIds(3).objects.tolist()
    [0, 1, 2]
    >>> split_ids(np.array([1, 2, 3]), np.array([0, 2, 2, 3]), SharedIds(4))
    [[1, 2], [], [3]]
"""

from __future__ import annotations

import functools

import numpy as np


class SharedIds:
    """The Python ints ``0 .. size - 1`` that id lists share (one object per id, not one per occurrence): ``objects``
    (an object array) and, for the compiled list builders (:func:`tokenizer.kernels.python_lists.build_id_lists`,
    :func:`tokenizer.kernels.python_call.encode_call`), their addresses (int64) and those of the C API functions
    ``build_id_lists`` calls, then whether it may write in place and the address of ``madvise`` (``api``). Built
    once per model (:meth:`tokenizer.compiled.CompiledModel.shared_ids`); it keeps the ints alive."""

    def __init__(self, size: int) -> None:
        from tokenizer.kernels.python_lists import API_FUNCTIONS

        self.objects = np.arange(size, dtype=np.int64).astype(object)
        self.addresses = np.array([id(value) for value in self.objects.tolist()], dtype=np.int64)
        self.api = np.append(c_api_addresses(API_FUNCTIONS), [direct_writes_work(), huge_page_advice()])


def c_api_addresses(names) -> np.ndarray:
    """The addresses (int64) of the CPython C API functions ``names`` in this interpreter:
    ``c_api_addresses(["Py_IncRef"])`` -> one nonzero address."""
    import ctypes

    return np.array([ctypes.cast(getattr(ctypes.pythonapi, name), ctypes.c_void_p).value for name in names],
                    dtype=np.int64)


@functools.lru_cache(maxsize=1)
def huge_page_advice() -> int:
    """The address of the C library's ``madvise`` on Linux, where :func:`tokenizer.kernels.python_lists.new_id_lists`
    asks for huge pages for a long list's items and :func:`tokenizer.memory.fresh_array` for a large work array; 0
    elsewhere (or where it cannot be found). Looked up once per process."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return 0
    try:
        return int(ctypes.cast(ctypes.pythonapi.madvise, ctypes.c_void_p).value or 0)
    except AttributeError:
        return 0


def direct_writes_work() -> bool:
    """True when compiled code may fill a new list's items and raise a reference count by writing them in place
    (:func:`tokenizer.kernels.python_lists.build_id_lists`): CPython before 3.12 (no immortal objects), not a debug
    build, and a probe finds a list's items and length and an object's count where the kernels read and write
    them."""
    import ctypes
    import sys

    from tokenizer.kernels.python_lists import LIST_ITEMS_OFFSET, LIST_LENGTH_OFFSET

    if sys.implementation.name != "cpython" or sys.version_info >= (3, 12) or hasattr(sys, "gettotalrefcount"):
        return False
    item = object()
    probe = [item, item, item]
    items = ctypes.c_int64.from_address(id(probe) + LIST_ITEMS_OFFSET).value
    length = ctypes.c_int64.from_address(id(probe) + LIST_LENGTH_OFFSET).value
    count = ctypes.c_int64.from_address(id(item)).value
    return (ctypes.c_int64.from_address(items).value == id(item) and length == 3
            and count == sys.getrefcount(item) - 1)


def split_ids(ids: np.ndarray, offsets: np.ndarray, shared: SharedIds | None = None) -> list[list[int]]:
    """Flat ids cut at ``offsets`` into Python lists: ``[1, 2, 3]``, ``[0, 2, 2, 3]`` -> ``[[1, 2], [], [3]]``.

    With ``shared`` (:meth:`tokenizer.compiled.CompiledModel.shared_ids`) the lists hold its int objects instead of
    one new int per id, and are built in one compiled pass (:func:`tokenizer.kernels.python_lists.build_id_lists`;
    with the JIT disabled, an object array of the ids, listed, then sliced per text). Without, pyarrow's C
    conversion builds the lists. The cyclic garbage collector is paused meanwhile: the thousands of new lists would
    otherwise set off full collections that cost more than the conversion (lists of ints hold no cycles, so pausing
    it frees nothing later than it would).
    """
    with CollectorPaused():
        if shared is not None:
            built = _built_lists(ids, offsets, shared)
            if built is not None:
                return built
            flat = shared.objects[ids].tolist()
            bounds = offsets.tolist()
            # (a comprehension of slices: faster than list(map(flat.__getitem__, map(slice, ...))))
            return [flat[start:end] for start, end in zip(bounds, bounds[1:])]
        import pyarrow as pa

        list_type = pa.ListArray if offsets.dtype == np.int32 else pa.LargeListArray
        return list_type.from_arrays(pa.array(offsets), pa.array(ids, type=pa.int32())).to_pylist()


class CollectorPaused:
    """The cyclic garbage collector off inside, back on after if it was on before (a caller's choice to keep it
    off stands): ``with CollectorPaused(): ...``. Threads that build lists at once should all be inside one such
    block of their calling thread, which turns it back on once they are done. Nothing is allocated after turning
    it back on (a generator-based context manager would allocate there, setting off a collection of the new
    lists at once instead of when they are dropped or the caller allocates)."""

    __slots__ = ("_collecting",)

    def __enter__(self) -> None:
        import gc

        self._collecting = gc.isenabled()
        gc.disable()

    def __exit__(self, *exception) -> None:
        if self._collecting:
            import gc

            gc.enable()


#: :meth:`IdLists.fill` raises each id's count in turn when the ids are fewer than the shared ints divided by this;
#: else it counts them first, in an array as long as the vocabulary (zeroed, then passed over once)
FEW_IDS_PER_OBJECT = 8


class IdLists:
    """One list of lists of ids whose ranges are built in place, by several threads at once if need be: the outer
    list comes first, with NULL items and out of the cyclic collector's sight (no Python code can reach it), each
    :meth:`fill` puts in a range of documents' lists, and :meth:`result` hands the whole to Python (see
    :mod:`tokenizer.kernels.python_lists`). Only where items may be written in place (:meth:`for_documents`
    returns None otherwise); :meth:`drop` frees a list that will not be finished.
    Example: ``lists = IdLists.for_documents(3, shared)``, ``lists.fill(1, ids [7, 8], offsets [0, 2, 2])``,
    ``lists.fill(0, ids [5], offsets [0, 1])``, ``lists.result()`` -> ``[[5], [7, 8], []]``."""

    __slots__ = ("address", "shared")

    def __init__(self, address: int, shared: SharedIds) -> None:
        self.address, self.shared = address, shared

    @classmethod
    def for_documents(cls, documents: int, shared: SharedIds) -> IdLists | None:
        from tokenizer.kernels import python_lists as kernels

        if not shared.api[kernels.DIRECT] or not hasattr(kernels.new_outer_list, "py_func"):
            return None
        address = kernels.new_outer_list(documents, shared.api)
        if address == 0:
            raise MemoryError(f"no memory for a list of {documents:,} lists of ids")
        return cls(address, shared)

    def fill(self, first: int, ids: np.ndarray, offsets: np.ndarray) -> None:
        """The lists of documents ``first ..``: ``ids`` (int32) cut at ``offsets`` (int64, from 0). Raises
        IndexError for an id without a shared int (nothing of this range written), MemoryError when lists cannot
        be made; :meth:`drop` then frees what was made."""
        from tokenizer.kernels import python_lists as kernels

        shared = self.shared
        start, end, objects = int(offsets[0]), int(offsets[-1]), len(shared.addresses)
        # two short steps under the GIL, two without; no step costs more than the ids do (a batch of a few ids
        # beside a large vocabulary raises each id's count in turn, rather than count them over the vocabulary)
        few = (end - start) * FEW_IDS_PER_OBJECT < objects
        counts = None if few else np.zeros(objects, dtype=np.int64)
        if not (kernels.ids_within(ids, start, end, objects) if few else kernels.count_ids(ids, start, end, counts)):
            raise IndexError(f"an id is outside the {objects:,} shared ints")
        if not kernels.new_id_lists(self.address, first, offsets, shared.api):
            raise MemoryError(f"no memory for {len(offsets) - 1:,} lists of ids")
        if few:
            kernels.raise_each(shared.addresses, ids, start, end)
        else:
            kernels.raise_counts(shared.addresses, counts)
        kernels.fill_id_lists(self.address, first, ids, offsets, shared.addresses)

    def result(self) -> list:
        """The filled list, tracked by the collector from here (its lists of ids stay untracked); every document
        must have been filled."""
        from tokenizer.kernels import python_lists as kernels

        kernels.track_id_lists(self.address, self.shared.api)
        lists = _owned(self.address)
        self.address = 0
        return lists

    def drop(self) -> None:
        """Free the list and the lists filled so far (NULL items are skipped), when it will not be finished."""
        import ctypes

        if self.address:
            ctypes.pythonapi.Py_DecRef(ctypes.c_void_p(self.address))
            self.address = 0


def _built_lists(ids: np.ndarray, offsets: np.ndarray, shared: SharedIds) -> list | None:
    """The lists of :func:`split_ids` from the compiled builder, or ``None`` where it cannot make them (the JIT
    disabled; memory ran out or an id has no shared object: the caller's Python path then builds or raises)."""
    from tokenizer.kernels import python_lists as kernels

    offsets = np.asarray(offsets, dtype=np.int64)
    if not hasattr(kernels.build_id_lists, "py_func") or int(offsets[0]) < 0 or int(offsets[-1]) > len(ids):
        return None
    ids = np.asarray(ids, dtype=np.int32)
    if shared.api[kernels.DIRECT]:
        try:
            lists = IdLists.for_documents(len(offsets) - 1, shared)
        except MemoryError:
            return None
        try:
            lists.fill(0, ids, offsets)
        except (IndexError, MemoryError):
            lists.drop()
            return None
        return lists.result()
    address = kernels.build_id_lists(ids, offsets, shared.addresses, shared.api)
    return None if address == 0 else _owned(address)


def _owned(address: int):
    """The object at ``address``, whose one reference a kernel made (a new reference), as a Python object that
    owns it: ctypes takes a second reference, and the kernel's is dropped."""
    import ctypes

    value = ctypes.cast(address, ctypes.py_object).value
    ctypes.pythonapi.Py_DecRef(ctypes.py_object(value))
    return value
