"""A tuple of Python str/bytes packed into UTF-8 by compiled code without the GIL
(:mod:`tokenizer.kernels.python_texts`), once this interpreter's object layout is read off and checked.

    >>> data, offsets = pack_items(("ab", "é", b"\\xff"), 0, 3, text_layout())  # (text_layout() not None)
    >>> data.tobytes(), offsets.tolist()
    (b'ab\\xc3\\xa9\\xff', [0, 2, 4, 5])
"""

from __future__ import annotations

import functools

import numpy as np

from tokenizer.kernels import python_texts as kernels
from tokenizer.packed import unpack

#: texts of every kind the layout is checked on: empty, ASCII, one, two and four bytes per character, bytes
PROBE_TEXTS = ("", "ab", "é", "ÿ中", "中\U0001F600x", b"\x00\xff", "a" * 100, b"")


@functools.lru_cache(maxsize=None)
def text_layout() -> np.ndarray | None:
    """This interpreter's layout for the kernels (int64, :data:`tokenizer.kernels.python_texts.LAYOUT_WORDS`), or
    ``None`` where they must not read objects in place: not CPython, a debug or free-threaded build, the JIT
    disabled, or a layout that does not pack :data:`PROBE_TEXTS` exactly as ``str.encode`` does."""
    import sys
    import sysconfig

    if (sys.implementation.name != "cpython" or hasattr(sys, "gettotalrefcount")
            or sysconfig.get_config_var("Py_GIL_DISABLED") or not hasattr(kernels.pack_text_items, "py_func")):
        return None
    layout = np.zeros(kernels.LAYOUT_WORDS, dtype=np.int64)
    layout[kernels.STR_TYPE], layout[kernels.BYTES_TYPE] = id(str), id(bytes)
    layout[kernels.ASCII_DATA] = sys.getsizeof("") - 1  # the header, then the characters and a NUL
    layout[kernels.COMPACT_DATA] = sys.getsizeof("\u0100") - 4  # two bytes per character, one and the NUL
    layout[kernels.BYTES_DATA] = sys.getsizeof(b"") - 1
    packed = pack_items(PROBE_TEXTS, 0, len(PROBE_TEXTS), layout)
    expected = [t.encode("utf-8") if isinstance(t, str) else t for t in PROBE_TEXTS]
    if packed is None or unpack(*packed) != expected:
        return None
    return layout


def byte_bounds(items: tuple, begin: int, end: int, layout: np.ndarray) -> np.ndarray | None:
    """Upper bounds of the UTF-8 sizes of ``items[begin:end]``, cumulated (int64, ``end - begin + 1``, from 0), or
    ``None`` when an item is neither bytes nor a compact str (pack those through Python):
    ``byte_bounds(("ab", "中"), 0, 2, text_layout())`` -> ``[0, 2, 5]``."""
    bounds = np.empty(end - begin + 1, dtype=np.int64)
    if not kernels.text_byte_bounds(id(items) + kernels.TUPLE_ITEMS_OFFSET, begin, end, layout, bounds):
        return None
    return bounds


def pack_items(items: tuple, begin: int, end: int, layout: np.ndarray,
               bounds: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """``items[begin:end]`` packed (``(data uint8, offsets int64)``, str as UTF-8, bytes as they are), or ``None``
    when one cannot be packed here (not bytes or a compact str, or an unpaired surrogate: Python's packing then
    says which). ``bounds``: their :func:`byte_bounds`, when the caller has them. ``items`` must stay alive and be
    a tuple (immutable: the kernels read it without the GIL)."""
    if bounds is None:
        bounds = byte_bounds(items, begin, end, layout)
        if bounds is None:
            return None
    data = np.empty(int(bounds[-1] - bounds[0]), dtype=np.uint8)
    offsets = np.empty(end - begin + 1, dtype=np.int64)
    size = kernels.pack_text_items(id(items) + kernels.TUPLE_ITEMS_OFFSET, begin, end, layout, data, offsets)
    if size < 0:
        return None
    return data[:size], offsets
