"""Python ``str`` and ``bytes`` objects packed into UTF-8 by compiled code, without the GIL: the list input of
``encode_batch``, packed by the threads that encode it (each its own range of the texts).

Packing a list of str with pyarrow holds the GIL throughout, so on several threads it ran alone before any range
could start. These kernels read the objects in place instead: a tuple's items (``items`` is the address of its
first item slot, :data:`TUPLE_ITEMS_OFFSET` past the tuple), each a ``str`` in CPython's compact representation
(its characters stored right after the object as 1, 2 or 4 bytes each, the *kind*, or as ASCII) or a ``bytes``
(its bytes after the object). Both are immutable and the caller's tuple keeps them alive, so no lock is needed; a
str's cached UTF-8 copy is never read (another thread may be filling it in). Anything else (a str subclass, a
non-compact str, a bytearray) makes :func:`text_byte_bounds` return False, and a character that UTF-8 cannot
encode (an unpaired surrogate) makes :func:`pack_text_items` return -1: the caller then packs through Python,
which says what is wrong.

The ``layout`` array (int64, :data:`LAYOUT_WORDS`) holds the addresses of the ``str`` and ``bytes`` types and where
the characters of an ASCII str, of another compact str and the bytes of a bytes object start;
:func:`tokenizer.python_texts.text_layout` reads them off this interpreter and checks them on probe texts (no
address is compiled in, so the disk cache stays valid). Twin: :func:`tokenizer.twins.python_texts.ref_pack_texts`.

Example: the items of ``("ab", "é", b"\\xff")`` -> bounds ``[0, 2, 4, 5]`` (at most two bytes per character of a
one-byte kind), packed data ``b"ab\\xc3\\xa9\\xff"``, offsets ``[0, 2, 4, 5]``.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from tokenizer.kernels import kernel
from tokenizer.kernels.one_text import typed_pointer
from tokenizer.kernels.python_lists import word_at

STR_TYPE, BYTES_TYPE, ASCII_DATA, COMPACT_DATA, BYTES_DATA = range(5)
LAYOUT_WORDS = 5
#: where an object holds its type's address, a str its length (characters) and its state bits, a bytes object its
#: size, and a tuple its first item (the same from CPython 3.8 to 3.14, default builds)
TYPE_OFFSET, LENGTH_OFFSET, STATE_OFFSET, BYTES_SIZE_OFFSET, TUPLE_ITEMS_OFFSET = 8, 16, 32, 16, 24
#: the state bits of a str: its kind (1, 2 or 4 bytes per character) at bit 2, compact at bit 5, ASCII at bit 6
KIND_SHIFT, COMPACT_BIT, ASCII_BIT = 2, 1 << 5, 1 << 6


@kernel(inline="always")
def _item_source(item, layout):
    """``(kind, source, length, bound)`` of the object at ``item``: kind 0 for bytes and ASCII str (``length``
    bytes at ``source``, copied as they are), 1, 2 or 4 for another compact str (``length`` characters of that many
    bytes at ``source``), -1 for anything else; ``bound`` is the most its UTF-8 takes (two, three or four bytes per
    character of kind 1, 2 or 4). Example: the str ``"中"`` -> ``(2, its data, 1, 3)``."""
    item_type = word_at(item + TYPE_OFFSET)
    if item_type == layout[BYTES_TYPE]:
        size = word_at(item + BYTES_SIZE_OFFSET)
        return 0, item + layout[BYTES_DATA], size, size
    if item_type != layout[STR_TYPE]:
        return -1, 0, 0, 0
    state = word_at(item + STATE_OFFSET) & 0xFFFFFFFF
    kind = (state >> KIND_SHIFT) & 7
    length = word_at(item + LENGTH_OFFSET)
    if not state & COMPACT_BIT or (kind != 1 and kind != 2 and kind != 4):
        return -1, 0, 0, 0
    if state & ASCII_BIT:
        return 0, item + layout[ASCII_DATA], length, length
    return kind, item + layout[COMPACT_DATA], length, length * (kind + 1 if kind < 4 else 4)


@kernel
def text_byte_bounds(items, begin, end, layout, bounds):
    """For the tuple items ``begin .. end - 1`` (``items``: the address of the first item slot), an upper bound
    of each one's UTF-8 size, cumulated into ``bounds`` (int64, ``end - begin + 1``, from 0): exact for bytes and
    ASCII str, two, three or four bytes per character of a str of kind 1, 2 or 4. False when an item is neither
    bytes nor a compact str (``bounds`` is then partly written).
    Example: items ``("ab", "中", b"")`` -> True, bounds ``[0, 2, 5, 5]``."""
    bounds[0] = 0
    total = np.int64(0)
    for i in range(begin, end):
        kind, _, _, bound = _item_source(word_at(items + 8 * i), layout)
        if kind < 0:
            return False
        total += bound
        bounds[i - begin + 1] = total
    return True


@kernel
def pack_text_items(items, begin, end, layout, data, offsets):
    """UTF-8 of the tuple items ``begin .. end - 1`` (bytes as they are) written one after another into ``data``
    (uint8, at least the last bound of :func:`text_byte_bounds`), their ends into ``offsets`` (int64, ``end -
    begin + 1``, from 0); returns the bytes written, or -1 when a str holds an unpaired surrogate, -2 when an item
    is not what :func:`text_byte_bounds` accepted or would overrun ``data``.
    Example: items ``("ab", "é")`` -> 4, data ``b"ab\\xc3\\xa9"``, offsets ``[0, 2, 4]``."""
    offsets[0] = 0
    at = np.int64(0)
    for i in range(begin, end):
        kind, source, length, bound = _item_source(word_at(items + 8 * i), layout)
        if kind < 0 or at + bound > data.shape[0]:
            return -2
        if kind == 0:
            at = _copy_bytes(source, data, at, length)
        elif kind == 1:
            at = _utf8_of(numba.carray(typed_pointer(source, np.uint8), (length,)), data, at)
        elif kind == 2:
            at = _utf8_of(numba.carray(typed_pointer(source, np.uint16), (length,)), data, at)
        else:
            at = _utf8_of(numba.carray(typed_pointer(source, np.uint32), (length,)), data, at)
        if at < 0:
            return -1
        offsets[i - begin + 1] = at
    return at


@kernel(inline="always")
def _utf8_of(characters, data, at):
    """Write the UTF-8 of ``characters`` (code points, uint8/16/32) into ``data`` from ``at`` (room checked by the
    caller); the new end, or -1 at a surrogate (U+D800 .. U+DFFF).
    Example: ``[0x61, 0x4E2D]`` (uint16) at 0 -> 4, data ``61 E4 B8 AD``."""
    for k in range(characters.shape[0]):
        c = np.int64(characters[k])
        if c < 0x80:
            data[at] = c
            at += 1
        elif c < 0x800:
            data[at] = 0xC0 | (c >> 6)
            data[at + 1] = 0x80 | (c & 0x3F)
            at += 2
        elif c < 0x10000:
            if 0xD800 <= c <= 0xDFFF:
                return np.int64(-1)
            data[at] = 0xE0 | (c >> 12)
            data[at + 1] = 0x80 | ((c >> 6) & 0x3F)
            data[at + 2] = 0x80 | (c & 0x3F)
            at += 3
        else:
            data[at] = 0xF0 | (c >> 18)
            data[at + 1] = 0x80 | ((c >> 12) & 0x3F)
            data[at + 2] = 0x80 | ((c >> 6) & 0x3F)
            data[at + 3] = 0x80 | (c & 0x3F)
            at += 4
    return at


@intrinsic
def _copy_bytes(typingctx, source, data, at, count):
    """Copy ``count`` bytes from the address ``source`` into ``data`` (uint8) from ``at`` (``memcpy``; room checked
    by the caller); the new end ``at + count``."""

    def codegen(context, builder, signature, args):
        target = context.make_array(signature.args[1])(context, builder, args[1]).data
        cgutils.raw_memcpy(builder, builder.gep(target, [args[2]]),
                           builder.inttoptr(args[0], cgutils.voidptr_t), args[3], 1)
        return builder.add(args[2], args[3])

    return types.int64(types.int64, data, types.int64, types.int64), codegen
