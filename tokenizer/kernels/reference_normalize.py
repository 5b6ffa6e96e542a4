"""Slow, obviously-correct Python twins of SentencePiece's normalizer kernels (:mod:`tokenizer.kernels.charsmap`,
:mod:`tokenizer.kernels.normalize`), for tests: strict UTF-8 decoding, the charsmap walked unit by unit, and the
normalizer's loop written as ``normalizer.cc`` reads.
"""

from __future__ import annotations

from tokenizer.kernels.normalize import (ADD_DUMMY_PREFIX, ESCAPE_WHITESPACES, REMOVE_EXTRA_WHITESPACES,
                                         TREAT_WHITESPACE_AS_SUFFIX)


def reference_utf8_char_length(text: bytes, position: int) -> int:
    """Twin of :func:`tokenizer.kernels.utf8.valid_char_length`, by decoding with Python's strict UTF-8 codec
    (which rejects the same overlong forms, surrogates and code points above U+10FFFF)."""
    for length in (1, 2, 3, 4):
        chunk = text[position:position + length]
        if len(chunk) < length:
            return 0
        try:
            decoded = chunk.decode("utf-8")
        except UnicodeDecodeError:
            continue
        return length if len(decoded) == 1 else 0
    return 0


def reference_all_marked_characters(text: bytes, marked) -> bool:
    """Twin of :func:`all_marked_characters`: decode with Python's strict codec, then look every character up."""
    try:
        decoded = text.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return all(ord(ch) < 0x80 or (ord(ch) < 0x10000 and marked[ord(ch)] != 0) for ch in decoded)


def reference_charsmap_longest_match(trie: list[int], text: bytes, position: int) -> tuple[int, int]:
    """Twin of :func:`charsmap_longest_match`: collects every match as Darts-clone does, keeps the longest."""
    if not trie:
        return 0, 0

    def offset(unit: int) -> int:
        return (unit >> 10) << ((unit & (1 << 9)) >> 6)

    matches = []
    node = offset(trie[0])
    for i in range(position, len(text)):
        node ^= text[i]
        if node >= len(trie) or (trie[node] & ((1 << 31) | 0xFF)) != text[i]:
            break
        unit = trie[node]
        node ^= offset(unit)
        if (unit >> 8) & 1:
            if node >= len(trie):
                break
            matches.append((i + 1 - position, trie[node] & ((1 << 31) - 1)))
    return max(matches) if matches else (0, 0)


def reference_plain_char(trie: list[int], cp: int) -> bool:
    """Twin of one entry of :func:`build_plain_char_table`: the charsmap cannot touch ``chr(cp)`` when no key
    starts with it, i.e. the walk over its bytes ends early and no key is a prefix of it."""
    if 0xD800 <= cp < 0xE000:
        return False
    char = chr(cp).encode()
    if not trie:
        return True
    if reference_charsmap_longest_match(trie, char, 0)[0]:
        return False

    def offset(unit: int) -> int:
        return (unit >> 10) << ((unit & (1 << 9)) >> 6)

    node = offset(trie[0])
    for byte in char:
        node ^= byte
        if node >= len(trie) or (trie[node] & ((1 << 31) | 0xFF)) != byte:
            return True
        node ^= offset(trie[node])
    return False  # every byte matched: longer keys may start with this character


def reference_ascii_pair(trie: list[int], b0: int, b1: int) -> bool:
    """Twin of one entry of :func:`build_ascii_pair_table`: no charsmap key starts with byte ``b0`` when ``b1``
    follows it (no key equals ``b0`` or ``b0 b1``, and no longer key starts with ``b0 b1``)."""
    if not trie:
        return True
    pair = bytes([b0, b1])
    if reference_charsmap_longest_match(trie, pair, 0)[0]:
        return False

    def offset(unit: int) -> int:
        return (unit >> 10) << ((unit & (1 << 9)) >> 6)

    node = offset(trie[0])
    for byte in pair:
        node ^= byte
        if node >= len(trie) or (trie[node] & ((1 << 31) | 0xFF)) != byte:
            return True
        node ^= offset(trie[node])
    return False


def reference_normalize(text: bytes, charsmap_trie: list[int], replacements: bytes, user_symbols: set[bytes],
                        flags: int) -> bytes:
    """Twin of :func:`normalize_into`, written as directly after ``normalizer.cc`` as Python allows."""
    add_dummy = bool(flags & ADD_DUMMY_PREFIX)
    remove_extra = bool(flags & REMOVE_EXTRA_WHITESPACES)
    escape = bool(flags & ESCAPE_WHITESPACES)
    suffix = bool(flags & TREAT_WHITESPACE_AS_SUFFIX)
    space_symbol = "\u2581".encode()

    def prefix(rest: bytes) -> tuple[bytes, int]:
        symbol = max((s for s in user_symbols if rest.startswith(s)), key=len, default=b"")
        if symbol:
            return symbol, len(symbol)
        length, value = reference_charsmap_longest_match(charsmap_trie, rest, 0)
        if length:
            stop = replacements.find(b"\x00", value)
            return replacements[value:stop if stop >= 0 else len(replacements)], length
        char_length = reference_utf8_char_length(rest, 0)
        if char_length == 0:
            return "\ufffd".encode(), 1
        return rest[:char_length], char_length

    rest = bytes(text)
    if remove_extra:
        while rest:
            piece, consumed = prefix(rest)
            if piece != b" ":
                break
            rest = rest[consumed:]
    if not rest:
        return b""
    ws = space_symbol if escape else b" "
    out = bytearray()
    if add_dummy and not suffix:
        out += ws
    is_prev_space = remove_extra
    while rest:
        piece, consumed = prefix(rest)
        while is_prev_space and piece.startswith(b" "):
            piece = piece[1:]
        if piece:
            out += piece.replace(b" ", space_symbol) if escape else piece
            is_prev_space = piece.endswith(b" ")
        rest = rest[consumed:]
        if not remove_extra:
            is_prev_space = False
    if remove_extra:
        while out.endswith(ws):
            del out[-len(ws):]
    if add_dummy and suffix:
        out += ws
    return bytes(out)
