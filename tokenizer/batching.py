"""Batch encoding: texts packed Arrow-style (one uint8 data buffer plus offsets) through the compiled model on one
or several threads, and the conversions around it (a list of str/bytes to packed texts, flat ids to Python lists
by :func:`tokenizer.shared_ids.split_ids` or to a pyarrow list array). :meth:`tokenizer.core.Tokenizer.encode_batch`
is the API; ``tok`` in the functions below is a Tokenizer.
"""

from __future__ import annotations

import bisect
import os

import numpy as np

from tokenizer.compiled import ALL_VALID, encode_split
from tokenizer.encoding_threads import check_in, check_out
from tokenizer.packed import from_arrow, pack
from tokenizer.python_texts import byte_bounds, pack_items, text_layout
from tokenizer.shared_ids import CollectorPaused, IdLists, split_ids
from tokenizer.shared_ranges import Batch, RangeTasks, encode_documents, normalized

_MIN_BYTES_PER_THREAD = 1 << 16
#: a list of at most this many texts, of at most :data:`FEW_TEXTS_LENGTH` characters (or bytes) in all, is encoded
#: text by text as :meth:`tokenizer.core.Tokenizer.encode` does: a batch's fixed cost (packing, cutting, building
#: lists in steps) is more than such a list's work, which one thread does anyway (``benchmarks/encode_call_cost.py``)
FEW_TEXTS = 16
FEW_TEXTS_LENGTH = 1 << 14


def encode_arrow(tok, pa, array, num_threads: int | None, bos: int, eos: int):
    """Ids of a pyarrow string/binary (or large_*) array as a ``list<int32>`` (or ``large_list<int32>``) array;
    nulls stay null."""
    kind = array.type
    if not (pa.types.is_string(kind) or pa.types.is_binary(kind) or pa.types.is_large_string(kind)
            or pa.types.is_large_binary(kind)):
        raise TypeError(f"encode_batch needs a pyarrow string, large_string, binary or large_binary array, "
                        f"not {kind}; cast it first (e.g. array.cast(pa.large_string()))")
    data, offsets = from_arrow(array)
    valid, validity, nulls = ALL_VALID, None, array.null_count
    if nulls:
        valid = (~np.asarray(array.is_null().to_numpy(zero_copy_only=False), dtype=bool)).astype(np.uint8)
        validity = pa.py_buffer(np.packbits(valid, bitorder="little"))  # (Arrow's bitmap: bit i set = valid)
    ids, out_offsets = encode_packed(tok, data, offsets, valid, num_threads, bos, eos)
    # built from the buffers as they are (pa.array and from_arrays convert and check them, at a cost that shows on
    # a small batch): the offsets are right by construction, empty where a text is null
    values = pa.Array.from_buffers(pa.int32(), len(ids), [None, pa.py_buffer(ids)])
    kind = pa.list_(pa.int32()) if out_offsets.dtype == np.int32 else pa.large_list(pa.int32())
    return pa.Array.from_buffers(kind, len(out_offsets) - 1, [validity, pa.py_buffer(out_offsets)], null_count=nulls,
                                 children=[values])


def encode_packed(tok, data, offsets, valid, num_threads, bos, eos, as_lists=False):
    """Encode packed texts; returns ``(ids int32, offsets int32 or int64)``, offsets starting at 0, or with
    ``as_lists`` one Python list of ids per text.

    With several threads, the documents are cut into one range of about equal byte size per thread, each
    normalized and encoded by its thread (the Numba kernels release the GIL); a thread done early takes the back
    half of what another has not claimed yet (:mod:`tokenizer.shared_ranges`). The parts' ids are then
    concatenated (or, ``as_lists``, each thread turns its parts' ids into lists, which holds the GIL only
    briefly: :func:`tokenizer.shared_ids.split_ids`).
    """
    n = len(offsets) - 1
    if n == 0:
        return [] if as_lists else (np.zeros(0, np.int32), np.zeros(1, np.int32))
    tok.compiled  # build the arrays once, before any thread needs them
    splitter = tok.added_token_splitter
    if splitter is not None:
        split_docs = splitter.candidate_documents(data, offsets)
        if valid.shape[0]:
            split_docs = split_docs[valid[split_docs] != 0]
        if len(split_docs):
            skip = np.ones(n, np.uint8) if not valid.shape[0] else valid.copy()
            skip[split_docs] = 0  # the kernels leave these empty; they are encoded piecewise below
            ids, out_offsets = _encode_plain(tok, _PackedTexts(data, offsets), skip, num_threads, bos, eos)
            replacements = [encode_split(tok.compiled, splitter, bytes(data[offsets[d]:offsets[d + 1]]), bos, eos)
                            for d in split_docs.tolist()]
            spliced = splice_documents(ids, out_offsets, split_docs, replacements)
            return split_ids(*spliced, tok.compiled.shared_ids()) if as_lists else spliced
    return _encode_plain(tok, _PackedTexts(data, offsets), valid, num_threads, bos, eos, as_lists)


