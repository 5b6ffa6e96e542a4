"""Python lists of ids built by compiled code: the list output of ``encode_batch`` in one pass over the ids.

Turning flat ids (int32) and their document offsets into one Python list per document costs more, in Python, than
encoding them: an object array of the ids, a flat list of it, then a slice per document. :func:`build_id_lists`
builds the lists directly: for each document ``PyList_New``, then each id's shared int object (an address from
``objects``, whose Python ints the caller keeps alive) with ``Py_IncRef`` and ``PyList_SetItem``. Those functions
of the CPython C API are called by the addresses in ``api`` (:data:`API_FUNCTIONS`, filled by
:func:`tokenizer.shared_ids.c_api_addresses`), so the kernel needs the GIL (it is compiled with ``nogil=False``, as
are the steps below that call the C API), and no address is compiled into it (the disk cache stays valid from
process to process). Its calls by address (:func:`call_c`, :func:`call_void`, :func:`list_set_item`) serve
:mod:`tokenizer.kernels.python_call` too.

Where items and counts may be written in place (CPython before 3.12), a batch's lists are built in steps so that
only the short ones hold the GIL, and threads that encode ranges of a batch build their lists side by side, into
one outer list: :func:`new_outer_list` (GIL: the outer list, NULL items), then per range :func:`new_id_lists`
(GIL: the empty lists, one ``PyList_New`` per document), :func:`count_ids` (no GIL: how often each id occurs,
every id checked), :func:`raise_counts` (GIL: each shared int's count raised once by its number of uses; for a
range of few ids beside the shared ints, :func:`ids_within` and :func:`raise_each` instead, one raise per id, so
that no step passes over the whole vocabulary) and :func:`fill_id_lists` (no GIL: the items written), and last
:func:`track_id_lists` (GIL: the outer list in the collector's sight). Until then the lists are untracked and
hold NULL items, as ``PyList_New`` leaves them, and no Python code can reach them, not even through the collector
(``gc.get_objects`` in another thread meanwhile).

Both ways leave the lists of ids out of the cyclic collector's sight (untracked) and track the outer list: a list
of ints takes part in no cycle (CPython leaves tuples and dicts of such values untracked too), while tracked, the
first young-generation collection after a batch would visit every id of it, a cost of the order of building the
lists (``benchmarks/encode.py`` ends each call with one). Such a list is freed by its reference count as any other;
only a cycle a caller builds through one (a list of ids put inside itself) would not be collected.

The twin of both ways is :func:`tokenizer.twins.python_lists.ref_build_id_lists`. Example: ids ``[5, 6, 7]``, offsets
``[0, 2, 2, 3]`` -> the address of ``[[5, 6], [], [7]]`` (a new reference), or 0 when memory ran out or an id has no
object (then nothing is left allocated).
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from tokenizer.kernels import kernel

#: the C API functions :func:`build_id_lists` calls, in the order of its ``api`` array
API_FUNCTIONS = ("PyList_New", "PyList_SetItem", "Py_IncRef", "Py_DecRef", "PyObject_GC_UnTrack", "PyObject_GC_Track")
LIST_NEW, LIST_SET_ITEM, INC_REF, DEC_REF, GC_UNTRACK, GC_TRACK = range(len(API_FUNCTIONS))
#: the word of ``api`` after the functions: 1 when items and reference counts may be written in place
#: (:func:`tokenizer.shared_ids.direct_writes_work`: the steps of :func:`new_id_lists`), 0 to call ``Py_IncRef`` and
#: ``PyList_SetItem`` (:func:`build_id_lists`)
DIRECT = len(API_FUNCTIONS)
#: the word after it: the address of the C library's ``madvise``, or 0 (not Linux), which a list's fresh items are
#: advised to take huge pages with (:data:`ADVISE_ABOVE`)
MADVISE = DIRECT + 1
MADV_HUGEPAGE = 14  # Linux
HUGE_PAGE = 1 << 21
#: a list whose items take this many bytes or more asks for huge pages before they are written: its items come
#: fresh from the system (glibc maps allocations over 32 MB anew each time), and one fault per 4 KB page costs more
#: than writing them (``benchmarks/encode_worst_case.py``, the long runs of one letter)
ADVISE_ABOVE = 4 << 20
#: where a list object holds the address of its items (``ob_item``) and its length (``ob_size``), and an object its
#: reference count (0)
LIST_ITEMS_OFFSET, LIST_LENGTH_OFFSET = 24, 16

_I64 = ir.IntType(64)


@intrinsic
def call_c(typingctx, function, arguments):
    """Call the C function at address ``function`` with ``arguments`` (a tuple of int64: integers or addresses) and
    return its result, for functions that return a 64-bit integer or an address (``PyList_New``,
    ``PyBytes_Size``, ...)."""
    count = len(arguments)

    def codegen(context, builder, signature, args):
        c_function = ir.FunctionType(_I64, [_I64] * count)
        values = [builder.extract_value(args[1], k) for k in range(count)]
        return builder.call(builder.inttoptr(args[0], c_function.as_pointer()), values)

    return types.int64(function, arguments), codegen


@intrinsic
def list_set_item(typingctx, function, target, index, item):
    """``PyList_SetItem(target, index, item)`` (steals the reference to ``item``): 0, or -1 on failure."""

    def codegen(context, builder, signature, args):
        c_function = ir.FunctionType(ir.IntType(32), [_I64, _I64, _I64])
        result = builder.call(builder.inttoptr(args[0], c_function.as_pointer()), list(args[1:]))
        return builder.sext(result, _I64)

    return types.int64(types.int64, types.int64, types.int64, types.int64), codegen


@intrinsic
def call_void(typingctx, function, argument):
    """Call the C function at address ``function``, of one word and no result (``Py_IncRef``, ``Py_DecRef``,
    ``PyEval_RestoreThread``), with ``argument``."""

    def codegen(context, builder, signature, args):
        c_function = ir.FunctionType(ir.VoidType(), [_I64])
        builder.call(builder.inttoptr(args[0], c_function.as_pointer()), [args[1]])
        return context.get_dummy_value()

    return types.none(types.int64, types.int64), codegen


@intrinsic
def word_at(typingctx, address):
    """The int64 stored at ``address``."""

    def codegen(context, builder, signature, args):
        return builder.load(builder.inttoptr(args[0], _I64.as_pointer()))

    return types.int64(types.int64), codegen


@intrinsic
def _store_word(typingctx, address, value):
    """Store the int64 ``value`` at ``address``."""

    def codegen(context, builder, signature, args):
        builder.store(args[1], builder.inttoptr(args[0], _I64.as_pointer()))
        return context.get_dummy_value()

    return types.none(types.int64, types.int64), codegen


@kernel(nogil=False)
def build_id_lists(ids, offsets, objects, api):
    """The address of a new list (a new reference) holding, for each ``i``, the list of the objects
    ``objects[ids[offsets[i]:offsets[i + 1]]]``; 0 when an id is outside ``objects`` or memory ran out (whatever was
    built is released). ``ids`` int32, ``offsets`` int64 (ascending, from 0 to at most ``len(ids)``), ``objects``
    int64: addresses of live Python objects, ``api`` int64: the addresses of :data:`API_FUNCTIONS`, then
    :data:`DIRECT` and :data:`MADVISE`. Needs the GIL. Through the C API only: where items and counts may be
    written in place, :class:`tokenizer.shared_ids.IdLists` takes the steps of :func:`new_id_lists` instead."""
    documents = offsets.shape[0] - 1
    outer = call_c(api[LIST_NEW], (documents,))
    if outer == 0:
        return np.int64(0)
    limit = objects.shape[0]
    for i in range(documents):
        start = offsets[i]
        inner = call_c(api[LIST_NEW], (offsets[i + 1] - start,))
        if inner == 0:
            call_void(api[DEC_REF], outer)
            return np.int64(0)
        call_void(api[GC_UNTRACK], inner)  # (see the module docstring)
        list_set_item(api[LIST_SET_ITEM], outer, i, inner)  # the outer list owns it from here
        for k in range(start, offsets[i + 1]):
            value = ids[k]
            if value < 0 or value >= limit:
                call_void(api[DEC_REF], outer)
                return np.int64(0)
            item = objects[value]
            call_void(api[INC_REF], item)
            list_set_item(api[LIST_SET_ITEM], inner, k - start, item)
    return outer


@kernel(nogil=False)
def new_outer_list(documents, api):
    """The address of a new list (a new reference) of ``documents`` NULL items, untracked by the cyclic collector
    until :func:`track_id_lists`, for :func:`new_id_lists` to fill; 0 when memory ran out. Needs the GIL."""
    outer = call_c(api[LIST_NEW], (documents,))
    if outer != 0:
        call_void(api[GC_UNTRACK], outer)
    return outer


@kernel(nogil=False)
def new_id_lists(outer, first, offsets, api):
    """Put into items ``first .. first + len(offsets) - 2`` of the list at ``outer`` (:func:`new_outer_list`) one
    new list per document, of length ``offsets[i + 1] - offsets[i]`` with NULL items (for :func:`fill_id_lists`),
    untracked by the cyclic collector; False when memory ran out (the lists made so far stay in ``outer``, which
    the caller drops). ``offsets`` int64, ``api`` as for :func:`build_id_lists`, whose in-place writes this needs.
    Needs the GIL. Threads may fill ranges of one outer list side by side.
    Example: an outer list of 4 NULLs, first 1, offsets ``[0, 2, 2, 3]`` -> ``[NULL, [NULL, NULL], [], [NULL]]``."""
    outer_items = word_at(outer + LIST_ITEMS_OFFSET) + 8 * first
    for i in range(offsets.shape[0] - 1):
        length = offsets[i + 1] - offsets[i]
        inner = call_c(api[LIST_NEW], (length,))
        if inner == 0:
            return False
        call_void(api[GC_UNTRACK], inner)
        _store_word(outer_items + 8 * i, inner)  # what PyList_SetItem does on a new list
        if 8 * length >= ADVISE_ABOVE:
            advise_huge_pages(api[MADVISE], word_at(inner + LIST_ITEMS_OFFSET), 8 * length)
    return True


@kernel
def advise_huge_pages(madvise, address, nbytes):
    """Advise the whole huge pages inside the ``nbytes`` at ``address`` to be huge pages, by the C library's
    ``madvise`` at address ``madvise`` (0: none, nothing done); a hint, whose result is moot. Call it before the
    memory is first written. Example: 5 MB from 3 MB -> the pages of 4 MB .. 8 MB are advised."""
    start = (address + HUGE_PAGE - 1) & ~np.int64(HUGE_PAGE - 1)
    stop = (address + nbytes) & ~np.int64(HUGE_PAGE - 1)
    if madvise != 0 and stop > start:
        call_c(madvise, (start, stop - start, np.int64(MADV_HUGEPAGE)))


@kernel
def ids_within(ids, start, end, limit):
    """Whether every id of ``ids[start:end]`` (int32) is in ``0 .. limit - 1``. No GIL needed.
    Example: ids ``[1, 1, 3]``, limit 4 -> True; limit 3 -> False."""
    for k in range(start, end):
        if ids[k] < 0 or ids[k] >= limit:
            return False
    return True


@kernel
def count_ids(ids, start, end, counts):
    """Add to ``counts`` (int64, one per shared object) how often each id of ``ids[start:end]`` (int32) occurs;
    False, with ``counts`` unchanged, when an id is outside ``counts``. No GIL needed.
    Example: ids ``[1, 1, 3]``, counts of 4 zeros -> True, counts ``[0, 2, 0, 1]``."""
    if not ids_within(ids, start, end, counts.shape[0]):
        return False
    for k in range(start, end):
        counts[ids[k]] += 1
    return True


@kernel(nogil=False)
def raise_counts(objects, counts):
    """Raise the reference count of the object at ``objects[i]`` (int64 addresses) by ``counts[i]`` (int64), in
    place: the references :func:`fill_id_lists` is about to write. Needs the GIL.
    Example: counts ``[0, 2]`` -> the second object's count is 2 higher."""
    for i in range(counts.shape[0]):
        if counts[i] != 0:
            _store_word(objects[i], word_at(objects[i]) + counts[i])


