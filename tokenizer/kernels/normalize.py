"""Numba kernels of SentencePiece's normalizer (``normalizer.cc``).

The precompiled charsmap is a Darts-clone double array (``trie``: uint32 units) whose leaf values index a blob of
NUL-terminated replacement strings (``replacements``: uint8). At each position the normalizer takes, in order:

1. the longest user-defined symbol starting there (copied unchanged), from a small trie given as CSR arrays
   ``uds_edge_start`` (int32, nodes + 1), ``uds_edge_label`` (uint8), ``uds_edge_target`` (int32),
   ``uds_terminal`` (uint8, nodes); node 0 is the root;
2. else the longest charsmap key starting there, replaced by its string (possibly empty);
3. else one valid UTF-8 character (copied), or one invalid byte, replaced by U+FFFD (EF BF BD).

Around that loop: leading whitespace is dropped and runs of spaces collapse (``remove_extra_whitespaces``), a space
symbol is put in front (``add_dummy_prefix``; at the end with ``treat_whitespace_as_suffix``), spaces become U+2581
(E2 96 81, ``escape_whitespaces``) and trailing space symbols are dropped.

Example (hand-checkable), no charsmap, default flags: ``b"  Hello   world "`` -> ``"▁Hello▁world".encode()``.

The kernels write into a caller-provided buffer and report when it is too small (they never allocate). The character
lookups they use (longest charsmap and user-symbol matches, the fast-path tables) are in
:mod:`tokenizer.kernels.charsmap`, the UTF-8 decoder in :mod:`tokenizer.kernels.utf8`; the pure-Python twins in
:mod:`tokenizer.twins.normalize`.
"""

from __future__ import annotations

import numpy as np

from tokenizer.kernels import kernel
from tokenizer.kernels.charsmap import charsmap_longest_match, user_symbol_longest_match
from tokenizer.kernels.utf8 import decode_char, valid_char_length

# Flag bits of the ``flags`` argument.
ADD_DUMMY_PREFIX = 1
REMOVE_EXTRA_WHITESPACES = 2
ESCAPE_WHITESPACES = 4
TREAT_WHITESPACE_AS_SUFFIX = 8

_SOURCE_TEXT, _SOURCE_REPLACEMENTS, _SOURCE_FFFD = 0, 1, 2


@kernel
def _normalize_prefix(text, position, end, trie, replacements, uds_edge_start, uds_edge_label, uds_edge_target,
                      uds_terminal):
    """SentencePiece's ``NormalizePrefix``: ``(source, start, length, consumed)`` of the piece at ``position``."""
    if uds_edge_start.shape[0] > 2:
        matched = user_symbol_longest_match(uds_edge_start, uds_edge_label, uds_edge_target, uds_terminal,
                                            text, position, end)
        if matched > 0:
            return _SOURCE_TEXT, position, matched, matched
    length, value = charsmap_longest_match(trie, text, position, end)
    if length > 0:
        stop = value
        limit = replacements.shape[0]
        while stop < limit and replacements[stop] != 0:
            stop += 1
        return _SOURCE_REPLACEMENTS, value, stop - value, length
    char_length = valid_char_length(text, position, end)
    if char_length == 0:
        return _SOURCE_FFFD, 0, 3, 1
    return _SOURCE_TEXT, position, char_length, char_length


@kernel
def _source_byte(source, index, text, replacements):
    if source == _SOURCE_TEXT:
        return text[index]
    if source == _SOURCE_REPLACEMENTS:
        return replacements[index]
    if index == 0:
        return np.uint8(0xEF)
    if index == 1:
        return np.uint8(0xBF)
    return np.uint8(0xBD)


@kernel(inline="always")
def _emit_space(out, o, escape):
    """Write one (already capacity-checked) space at ``out[o]``: U+2581 when ``escape``, else a plain space;
    returns the new ``o``."""
    if escape:
        out[np.uint64(o)] = 0xE2
        out[np.uint64(o + 1)] = 0x96
        out[np.uint64(o + 2)] = 0x81
        return o + 3
    out[np.uint64(o)] = 32
    return o + 1


@kernel(inline="always")
def _emit_span(source, start, length, out, o, escape, is_prev_space):
    """Append ``source[start:start + length]`` to ``out`` at ``o`` as the normalizer does with one prefix's
    output: leading spaces dropped while ``is_prev_space``, spaces escaped to U+2581 when ``escape``. Returns
    ``(new o, is_prev_space)``; ``o`` is -1 when ``out`` is too small."""
    first = 0
    if is_prev_space:
        while first < length and source[start + first] == 32:
            first += 1
    if first >= length:
        return o, is_prev_space
    if o + 3 * (length - first) > out.shape[0]:
        return -1, is_prev_space
    for k in range(start + first, start + length):
        byte = source[k]
        if byte == 32:
            o = _emit_space(out, o, escape)
        else:
            out[o] = byte
            o += 1
    return o, source[start + length - 1] == 32