def encode_list(tok, texts, num_threads, bos, eos) -> list[list[int]]:
    """Ids of a list or tuple of str/bytes as one Python list per text. A few short texts (:data:`FEW_TEXTS`) are
    encoded one by one, as :meth:`tokenizer.core.Tokenizer.encode` does. Where this interpreter's str and bytes
    objects can be read in place (:func:`tokenizer.python_texts.text_layout`), each thread packs the texts of the
    ranges it encodes, without the GIL; otherwise, or for an item it cannot pack (a bytearray, an unpaired
    surrogate, which :func:`pack_texts` then names), the texts are packed first, through pyarrow."""
    if len(texts) <= FEW_TEXTS and _total_length(texts) <= FEW_TEXTS_LENGTH:
        encode_plain = tok._encode_plain or tok._plain_encoder()  # (what Tokenizer.encode calls)
        return [encode_plain(tok._to_bytes(text), bos, eos) for text in texts]
    layout = text_layout()
    items = texts if type(texts) is tuple else tuple(texts)  # (immutable, and keeps the items alive)
    bounds = byte_bounds(items, 0, len(items), layout) if layout is not None else None
    if bounds is not None and tok.added_token_splitter is None:
        try:
            return _encode_plain(tok, _ListTexts(items, layout, bounds), ALL_VALID, num_threads, bos, eos,
                                 as_lists=True)
        except _Unpackable:
            bounds = None  # (packing them in place again would fail again)
    packed = pack_items(items, 0, len(items), layout, bounds) if bounds is not None else None
    data, offsets = packed if packed is not None else pack_texts(items, tok._to_bytes)
    return encode_packed(tok, data, offsets, ALL_VALID, num_threads, bos, eos, as_lists=True)


def _total_length(texts) -> int:
    """The length of ``texts`` in all: a str's characters, a bytes' bytes, anything else more than
    :data:`FEW_TEXTS_LENGTH`. Example: ``_total_length(["ab", b"c"])`` -> 3."""
    return sum(len(text) if text.__class__ is str or text.__class__ is bytes else FEW_TEXTS_LENGTH + 1
               for text in texts)


class _Unpackable(Exception):
    """An item of a list that :func:`tokenizer.python_texts.pack_items` cannot pack."""


class _PackedTexts:
    """Texts packed already: ``bounds`` their offsets, a range of them a view (offsets not from 0)."""

    def __init__(self, data: np.ndarray, offsets: np.ndarray) -> None:
        self.data, self.bounds = data, offsets

    def texts(self, begin: int, end: int) -> tuple[np.ndarray, np.ndarray]:
        return self.data, np.asarray(self.bounds[begin:end + 1], dtype=np.int64)


class _ListTexts:
    """A tuple of str/bytes, each range packed when it is encoded (by the thread that encodes it): ``bounds`` are
    :func:`tokenizer.python_texts.byte_bounds`, upper bounds of their UTF-8 sizes, which ranges are cut by."""

    def __init__(self, items: tuple, layout: np.ndarray, bounds: np.ndarray) -> None:
        self.items, self.layout, self.bounds = items, layout, bounds

    def texts(self, begin: int, end: int) -> tuple[np.ndarray, np.ndarray]:
        packed = pack_items(self.items, begin, end, self.layout, self.bounds[begin:end + 1])
        if packed is None:
            raise _Unpackable
        return packed


