"""Where each id of an encoded text came from (``Tokenizer.encode_with_offsets``).

The raw text is cut into units: one UTF-8 character each (an invalid byte is a unit of its own). Normalization is
aligned unit by unit: every normalized byte is traced to the unit it came from, and an id's span runs from the
start of its first byte's unit to the end of its last byte's unit. So the spans cover the text in order; a byte
piece inside a multi-byte character gets that whole character's span (several ids may then share one span); an id
with no bytes (a control token) gets an empty span where it stands; white space a normalizer drops (SentencePiece's
extra white space) belongs to no span (a run of spaces kept as one "▁" is traced to its last space), and a
dummy-prefix "▁" is traced to the first character kept, as ``tokenizers`` aligns them.

What it does not handle exactly: where a normalizer joins characters in a way no grouping of neighbouring units
reproduces, the rest of that stretch of text is one unit, and the ids in it share its span.

Example (hand-checkable): a byte-level model with pieces ``a``, ``b``, ``ab`` (256): ``"abé"`` -> ids
``[256, 0xC3, 0xA9]``, byte spans ``[(0, 2), (2, 4), (2, 4)]``, character spans ``[(0, 2), (2, 3), (2, 3)]``.
"""

from __future__ import annotations

from tokenizer.piece_types import PieceType

SPACE_SYMBOL = "\u2581".encode("utf-8")
#: units a group may join when per-unit normalization does not reproduce the whole text's
LONGEST_GROUP = 8


def char_units(data: bytes) -> list[int]:
    """Byte offsets of the unit boundaries of ``data`` (UTF-8 characters; an invalid byte is one unit), first 0,
    last ``len(data)``: ``char_units("aé".encode()) == [0, 1, 3]``, ``char_units(b"\\xff\\xc3") == [0, 1, 2]``."""
    text = data.decode("utf-8", "surrogateescape")
    bounds, at = [0], 0
    for char in text:
        at += 1 if "\udc80" <= char <= "\udcff" else len(char.encode("utf-8"))
        bounds.append(at)
    return bounds


def _grouped(normalizer, data: bytes, bounds: list[int], whole: bytes) -> list[tuple[int, int, bytes]]:
    """``(raw start, raw end, normalized bytes)`` per group of units, the groups' bytes joining to ``whole`` (what
    ``normalizer`` makes of ``data``): each unit alone where its own normalization (all units in one
    ``normalize_batch`` call) is next in ``whole``, else the fewest following units (up to
    :data:`LONGEST_GROUP`) whose normalization is, else the rest of the text as one group."""
    import numpy as np

    out, offsets = normalizer.normalize_batch(np.frombuffer(data, dtype=np.uint8), np.asarray(bounds, np.int64))
    alone = out.tobytes()
    alone = [alone[offsets[k] - offsets[0]:offsets[k + 1] - offsets[0]] for k in range(len(bounds) - 1)]
    groups, at, i, n = [], 0, 0, len(bounds) - 1
    while i < n:
        for j in range(i + 1, min(n, i + LONGEST_GROUP) + 1):
            part = alone[i] if j == i + 1 else normalizer.normalize(data[bounds[i]:bounds[j]])
            if whole.startswith(part, at) and (j == n or at + len(part) < len(whole) or not part):
                break
        else:
            groups.append((bounds[i], bounds[n], whole[at:]))
            return groups
        groups.append((bounds[i], bounds[j], part))
        at += len(part)
        i = j
    if at != len(whole):  # a group matched too early: fall back to one group holding everything
        return [(bounds[0], bounds[n], whole)]
    return groups


def _sentencepiece_parts(normalizer):
    """``(normalizer without the white-space rules, apply the rules to aligned bytes)`` for a SentencePiece
    normalizer: its charsmap alone, then white space as SentencePiece treats it (leading, repeated and trailing
    spaces dropped with remove_extra_whitespaces, spaces escaped to "▁")."""
    from tokenizer.normalizers.sentencepiece import SentencePieceNormalizer

    charsmap_only = SentencePieceNormalizer(normalizer.charsmap, add_dummy_prefix=False,
                                            remove_extra_whitespaces=False, escape_whitespaces=False,
                                            user_defined_symbols=normalizer.user_defined_symbols)

    symbol_of_space = SPACE_SYMBOL if normalizer.escape_whitespaces else b" "

    def white_space(spans: list[tuple[int, int]], data: bytes):
        out, out_spans, previous_space = bytearray(), [], True
        for byte, span in zip(data, spans):
            space = byte == 0x20
            if space and previous_space and normalizer.remove_extra_whitespaces:
                if out:  # a run keeps one space: its last (as tokenizers' exported Replace aligns it)
                    out_spans[-len(symbol_of_space):] = [span] * len(symbol_of_space)
                continue
            symbol = symbol_of_space if space else bytes([byte])
            out += symbol
            out_spans.extend([span] * len(symbol))
            previous_space = space
        if normalizer.remove_extra_whitespaces:
            while out.endswith(symbol_of_space):
                del out[-len(symbol_of_space):], out_spans[-len(symbol_of_space):]
        return bytes(out), out_spans

    return charsmap_only, white_space