@kernel(inline="always")
def _plain_ascii_run(text, position, end, out, o, plain_chars, ascii_pairs, uds_first_bytes, has_symbols, escape,
                     remove_extra, is_prev_space):
    """Write the plain ASCII byte at ``text[position]`` (``out`` has room for 3 bytes at ``o``) and the plain ASCII
    bytes after it (``ascii_pairs`` given the next byte, else ``plain_chars``, marks them, and no user-defined
    symbol starts with them), spaces included, as the normalizer's steps 2 and 3 do, while ``out`` has room for 3
    more bytes; the text's last byte is left to the caller. Returns ``(position, o, is_prev_space)`` after them.
    No branch depends on the bytes but the run's end: each byte writes three (U+2581 if it is an escaped space;
    the two after a plain byte are overwritten by the next) and moves ``o`` by 0 (a collapsed space), 1 or 3.
    ``b"a b"`` with escaping: ``a``, then ``E2 96 81`` (``o`` + 3), then ``b`` is the caller's."""
    capacity = out.shape[0]
    lead = 0xE2 if escape else 32
    space_width = 3 if escape else 1
    c = np.int64(text[np.uint64(position)])
    while True:
        space = c == 32
        out[np.uint64(o)] = lead if space else c
        out[np.uint64(o + 1)] = 0x96
        out[np.uint64(o + 2)] = 0x81
        o += 0 if space and is_prev_space else (space_width if space else 1)
        is_prev_space = space and remove_extra
        position += 1
        if position + 1 >= end or o + 3 > capacity:
            break  # the text's last byte is left to the caller: here the next byte is always there
        c = np.int64(text[np.uint64(position)])
        if c >= 0x80 or (has_symbols and uds_first_bytes[np.uint64(c)] != 0):
            break
        following = np.int64(text[np.uint64(position + 1)])
        if following < 0x80:
            if ascii_pairs[np.uint64(c * 128 + following)] == 0:
                break
        elif plain_chars[np.uint64(c)] == 0:
            break
    return position, o, is_prev_space