@kernel(nogil=False)
def raise_each(objects, ids, start, end):
    """Raise the reference count of ``objects[ids[k]]`` (int64 addresses) by one for each ``k`` in ``start ..
    end - 1``, in place: the references :func:`fill_id_lists` is about to write, where the ids are few beside the
    objects (:func:`raise_counts` passes over every object). The ids must be checked already (:func:`ids_within`).
    Needs the GIL. Example: ids ``[1, 1]`` -> the second object's count is 2 higher."""
    for k in range(start, end):
        address = objects[ids[k]]
        _store_word(address, word_at(address) + 1)


@kernel
def fill_id_lists(outer, first, ids, offsets, objects):
    """Write ``objects[ids[k]]`` into the lists of :func:`new_id_lists` (in the list at ``outer`` from item
    ``first``): list ``first + i`` gets the ids ``offsets[i] .. offsets[i + 1] - 1``. Their counts must be raised
    already (:func:`raise_counts`) and the ids checked (:func:`count_ids`); the lists must reach no Python code
    before this returns. No GIL needed.
    Example: first 0, ids ``[5, 6, 7]``, offsets ``[0, 2, 2, 3]`` -> ``[[5, 6], [], [7]]`` (their objects)."""
    outer_items = word_at(outer + LIST_ITEMS_OFFSET) + 8 * first
    for i in range(offsets.shape[0] - 1):
        items = word_at(word_at(outer_items + 8 * i) + LIST_ITEMS_OFFSET)
        start = offsets[i]
        for k in range(start, offsets[i + 1]):
            _store_word(items + 8 * (k - start), objects[ids[k]])


@kernel(nogil=False)
def track_id_lists(outer, api):
    """Hand the outer list of :func:`new_outer_list` (the address ``outer``), filled by :func:`new_id_lists` and
    :func:`fill_id_lists`, to the cyclic collector (``PyObject_GC_Track``); its lists of ids stay untracked (see the
    module docstring). Needs the GIL."""
    call_void(api[GC_TRACK], outer)
