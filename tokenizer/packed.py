"""Packed byte strings, Arrow's layout for a binary column: one uint8 ``data`` buffer and int64 ``offsets`` of shape
``(n + 1,)``, item ``i`` being ``data[offsets[i]:offsets[i + 1]]``. Every kernel that reads many texts, chunks or
pieces takes them this way; this module converts to and from it.

    >>> data, offsets = pack([b"ab", b"", b"c"])
    >>> data.tobytes(), offsets.tolist()
    (b'abc', [0, 2, 2, 3])
    >>> unpack(data, offsets)
    [b'ab', b'', b'c']

:func:`from_arrow` and :func:`to_arrow` import pyarrow when called (``import tokenizer`` does not need it).
"""

from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np

from tokenizer.errors import InputError


class PackedBytes(Sequence):
    """Byte strings kept packed: a read-only sequence of ``bytes`` over ``data`` (uint8) and ``offsets`` (int64,
    from 0), which costs the strings' bytes plus 8 bytes each instead of a Python object each (tens of bytes).
    Items and iteration give ``bytes``; :func:`pack` returns the arrays themselves; it pickles as the two arrays.
    Example: ``list(PackedBytes(*pack([b"ab", b"c"])))`` -> ``[b"ab", b"c"]``; ``len`` 2, ``nbytes`` 3."""

    __slots__ = ("data", "offsets")
    ITER_BLOCK = 1 << 16  # strings unpacked at a time while iterating

    def __init__(self, data, offsets):
        data, offsets = as_packed(data, offsets)
        if offsets[0]:
            data, offsets = data[offsets[0]:offsets[-1]], offsets - offsets[0]
        self.data, self.offsets = data, offsets

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, index):
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                return [self[i] for i in range(start, stop, step)]
            stop = max(start, stop)
            return PackedBytes(self.data, self.offsets[start:stop + 1])
        n = len(self)
        if not -n <= index < n:
            raise IndexError(f"index {index} out of range for {n} strings")
        index %= n
        return self.data[self.offsets[index]:self.offsets[index + 1]].tobytes()

    def __iter__(self) -> Iterator[bytes]:
        for start in range(0, len(self), self.ITER_BLOCK):
            yield from unpack(self.data, self.offsets[start:start + self.ITER_BLOCK + 1])

    def __eq__(self, other) -> bool:
        if isinstance(other, PackedBytes):
            return bool(np.array_equal(self.offsets, other.offsets)
                        and np.array_equal(self.data[:self.nbytes], other.data[:other.nbytes]))
        return isinstance(other, (list, tuple)) and len(other) == len(self) and list(self) == list(other)

    __hash__ = None

    @property
    def nbytes(self) -> int:
        """Total bytes of the strings."""
        return int(self.offsets[-1])

    def __getstate__(self):
        return {"data": self.data, "offsets": self.offsets}

    def __setstate__(self, state):
        self.data, self.offsets = state["data"], state["offsets"]

    def __repr__(self) -> str:
        head = ", ".join(repr(b) for b in self[:4])
        return f"PackedBytes([{head}{', ...' if len(self) > 4 else ''}], {len(self)} strings)"


