"""SentencePiece's normalizer and its decoding rules, reproduced byte for byte.

:class:`SentencePieceNormalizer` does what ``normalizer.cc`` does for a model: the precompiled charsmap (NFKC in
SentencePiece is its own "nmt_nfkc" table, not Python's ``unicodedata``), U+FFFD for each invalid UTF-8 byte,
``remove_extra_whitespaces``, ``add_dummy_prefix``, ``escape_whitespaces`` (space -> U+2581 "▁"),
``treat_whitespace_as_suffix``, and user-defined symbols passed through unnormalized. The work is done by the
kernels of :mod:`tokenizer.kernels.normalize` and the character lookups of :mod:`tokenizer.kernels.charsmap`.

Decoding follows ``SentencePieceProcessor::Decode``: :meth:`SentencePieceNormalizer.decode_pieces` is exact for any
id sequence; :meth:`SentencePieceNormalizer.denormalize` works on already-joined piece bytes and is exact for ids
the encoder produced (see its docstring for the cases only ``decode_pieces`` gets right).

Example (hand-checkable), no charsmap, default flags::

    >>> n = SentencePieceNormalizer()
    >>> n.normalize(b"  Hello   world ").decode()
    '▁Hello▁world'
    >>> n.denormalize("▁Hello▁world".encode())
    b'Hello world'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np

from tokenizer.errors import ModelError
from tokenizer.kernels import charsmap as lookups
from tokenizer.kernels import utf8
from tokenizer.kernels import normalize as kernels
from tokenizer.normalizers.sentencepiece_spec import DEFAULT_UNK_SURFACE, _byte_piece_value, split_charsmap
from tokenizer.normalizers.unicode import Normalizer
from tokenizer.packed import read_only

__all__ = ["DEFAULT_UNK_SURFACE", "SentencePieceNormalizer", "build_symbol_trie", "sentencepiece_utf8_repair",
           "split_charsmap"]

if TYPE_CHECKING:  # pragma: no cover
    from tokenizer.model import Model

SPACE_SYMBOL = "\u2581".encode()
REPLACEMENT_CHARACTER = "\ufffd".encode()
_PIECE_NORMAL, _PIECE_UNKNOWN, _PIECE_CONTROL, _PIECE_USER_DEFINED, _PIECE_UNUSED, _PIECE_BYTE = 1, 2, 3, 4, 5, 6


def build_symbol_trie(symbols: Iterable[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A byte trie of ``symbols`` in CSR form: ``(edge_start int32 [nodes + 1], edge_label uint8, edge_target int32,
    terminal uint8 [nodes])``, node 0 the root, edges of a node sorted by label.

    Example: ``{b"ab"}`` -> nodes root, "a", "ab"; edge_start ``[0, 1, 2, 2]``, labels ``[97, 98]``, targets
    ``[1, 2]``, terminal ``[0, 0, 1]``.
    """
    children: list[dict[int, int]] = [{}]
    terminal = [0]
    for symbol in sorted(set(bytes(s) for s in symbols)):
        if not symbol:
            continue
        node = 0
        for byte in symbol:
            nxt = children[node].get(byte)
            if nxt is None:
                nxt = len(children)
                children[node][byte] = nxt
                children.append({})
                terminal.append(0)
            node = nxt
        terminal[node] = 1
    edge_start = np.zeros(len(children) + 1, dtype=np.int32)
    labels, targets = [], []
    for node, edges in enumerate(children):
        for byte in sorted(edges):
            labels.append(byte)
            targets.append(edges[byte])
        edge_start[node + 1] = len(labels)
    return (edge_start, np.asarray(labels, dtype=np.uint8), np.asarray(targets, dtype=np.int32),
            np.asarray(terminal, dtype=np.uint8))


def sentencepiece_utf8_repair(data: bytes) -> bytes:
    """Each byte that starts no valid UTF-8 character becomes U+FFFD, as SentencePiece's decoder does (one U+FFFD
    per invalid byte, unlike Python's ``errors="replace"``). Example: ``b"a\\xe4\\xb8"`` -> ``"a\\ufffd\\ufffd"``."""
    array = np.frombuffer(bytes(data), dtype=np.uint8)
    out = bytearray()
    position, end = 0, len(array)
    while position < end:
        length = utf8.valid_char_length(array, position, end)
        if length == 0:
            out += REPLACEMENT_CHARACTER
            position += 1
        else:
            out += data[position:position + length]
            position += length
    return bytes(out)