def aligned_normalize(normalizer, data: bytes) -> tuple[bytes, list[tuple[int, int]]]:
    """``(normalized, spans)``: ``normalizer.normalize(data)`` and, per byte of it, the ``(raw start, raw end)``
    of the unit it came from. ``aligned_normalize(Identity(), "aé".encode())`` ->
    ``(b"a\xc3\xa9", [(0, 1), (1, 3), (1, 3)])``."""
    bounds = char_units(data)
    if normalizer.is_identity:
        return data, [(bounds[u], bounds[u + 1]) for u in range(len(bounds) - 1)
                      for _ in range(bounds[u + 1] - bounds[u])]
    whole = normalizer.normalize(data)
    if getattr(normalizer, "charsmap", None) is not None:
        inner, white_space = _sentencepiece_parts(normalizer)
    else:
        inner, white_space = normalizer, None
    groups = _grouped(inner, data, bounds, inner.normalize(data))
    spans = [(start, end) for start, end, part in groups for _ in range(len(part))]
    if white_space is not None:
        mine, spans = white_space(spans, b"".join(part for _, _, part in groups))
        if whole == SPACE_SYMBOL + mine:  # the dummy prefix: part of the first kept unit (as tokenizers' Prepend)
            spans = [spans[0] if spans else (len(data), len(data))] * len(SPACE_SYMBOL) + spans
        elif whole == mine + SPACE_SYMBOL:  # treat_whitespace_as_suffix: part of the last kept unit
            spans = spans + [spans[-1] if spans else (len(data), len(data))] * len(SPACE_SYMBOL)
        elif whole != mine:
            spans = []
    if len(spans) != len(whole):
        spans = [(0, len(data))] * len(whole)
    return whole, spans


def piece_lengths(model) -> list[int]:
    """Normalized bytes each id covers when the segmenter emits it: a NORMAL/USER_DEFINED/UNUSED piece its length,
    a BYTE piece 1, a control piece 0, the unknown piece -1 (it covers whatever the model could not match)."""
    lengths = []
    for piece, kind in zip(model.pieces, model.types.tolist()):
        lengths.append(1 if kind == PieceType.BYTE else 0 if kind == PieceType.CONTROL
                       else -1 if kind == PieceType.UNKNOWN else len(piece))
    return lengths


def _char_length(data: bytes, at: int) -> int:
    """Bytes of the UTF-8 character starting at ``data[at]`` (1 for an invalid byte)."""
    size = 1
    while at + size < len(data) and 0x80 <= data[at + size] < 0xC0 and size < 4:
        size += 1
    return size


def _stretch_spans(ids: list[int], lengths: list[int], table: list[bytes], part: bytes) -> list[tuple[int, int]]:
    """``(start, end)`` in ``part`` (normalized bytes) of each of ``ids``, its encoding: pieces of known length in
    order; an unknown piece covers what the pieces after it leave or, when another unknown piece follows, up to
    the first character where the next piece's bytes (``table``, by id) are found (at least one character)."""
    out, at = [], 0
    for k, i in enumerate(ids):
        size = lengths[i]
        if size < 0:
            rest = [lengths[j] for j in ids[k + 1:]]
            if all(n >= 0 for n in rest):
                size = len(part) - at - sum(rest)
            else:
                end = at + _char_length(part, at)
                if lengths[ids[k + 1]] >= 0:
                    while end < len(part) and not part.startswith(table[ids[k + 1]], end):
                        end += _char_length(part, end)
                size = end - at
        end = min(at + max(size, 0), len(part))
        out.append((at, end))
        at = end
    return out


def encode_with_offsets(tok, text, data: bytes, lengths: list[int]) -> tuple[list[int], list[tuple[int, int]]]:
    """``(ids, spans)`` of ``data`` (the bytes of ``text``) for :meth:`tokenizer.Tokenizer.encode_with_offsets`:
    byte spans when ``text`` is bytes, character spans when it is a str (see the module docstring); ``lengths`` is
    :func:`piece_lengths` of the model."""
    compiled, normalizer, splitter = tok.compiled, tok.normalizer, tok.added_token_splitter
    table = tok.decode_table
    ids: list[int] = []
    spans: list[tuple[int, int]] = []

    def add(token_id: int, start: int, end: int) -> None:
        if end == start:  # no bytes: an empty span where it stands
            start = end = spans[-1][1] if spans else start
        ids.append(token_id)
        spans.append((start, end))

    def add_stretch(raw_start: int, raw: bytes) -> None:
        part, aligned = aligned_normalize(normalizer, raw)
        cuts = [(None, 0, len(part))]
        if splitter is not None and splitter.normalized is not None:
            cuts = [(token_id, _byte_at(part, begin), _byte_at(part, end))
                    for token_id, begin, end in splitter.normalized.find(part.decode("utf-8", "surrogateescape"))]
        for token_id, begin, end in cuts:
            if token_id is not None:
                local = [(token_id, begin, end)]
            elif end > begin:
                stretch_ids = compiled.encode_one(part[begin:end], -1, -1)
                local = [(i, begin + s, begin + e)
                         for i, (s, e) in zip(stretch_ids, _stretch_spans(stretch_ids, lengths, table, part[begin:end]))]
            else:
                local = []
            for i, s, e in local:
                if e > s:
                    add(i, raw_start + aligned[s][0], raw_start + aligned[e - 1][1])
                else:
                    add(i, raw_start, raw_start)

    if splitter is None or splitter.raw is None:
        add_stretch(0, data)
    else:
        decoded = data.decode("utf-8", "surrogateescape")
        for token_id, start, stop in splitter.raw.find(decoded):
            byte_start, byte_stop = _byte_at(data, start), _byte_at(data, stop)
            if token_id is not None:
                add(token_id, byte_start, byte_stop)
            elif stop > start:
                add_stretch(byte_start, data[byte_start:byte_stop])
    if isinstance(text, str):
        char_at = {b: c for c, b in enumerate(char_units(data))}
        spans = [(char_at[s], char_at[e]) for s, e in spans]
    return ids, spans


def _byte_at(data: bytes, char_index: int) -> int:
    """Byte offset in ``data`` of its character ``char_index`` (invalid bytes count as one character each)."""
    return len(data.decode("utf-8", "surrogateescape")[:char_index].encode("utf-8", "surrogateescape"))