@kernel
def normalize_into(text, start, end, out, out_position, trie, replacements, plain_chars, ascii_pairs,
                   uds_edge_start, uds_edge_label, uds_edge_target, uds_terminal, uds_first_bytes, flags):
    """Normalize ``text[start:end]`` (uint8) into ``out`` (uint8) from ``out_position``.

    Returns the end position of the output in ``out``, or -1 when ``out`` is too small (nothing else is promised
    about ``out`` then: retry with a larger buffer). ``flags`` combines ADD_DUMMY_PREFIX, REMOVE_EXTRA_WHITESPACES,
    ESCAPE_WHITESPACES and TREAT_WHITESPACE_AS_SUFFIX. ``plain_chars`` is :func:`build_plain_char_table` of
    ``trie`` (a shortcut: characters marked there are copied without walking the trie), ``ascii_pairs`` is
    :func:`build_ascii_pair_table` of ``trie`` (the same for an ASCII byte given the next one); ``uds_first_bytes``
    (uint8, 256) marks the bytes some user-defined symbol starts with.
    """
    add_dummy = (flags & ADD_DUMMY_PREFIX) != 0
    remove_extra = (flags & REMOVE_EXTRA_WHITESPACES) != 0
    escape = (flags & ESCAPE_WHITESPACES) != 0
    suffix = (flags & TREAT_WHITESPACE_AS_SUFFIX) != 0
    capacity = out.shape[0]
    position = start
    if position >= end:
        return out_position
    if remove_extra:
        while position < end:
            b0 = text[position]
            if b0 < 0x80 and b0 != 32 and plain_chars[b0] and not uds_first_bytes[b0]:
                break  # a plain ASCII character other than space: no leading whitespace left
            source, s, length, consumed = _normalize_prefix(text, position, end, trie, replacements, uds_edge_start,
                                                            uds_edge_label, uds_edge_target, uds_terminal)
            if not (length == 1 and _source_byte(source, s, text, replacements) == 32):
                break
            position += consumed
        if position >= end:
            return out_position
    o = out_position
    if add_dummy and not suffix:
        if o + 3 > capacity:
            return -1
        o = _emit_space(out, o, escape)
    is_prev_space = remove_extra
    has_symbols = uds_edge_start.shape[0] > 2
    has_trie = trie.shape[0] > 0
    while position < end:
        # 0. plain characters (no charsmap key or user-defined symbol starts there) and plain spaces, in one tight
        # loop: the same output steps 2 and 3 give them one at a time. (Indices there are np.uint64, all >= 0:
        # Numba then skips its negative-index wraparound test.)
        while position < end:
            c = np.int64(text[np.uint64(position)])
            if has_symbols and uds_first_bytes[np.uint64(c)] != 0:
                break
            if c < 0x80:
                if plain_chars[np.uint64(c)] == 0 and not (position + 1 < end and text[np.uint64(position + 1)] < 0x80
                                                and ascii_pairs[np.uint64(c * 128 + np.int64(text[np.uint64(position + 1)]))] != 0):
                    break
                if o + 3 > capacity:
                    return -1
                position, o, is_prev_space = _plain_ascii_run(text, position, end, out, o, plain_chars, ascii_pairs,
                                                              uds_first_bytes, has_symbols, escape, remove_extra,
                                                              is_prev_space)
            elif (c & 0xF0) == 0xE0 and position + 2 < end:
                c1 = np.int64(text[np.uint64(position + 1)])
                c2 = np.int64(text[np.uint64(position + 2)])
                cp = ((c & 0x0F) << 12) | ((c1 & 0x3F) << 6) | (c2 & 0x3F)
                if (c1 & 0xC0) != 0x80 or (c2 & 0xC0) != 0x80 or cp < 0x800 or plain_chars[np.uint64(cp)] == 0:
                    break  # (plain_chars marks no surrogate)
                if o + 3 > capacity:
                    return -1
                out[np.uint64(o)] = c
                out[np.uint64(o + 1)] = c1
                out[np.uint64(o + 2)] = c2
                o += 3
                position += 3
                is_prev_space = False
            elif (c & 0xE0) == 0xC0 and position + 1 < end:
                c1 = np.int64(text[np.uint64(position + 1)])
                cp = ((c & 0x1F) << 6) | (c1 & 0x3F)
                if (c1 & 0xC0) != 0x80 or cp < 0x80 or plain_chars[np.uint64(cp)] == 0:
                    break
                if o + 2 > capacity:
                    return -1
                out[np.uint64(o)] = c
                out[np.uint64(o + 1)] = c1
                o += 2
                position += 2
                is_prev_space = False
            else:
                break
        if position >= end:
            break
        b0 = np.int64(text[position])
        char_length = valid_char_length(text, position, end)
        # 1. a user-defined symbol: copied as it is (spaces in it still follow the whitespace rules)
        if has_symbols and uds_first_bytes[b0]:
            matched = user_symbol_longest_match(uds_edge_start, uds_edge_label, uds_edge_target, uds_terminal,
                                                text, position, end)
            if matched > 0:
                o, is_prev_space = _emit_span(text, position, matched, out, o, escape, is_prev_space)
                if o < 0:
                    return -1
                position += matched
                if not remove_extra:
                    is_prev_space = False
                continue
        # 2. the charsmap's longest key, unless the character is known to start none
        match_length = 0
        value = 0
        if has_trie and char_length > 0:
            if char_length == 1:
                plain = plain_chars[b0] != 0
                if not plain and position + 1 < end and text[position + 1] < 0x80:
                    plain = ascii_pairs[b0 * 128 + np.int64(text[position + 1])] != 0
            elif char_length == 2:
                plain = plain_chars[((b0 & 0x1F) << 6) | (np.int64(text[position + 1]) & 0x3F)] != 0
            elif char_length == 3:
                plain = plain_chars[((b0 & 0x0F) << 12) | ((np.int64(text[position + 1]) & 0x3F) << 6)
                                    | (np.int64(text[position + 2]) & 0x3F)] != 0
            else:
                plain = False
            if not plain:
                match_length, value = charsmap_longest_match(trie, text, position, end)
        elif has_trie:
            match_length, value = charsmap_longest_match(trie, text, position, end)
        if match_length > 0:
            stop = value
            limit = replacements.shape[0]
            while stop < limit and replacements[stop] != 0:
                stop += 1
            o, is_prev_space = _emit_span(replacements, value, stop - value, out, o, escape, is_prev_space)
            if o < 0:
                return -1
            position += match_length
        elif char_length == 0:
            # 3a. an invalid byte: U+FFFD, one byte consumed
            if o + 3 > capacity:
                return -1
            out[o] = 0xEF
            out[o + 1] = 0xBF
            out[o + 2] = 0xBD
            o += 3
            is_prev_space = False
            position += 1
        elif b0 == 32:
            # 3b. a plain space
            if not is_prev_space:
                if o + 3 > capacity:
                    return -1
                o = _emit_space(out, o, escape)
                is_prev_space = True
            position += 1
        else:
            # 3c. any other character, copied
            if o + char_length > capacity:
                return -1
            for k in range(char_length):
                out[o + k] = text[position + k]
            o += char_length
            is_prev_space = False
            position += char_length
        if not remove_extra:
            is_prev_space = False
    if remove_extra:
        if escape:
            while (o - out_position >= 3 and out[o - 3] == 0xE2 and out[o - 2] == 0x96 and out[o - 1] == 0x81):
                o -= 3
        else:
            while o - out_position >= 1 and out[o - 1] == 32:
                o -= 1
    if add_dummy and suffix:
        if o + 3 > capacity:
            return -1
        o = _emit_space(out, o, escape)
    return o