class SentencePieceNormalizer(Normalizer):
    """SentencePiece's normalizer for one model (see the module docstring).

    Args:
        charsmap: the precompiled charsmap blob (``b""``: no character mapping, as SentencePiece's "identity").
        add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces: the model's ``NormalizerSpec`` flags.
        treat_whitespace_as_suffix: the model's ``TrainerSpec`` flag (the dummy space goes at the end).
        user_defined_symbols: pieces of type USER_DEFINED; they pass through unnormalized.
        unk_surface: what the unknown piece decodes to.
    """

    name = "sentencepiece"
    is_identity = False

    def __init__(
        self,
        charsmap: bytes = b"",
        *,
        add_dummy_prefix: bool = True,
        remove_extra_whitespaces: bool = True,
        escape_whitespaces: bool = True,
        treat_whitespace_as_suffix: bool = False,
        user_defined_symbols: Sequence[bytes] = (),
        unk_surface: str = DEFAULT_UNK_SURFACE,
    ):
        self.charsmap = bytes(charsmap)
        self.add_dummy_prefix = bool(add_dummy_prefix)
        self.remove_extra_whitespaces = bool(remove_extra_whitespaces)
        self.escape_whitespaces = bool(escape_whitespaces)
        self.treat_whitespace_as_suffix = bool(treat_whitespace_as_suffix)
        self.user_defined_symbols = tuple(sorted(set(bytes(s) for s in user_defined_symbols)))
        self.unk_surface = str(unk_surface)
        if self.charsmap:
            self._trie, self._replacements = split_charsmap(self.charsmap)
        else:
            self._trie = np.zeros(0, dtype=np.uint32)
            self._replacements = np.zeros(1, dtype=np.uint8)
        self._uds = build_symbol_trie(self.user_defined_symbols)
        self._uds_first_bytes = np.zeros(256, dtype=np.uint8)
        for symbol in self.user_defined_symbols:
            if symbol:
                self._uds_first_bytes[symbol[0]] = 1
        self._plain_chars = np.zeros(0x10000, dtype=np.uint8)
        lookups.build_plain_char_table(self._trie, self._plain_chars)
        self._ascii_pairs = np.zeros(128 * 128, dtype=np.uint8)
        lookups.build_ascii_pair_table(self._trie, self._ascii_pairs)
        self._flags = (
            (kernels.ADD_DUMMY_PREFIX if self.add_dummy_prefix else 0)
            | (kernels.REMOVE_EXTRA_WHITESPACES if self.remove_extra_whitespaces else 0)
            | (kernels.ESCAPE_WHITESPACES if self.escape_whitespaces else 0)
            | (kernels.TREAT_WHITESPACE_AS_SUFFIX if self.treat_whitespace_as_suffix else 0)
        )
        self._max_growth = self._largest_replacement()

    @classmethod
    def from_model(cls, model: "Model") -> "SentencePieceNormalizer":
        """The normalizer a model imported from SentencePiece describes (``model.charsmap`` and its
        ``pretokenizer`` settings; user-defined symbols are its USER_DEFINED pieces)."""
        spec = model.pretokenizer
        if spec.get("name") != "sentencepiece":
            raise ModelError(
                f"model has normalizer {model.normalizer.get('name')!r} with pretokenizer {spec.get('name')!r}: "
                "the SentencePiece normalizer needs pretokenizer 'sentencepiece' (import the model with "
                "tokenizer.interop.sentencepiece.load_sentencepiece)"
            )
        name = model.normalizer.get("name")
        if name not in ("precompiled", "identity"):
            raise ModelError(f"SentencePiece models use normalizer 'precompiled' or 'identity', not {name!r}")
        charsmap = model.charsmap if name == "precompiled" else b""
        user_symbols = [p for p, t in zip(model.pieces, model.types) if int(t) == _PIECE_USER_DEFINED]
        return cls(
            charsmap,
            add_dummy_prefix=spec.get("add_dummy_prefix", True),
            remove_extra_whitespaces=spec.get("remove_extra_whitespaces", True),
            escape_whitespaces=spec.get("escape_whitespaces", True),
            treat_whitespace_as_suffix=spec.get("treat_whitespace_as_suffix", False),
            user_defined_symbols=user_symbols,
            unk_surface=spec.get("unk_surface", DEFAULT_UNK_SURFACE),
        )

    def __reduce__(self):
        return (_rebuild, (self.charsmap, self.add_dummy_prefix, self.remove_extra_whitespaces,
                           self.escape_whitespaces, self.treat_whitespace_as_suffix, self.user_defined_symbols,
                           self.unk_surface))

    def __repr__(self) -> str:
        return (f"SentencePieceNormalizer(charsmap=<{len(self.charsmap)} bytes>, add_dummy_prefix="
                f"{self.add_dummy_prefix}, remove_extra_whitespaces={self.remove_extra_whitespaces}, "
                f"escape_whitespaces={self.escape_whitespaces}, treat_whitespace_as_suffix="
                f"{self.treat_whitespace_as_suffix}, user_defined_symbols={len(self.user_defined_symbols)})")

    # ------------------------------------------------------------------ encoding direction
    def _largest_replacement(self) -> int:
        """Bytes one consumed input unit can grow to at most (after escaping spaces): sizes the output buffer."""
        longest = 4
        if self.charsmap:
            pieces = self._replacements.tobytes().split(b"\x00")
            longest = max(longest, max((len(p) for p in pieces), default=0))
        return 3 * longest

    def _run(self, data: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        data = read_only(data)  # one kernel signature (read-only input) instead of two compilations
        n = len(offsets) - 1
        total = int(offsets[-1] - offsets[0]) if n > 0 else 0
        capacity = 2 * total + 8 * n + 64
        out = np.empty(capacity, dtype=np.uint8)
        out_offsets = np.zeros(n + 1, dtype=np.int64)
        done = 0
        uds = self._uds
        while True:
            done = kernels.normalize_batch_into(data, offsets, done, out, out_offsets, self._trie,
                                                self._replacements, self._plain_chars, self._ascii_pairs, uds[0],
                                                uds[1], uds[2],
                                                uds[3], self._uds_first_bytes, self._flags)
            if done >= n:
                return out[:out_offsets[n]], out_offsets
            # Text `done` did not fit: grow to its worst case (every unit at its largest replacement) or double.
            needed = int(out_offsets[done]) + (int(offsets[done + 1] - offsets[done]) + 2) * self._max_growth
            grown = np.empty(max(needed, 2 * len(out)), dtype=np.uint8)
            grown[:out_offsets[done]] = out[:out_offsets[done]]
            out = grown

    def normalize(self, data: bytes) -> bytes:
        """Normalized bytes of one text, exactly as SentencePiece's ``Normalizer::Normalize``.

        Any bytes are accepted: each invalid UTF-8 byte becomes U+FFFD (as SentencePiece does; that is lossy, so
        use a model without this normalizer for arbitrary binary data).
        """
        array = np.frombuffer(bytes(data), dtype=np.uint8)
        out, _ = self._run(array, np.array([0, len(array)], dtype=np.int64))
        return out.tobytes()

    def kernel_parts(self) -> tuple:
        """``(kernel, tables)`` for callers that run the normalizer kernel on their own buffers (per-call encoding):
        ``kernel(data, offsets, first_text, out, out_offsets, *tables)`` is
        :func:`tokenizer.kernels.normalize.normalize_batch_into` (``data`` read-only uint8)."""
        return kernels.normalize_batch_into, (self._trie, self._replacements, self._plain_chars, self._ascii_pairs,
                                              *self._uds, self._uds_first_bytes, self._flags)

    def normalize_batch(self, data: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Normalize texts packed Arrow-style: ``data`` uint8, ``offsets`` int64 (n + 1); returns the same layout
        (``offsets`` then start at 0)."""
        data = np.ascontiguousarray(data, dtype=np.uint8)
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        if len(offsets) == 0:
            raise ValueError("offsets must have n + 1 entries (at least [0])")
        return self._run(data, offsets)

    # ------------------------------------------------------------------ decoding direction
    def _strips_bos_space(self) -> bool:
        return self.add_dummy_prefix or self.remove_extra_whitespaces

    def denormalize(self, data: bytes) -> bytes:
        """Text bytes for the joined bytes of decoded pieces: one leading "▁" dropped when the model adds a dummy
        prefix (all leading ones when it removes extra whitespace), every "▁" -> space, each invalid UTF-8 byte ->
        U+FFFD.

        Exact for ids the encoder produced. SentencePiece decodes piece by piece, so for hand-made id sequences
        (a leading "▁" that came from byte pieces, a piece of several "▁" at the start, byte runs split by a
        control piece, ...) use :meth:`decode_pieces`, which sees the piece boundaries.
        """
        data = bytes(data)
        if self._strips_bos_space() and data.startswith(SPACE_SYMBOL):
            data = data[len(SPACE_SYMBOL):]
            if self.remove_extra_whitespaces:  # SentencePiece strips one "▁" per piece while the text is empty
                while data.startswith(SPACE_SYMBOL):
                    data = data[len(SPACE_SYMBOL):]
        return sentencepiece_utf8_repair(data.replace(SPACE_SYMBOL, b" "))

    def decode_pieces(self, pieces: Sequence[bytes], types: Sequence[int]) -> bytes:
        """UTF-8 text of a sequence of pieces, exactly as ``SentencePieceProcessor::Decode``.

        ``pieces[i]`` is the piece's bytes as stored in the model (``b"<0xE4>"`` for BYTE pieces) and ``types[i]``
        its :class:`~tokenizer.model.PieceType` value. CONTROL -> nothing; UNKNOWN -> ``unk_surface``; runs of BYTE
        pieces -> their bytes with each invalid UTF-8 byte as U+FFFD ("▁" in them stays "▁"); other pieces ->
        "▁" replaced by space, the first "▁" of the text dropped (all leading ones with remove_extra_whitespaces).

        Example: pieces ``[b"\\xe2\\x96\\x81a", b"<0xE4>", b"<s>"]``, types ``[1, 6, 3]`` -> ``b"a\\xef\\xbf\\xbd"``.
        """
        if len(pieces) != len(types):
            raise ValueError(f"{len(pieces)} pieces but {len(types)} types: pass one type per piece")
        text = bytearray()
        pending = bytearray()
        is_bos_ws = True
        bos_ws_seen = False
        unk_surface = self.unk_surface.encode()
        for piece, kind in zip(pieces, types):
            kind = int(kind)
            if kind == _PIECE_BYTE:
                value = _byte_piece_value(piece)
                if value < 0:
                    raise ModelError(f"BYTE piece {piece!r} is not of the form <0xAB>")
                pending.append(value)
                continue
            if pending:
                text += sentencepiece_utf8_repair(bytes(pending))
                pending.clear()
            if bos_ws_seen or text:
                is_bos_ws = False
            if kind == _PIECE_CONTROL:
                decoded, bos_ws_seen = b"", False
            elif kind == _PIECE_UNKNOWN:
                decoded, bos_ws_seen = unk_surface, False
            else:
                piece = bytes(piece)
                has_bos_ws = False
                if is_bos_ws and self._strips_bos_space():
                    if piece.startswith(SPACE_SYMBOL):
                        piece = piece[len(SPACE_SYMBOL):]
                        has_bos_ws = True
                    if self.remove_extra_whitespaces:
                        has_bos_ws = False
                decoded, bos_ws_seen = piece.replace(SPACE_SYMBOL, b" "), has_bos_ws
            text += decoded
        if pending:
            text += sentencepiece_utf8_repair(bytes(pending))
        return bytes(text)

    def decode_ids(self, ids: Sequence[int], pieces: Sequence[bytes], types: np.ndarray) -> bytes:
        """UTF-8 text of ``ids`` for a model's ``pieces`` and ``types`` (int8 array), exactly as
        :meth:`decode_pieces` (SentencePiece's Decode), with a fast path for sequences without BYTE pieces: the
        leading pieces follow the piece-by-piece rules until the text is non-empty, the rest is joined at once.

        Example: with pieces ``[b"<unk>", b"\xe2\x96\x81a", b"b"]`` (types 2, 1, 1), ids ``[1, 2, 1]`` -> ``b"ab a"``.
        """
        ids = [int(i) for i in ids]
        kinds = np.asarray(types)[np.asarray(ids, dtype=np.int64)] if ids else np.zeros(0, np.int8)
        if np.any(kinds == _PIECE_BYTE) or SPACE_SYMBOL in self.unk_surface.encode():
            return self.decode_pieces([pieces[i] for i in ids], kinds)
        text = bytearray()
        bos_ws_seen = False
        position = 0
        while position < len(ids) and not text and not bos_ws_seen:
            i = ids[position]
            piece, kind = pieces[i], int(kinds[position])
            position += 1
            if kind == _PIECE_CONTROL:
                continue
            if kind == _PIECE_UNKNOWN:
                text += self.unk_surface.encode()
                continue
            if self._strips_bos_space() and piece.startswith(SPACE_SYMBOL):
                piece = piece[len(SPACE_SYMBOL):]
                bos_ws_seen = not self.remove_extra_whitespaces
            text += piece.replace(SPACE_SYMBOL, b" ")
        if position < len(ids):
            unk_surface = self.unk_surface.encode()
            rest = [b"" if k == _PIECE_CONTROL else unk_surface if k == _PIECE_UNKNOWN else pieces[i]
                    for i, k in zip(ids[position:], kinds[position:].tolist())]
            text += b"".join(rest).replace(SPACE_SYMBOL, b" ")
        return bytes(text)


def _rebuild(charsmap, add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces, treat_whitespace_as_suffix,
             user_defined_symbols, unk_surface) -> SentencePieceNormalizer:
    return SentencePieceNormalizer(
        charsmap, add_dummy_prefix=add_dummy_prefix, remove_extra_whitespaces=remove_extra_whitespaces,
        escape_whitespaces=escape_whitespaces, treat_whitespace_as_suffix=treat_whitespace_as_suffix,
        user_defined_symbols=user_defined_symbols, unk_surface=unk_surface,
    )
