"""Slow, obviously-correct Python twins of SentencePiece's normalizer kernels of :mod:`tokenizer.kernels.normalize`,
for tests: the normalizer's loop written as ``normalizer.cc`` reads, over the charsmap twins of
:mod:`tokenizer.twins.charsmap`.

    >>> ref_normalize(b"  a  b ", [], b"", set(), REMOVE_EXTRA_WHITESPACES | ESCAPE_WHITESPACES)
    b'a\\xe2\\x96\\x81b'
"""

from __future__ import annotations

from tokenizer.kernels.normalize import (ADD_DUMMY_PREFIX, ESCAPE_WHITESPACES, REMOVE_EXTRA_WHITESPACES, TEXTS_INVALID,
                                         TEXTS_MARKED, TEXTS_VALID, TREAT_WHITESPACE_AS_SUFFIX)
from tokenizer.twins.charsmap import ref_charsmap_longest_match
from tokenizer.twins.utf8 import ref_valid_char_length


def ref_marked_texts(texts: list[bytes], marked) -> int:
    """Twin of :func:`tokenizer.kernels.normalize.marked_texts` for the texts as a list: decode each with Python's
    strict codec, then look every character up."""
    try:
        decoded = [text.decode("utf-8") for text in texts]
    except UnicodeDecodeError:
        return TEXTS_INVALID
    every = all(ord(ch) < 0x80 or (ord(ch) < 0x10000 and marked[ord(ch)] != 0) for text in decoded for ch in text)
    return TEXTS_MARKED if every else TEXTS_VALID


def ref_normalize(text: bytes, charsmap_trie: list[int], replacements: bytes, user_symbols: set[bytes],
                  flags: int) -> bytes:
    """Twin of :func:`tokenizer.kernels.normalize.normalize_into`, written as directly after ``normalizer.cc`` as
    Python allows."""
    add_dummy = bool(flags & ADD_DUMMY_PREFIX)
    remove_extra = bool(flags & REMOVE_EXTRA_WHITESPACES)
    escape = bool(flags & ESCAPE_WHITESPACES)
    suffix = bool(flags & TREAT_WHITESPACE_AS_SUFFIX)
    space_symbol = "\u2581".encode()

    def prefix(rest: bytes) -> tuple[bytes, int]:
        symbol = max((s for s in user_symbols if rest.startswith(s)), key=len, default=b"")
        if symbol:
            return symbol, len(symbol)
        length, value = ref_charsmap_longest_match(charsmap_trie, rest, 0)
        if length:
            stop = replacements.find(b"\x00", value)
            return replacements[value:stop if stop >= 0 else len(replacements)], length
        char_length = ref_valid_char_length(rest, 0)
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