#: what :func:`marked_texts` finds: a text that is not valid UTF-8 on its own, texts all valid but with a
#: character not marked, every character marked
TEXTS_INVALID, TEXTS_VALID, TEXTS_MARKED = -1, 0, 1


@kernel(borrows=True)
def marked_texts(data, offsets, marked):
    """Whether the texts ``data[offsets[i]:offsets[i + 1]]`` (``data`` uint8, ``offsets`` int64, n + 1) are each
    valid UTF-8 on its own and every character is ASCII or a BMP code point ``cp`` with ``marked[cp] != 0``
    (``marked``: uint8, 0x10000): :data:`TEXTS_MARKED`, :data:`TEXTS_VALID` (valid, some character not marked,
    astral ones included) or :data:`TEXTS_INVALID` (an invalid byte, or a text starting inside a character). The
    quick "already normalized" check of :mod:`tokenizer.normalizers`, whose ``marked`` table holds the characters
    no normalization of the text can change; it runs without the GIL. The texts are contiguous, so they are each
    valid when all of them together are and every non-empty one starts on a character: one walk over the bytes
    (the common 3-byte characters decoded in line), then one over the starts. Example: with ``marked`` all zero,
    ``b"ab"`` -> 1, ``"é".encode()`` -> 0, and ``"é".encode()`` cut into two texts of one byte -> -1."""
    n = offsets.shape[0] - 1
    if n < 0:
        return TEXTS_MARKED  # (no offsets: no texts)
    position = offsets[0]
    end = offsets[n]
    verdict = TEXTS_MARKED
    while position < end:
        lead = np.int64(data[position])
        if lead < 0x80:
            position += 1
            continue
        if 0xE1 <= lead <= 0xEF and lead != 0xED and position + 2 < end:  # (any continuation bytes are valid)
            second, third = np.int64(data[position + 1]), np.int64(data[position + 2])
            if (second & 0xC0) == 0x80 and (third & 0xC0) == 0x80:
                if marked[((lead & 0x0F) << 12) | ((second & 0x3F) << 6) | (third & 0x3F)] == 0:
                    verdict = TEXTS_VALID
                position += 3
                continue
        cp, length = decode_char(data, position, end)
        if cp < 0:
            return TEXTS_INVALID
        if cp >= 0x10000 or marked[cp] == 0:
            verdict = TEXTS_VALID
        position += length
    for i in range(n):
        if offsets[i] < offsets[i + 1] and (data[offsets[i]] & 0xC0) == 0x80:
            return TEXTS_INVALID
    return verdict


@kernel(borrows=True)
def normalize_batch_into(data, offsets, first_text, out, out_offsets, trie, replacements, plain_chars,
                         ascii_pairs, uds_edge_start, uds_edge_label, uds_edge_target, uds_terminal, uds_first_bytes,
                         flags):
    """Normalize texts ``first_text ..`` of an Arrow-style batch (``data`` uint8, ``offsets`` int64, n + 1).

    Text ``i`` goes to ``out[out_offsets[i]:out_offsets[i + 1]]``; ``out_offsets[first_text]`` must be set by the
    caller. Returns the index of the first text that did not fit in ``out`` (``n`` when all did): grow ``out`` and
    call again from there.
    """
    n = offsets.shape[0] - 1
    for i in range(first_text, n):
        end = normalize_into(data, offsets[i], offsets[i + 1], out, out_offsets[i], trie, replacements, plain_chars,
                             ascii_pairs, uds_edge_start, uds_edge_label, uds_edge_target, uds_terminal,
                             uds_first_bytes, flags)
        if end < 0:
            return i
        out_offsets[i + 1] = end
    return n