def pack(items: Sequence[bytes], writable: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """``(data uint8, offsets int64 (n + 1))`` of byte strings (bytes-like items; no str).

    ``data`` is a read-only view of the joined bytes, or with ``writable`` an array of its own. No items give
    ``(uint8 [], int64 [0])`` (a writable empty array). A :class:`PackedBytes` gives its own arrays (a copy of
    ``data`` with ``writable``). Example: ``pack([b"ab", b"c"])`` -> ``(uint8 [97, 98, 99], int64 [0, 2, 3])``.
    """
    if isinstance(items, PackedBytes):
        return (items.data.copy() if writable else items.data), items.offsets
    offsets = np.zeros(len(items) + 1, dtype=np.int64)
    if not len(items):
        return np.zeros(0, dtype=np.uint8), offsets
    np.cumsum(np.fromiter(map(len, items), np.int64, len(items)), out=offsets[1:])
    data = np.frombuffer(b"".join(items), dtype=np.uint8)
    return (data.copy() if writable else data), offsets


def read_only(data: np.ndarray) -> np.ndarray:
    """``data`` itself when read-only, else a read-only view of it: a kernel given texts both from Arrow buffers
    (read-only) and from Python compiles once for one of the two. ``read_only(np.zeros(2)).flags.writeable`` ->
    False."""
    if not data.flags.writeable:
        return data
    view = data.view()
    view.flags.writeable = False
    return view


def unpack(data, offsets) -> list[bytes]:
    """The byte strings of packed ``(data, offsets)`` (a uint8 array and int64 offsets, or what converts to them):
    ``unpack(uint8 b"aab", [0, 1, 3])`` -> ``[b"a", b"ab"]``."""
    offsets = np.asarray(offsets, np.int64)
    if len(offsets) < 2:
        return []
    first, last = int(offsets[0]), int(offsets[-1])
    blob = np.asarray(data, np.uint8)[first:last].tobytes()
    bounds = (offsets - first).tolist()
    return [blob[bounds[i]:bounds[i + 1]] for i in range(len(bounds) - 1)]


def as_packed(data, offsets, check: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """``(data, offsets)`` as C-contiguous uint8 and int64 arrays (no copy when they already are); ``data`` may be
    bytes-like. Raises :class:`InputError` when ``data`` is an array of another dtype and, with ``check``, when
    the offsets are not :func:`offsets_valid`. Example: ``as_packed(b"abc", [0, 2, 3])`` -> ``(uint8 [97, 98, 99],
    int64 [0, 2, 3])``; ``as_packed(b"abc", [0, 4])`` raises."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        data = np.frombuffer(data, dtype=np.uint8)
    data = np.ascontiguousarray(data)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    if data.dtype != np.uint8:
        raise InputError(f"data must be a uint8 array (text bytes), got dtype {data.dtype}")
    if check:
        check_offsets(offsets, len(data))
    return data, offsets


def offsets_valid(offsets: np.ndarray, size: int) -> bool:
    """True when ``offsets`` (int64) is 1-d with at least one entry and rises (never falls) from >= 0 to
    ``<= size``, the length of the data. ``offsets_valid([0, 2, 2, 3], 3)`` -> True; ``[0, 2, 1]`` -> False."""
    offsets = np.asarray(offsets)
    return bool(offsets.ndim == 1 and len(offsets) >= 1 and offsets[0] >= 0 and offsets[-1] <= size
                and not np.any(np.diff(offsets) < 0))


def check_offsets(offsets: np.ndarray, size: int) -> None:
    """Raise :class:`InputError` unless :func:`offsets_valid`."""
    if not offsets_valid(offsets, size):
        raise InputError(f"offsets must be 1-d, rising from >= 0 to <= len(data) = {size}")


def from_arrow(array) -> tuple[np.ndarray, np.ndarray]:
    """``(data uint8, offsets)`` of a pyarrow binary/string (or large_binary/large_string) array, without copying:
    ``offsets`` are the array's own (int32 for binary/string, int64 for the large types), ``n + 1`` of them from
    the array's slice offset, so they need not start at 0; ``data`` is the whole values buffer.

    Null entries read as whatever the buffers hold there (usually empty): callers check ``array.null_count``.
    An empty array gives ``offsets == [0]``; an array without a values buffer gives an empty ``data``. Example:
    ``from_arrow(pa.array([b"xx", b"ab", b"c"]).slice(1))`` -> ``(b"xxabc", int32 [2, 4, 5])``.
    """
    import pyarrow as pa

    kind = array.type
    large = pa.types.is_large_binary(kind) or pa.types.is_large_string(kind)
    offset_dtype = np.int64 if large else np.int32
    n = len(array)
    _, offsets_buffer, data_buffer = array.buffers()[:3]
    if n == 0:
        offsets = np.zeros(1, dtype=offset_dtype)
    else:
        offsets = np.frombuffer(offsets_buffer, dtype=offset_dtype)[array.offset:array.offset + n + 1]
    data = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    return data, offsets


def to_arrow(data: np.ndarray, offsets: np.ndarray):
    """A pyarrow ``binary`` array (``large_binary`` from 2 GiB of values) of packed ``(data, offsets)``; the
    offsets need not start at 0 (they are rebased), and the values buffer is ``data[offsets[0]:offsets[-1]]``
    itself, not a copy. Example: ``to_arrow(uint8 b"abcde", [0, 2, 2, 5]).to_pylist()`` ->
    ``[b"ab", b"", b"cde"]``."""
    import pyarrow as pa

    start, stop = int(offsets[0]), int(offsets[-1])
    rebased = np.asarray(offsets, np.int64) - start
    values = pa.py_buffer(data[start:stop])
    if stop - start < 2**31:
        return pa.Array.from_buffers(pa.binary(), len(rebased) - 1, [None, pa.py_buffer(rebased.astype(np.int32)),
                                                                      values])
    return pa.Array.from_buffers(pa.large_binary(), len(rebased) - 1, [None, pa.py_buffer(rebased), values])