def _encode_plain(tok, source, valid, num_threads, bos, eos, as_lists=False):
    """Encode the texts of ``source`` (:class:`_PackedTexts` or :class:`_ListTexts`), as :func:`encode_packed`."""
    bounds = memoryview(source.bounds)  # (read as Python ints: numpy's scalars cost more, on cold caches)
    n = len(bounds) - 1
    total_bytes = bounds[n] - bounds[0]
    threads = num_threads or os.cpu_count() or 1
    threads = max(1, min(threads, n, total_bytes // _MIN_BYTES_PER_THREAD + 1))
    if threads == 1:
        batch = Batch()
        try:
            ids, out_offsets = encode_documents(tok, *normalized(tok, *source.texts(0, n)), valid, 0, n, bos, eos,
                                                batch)
            if as_lists:
                return split_ids(ids, out_offsets, tok.compiled.shared_ids())
            ids = ids.copy()  # (both are slices of this thread's kept output buffers)
            return ids, out_offsets.astype(offsets_dtype(len(ids)))
        finally:
            batch.done = True
    ranges = _ranges(bounds, threads)
    tasks = RangeTasks(tok, source, valid, ranges)
    try:
        return _encode_tasks(tok, tasks, len(ranges) - 1, n, bos, eos, as_lists)
    finally:
        tasks.batch.done = True  # (every task's ids joined or turned into lists)


def _encode_tasks(tok, tasks, helpers, n, bos, eos, as_lists):
    """Run ``tasks`` (:class:`tokenizer.shared_ranges.RangeTasks`) on the calling thread and ``helpers`` more;
    returns as :func:`encode_packed` for the ``n`` documents."""
    parts: list = []  # (first document, ids and offsets or lists), in the order the threads end them
    shared = tok.compiled.shared_ids() if as_lists else None
    # with as_lists, each thread builds its tasks' lists (mostly without the GIL), in place into one outer
    # list where it can (no list per task to join and drop after), else a list per task
    into = IdLists.for_documents(n, shared) if as_lists else None

    def work() -> None:
        while (task := tasks.take()) is not None:
            first, task_ids, task_offsets = tasks.encode(task, bos, eos)
            if into is not None:
                into.fill(first, task_ids, task_offsets)
            elif as_lists:
                parts.append((first, split_ids(task_ids, task_offsets, shared)))
            else:
                parts.append((first, task_ids, task_offsets))

    threads = check_out(helpers)
    with CollectorPaused():  # once for all threads (each split_ids leaves it as it finds it)
        for thread in threads:
            thread.start_job(work)
        finished = False
        try:
            work()
            finished = True
        finally:
            errors = [thread.join_job() for thread in threads]
            check_in(threads)
            if into is not None and (not finished or any(errors)):
                into.drop()  # a thread failed: free the lists made so far
        for error in errors:
            if error is not None:
                raise error  # a helper's
        if into is not None:
            return into.result()
        parts.sort(key=lambda part: part[0])
        if as_lists:
            result: list = []
            for _, part_lists in parts:
                result.extend(part_lists)
            return result
    ids = np.concatenate([part_ids for _, part_ids, _ in parts])
    out_offsets = np.empty(n + 1, dtype=offsets_dtype(len(ids)))
    out_offsets[0] = 0
    shift = 0
    for first, part_ids, part_offsets in parts:
        out_offsets[first + 1:first + len(part_offsets)] = part_offsets[1:] + shift
        shift += len(part_ids)
    return ids, out_offsets


def _ranges(bounds: memoryview, threads: int) -> list[tuple[int, int]]:
    """One document range ``(begin, end)`` per thread, of about equal size by ``bounds`` (the documents' cumulated
    sizes, ``n + 1``, as a memoryview of their int32 or int64 array; ``threads`` at most ``n``). Each thread starts
    on one, and a thread done early takes part of another's (:mod:`tokenizer.shared_ranges`): ranges of equal bytes
    may well take unequal times. Example: 6 documents of 1 MB, 2 threads -> ``[(0, 3), (3, 6)]``."""
    n = len(bounds) - 1
    first, total_bytes = bounds[0], bounds[n] - bounds[0]
    # (plain Python: numpy's searchsorted and set routines cost more than the rest of a two-thread call's set-up,
    # on cold caches)
    cuts = sorted({0, n, *(bisect.bisect_left(bounds, first + k * total_bytes // threads, 0, n)
                           for k in range(1, threads))})
    return list(zip(cuts[:-1], cuts[1:]))


def offsets_dtype(ids_count: int) -> type:
    """The dtype of a batch's offsets into its ``ids_count`` ids: int32 while they fit (Arrow's ``list``), else
    int64 (``large_list``). Example: ``offsets_dtype(10)`` -> ``np.int32``."""
    return np.int32 if ids_count < 2**31 - 1 else np.int64


def splice_documents(ids: np.ndarray, offsets: np.ndarray, documents: np.ndarray,
                      replacements: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Flat ``ids``/``offsets`` with the (empty) entries of ``documents`` (ascending) set to ``replacements``:
    ``[1, 2, 3]``, ``[0, 2, 2, 3]``, ``[1]``, ``[[7, 8]]`` -> ``[1, 2, 7, 8, 3]``, ``[0, 2, 4, 5]``."""
    offsets = np.asarray(offsets, dtype=np.int64)
    lengths = np.diff(offsets)
    parts, previous = [], 0
    for document, replacement in zip(documents.tolist(), replacements):
        parts.append(ids[offsets[previous]:offsets[document]])
        parts.append(np.asarray(replacement, dtype=np.int32))
        lengths[document] = len(replacement)
        previous = document + 1
    parts.append(ids[offsets[previous]:])
    new_ids = np.concatenate(parts).astype(np.int32, copy=False)
    new_offsets = np.zeros(len(offsets), dtype=np.int64)
    np.cumsum(lengths, out=new_offsets[1:])
    return new_ids, new_offsets.astype(offsets_dtype(len(new_ids)), copy=False)


def pack_texts(texts, to_bytes) -> tuple[np.ndarray, np.ndarray]:
    """A list of str/bytes packed Arrow-style: ``(data uint8, offsets int64 (n + 1))``.

    pyarrow's C conversion does the common case (str encoded as UTF-8, bytes-like kept); anything it refuses or
    turns into a null (None, a number, an unpaired surrogate) goes through ``to_bytes``, which names the problem.
    """
    import pyarrow as pa

    try:
        array = pa.array(texts, type=pa.large_binary())
    except (pa.ArrowException, TypeError, ValueError):
        array = None
    if array is None or array.null_count:
        return pack([to_bytes(t) for t in texts])
    return from_arrow(array)


def pyarrow_if_loaded():
    import sys

    if "pyarrow" in sys.modules:
        return sys.modules["pyarrow"]
    return None
