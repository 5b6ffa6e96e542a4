"""The ``Tokenizer`` API: argument checks and buffer management around the kernels in :mod:`tokenizer.kernels`.

    >>> from tokenizer import Model, Tokenizer
    >>> tok = Tokenizer(Model.byte_level([b"ab", b"abc"], [-1.0, -1.5]))
    >>> tok.encode("abcab")          # "abc" (256 + 1) then "ab" (256)
    [257, 256]
    >>> tok.decode([257, 256])
    'abcab'

A ``Tokenizer`` pickles as its :class:`~tokenizer.model.Model` alone (what a Spark broadcast needs); the compiled
arrays (double array, scores, byte table) are rebuilt lazily on first use in each process.

Null entries of an Arrow input stay null in the output. ``decode`` replaces invalid UTF-8 with U+FFFD (Python's
``errors="replace"``: one U+FFFD per maximal invalid subsequence, which may differ from SentencePiece's count);
``decode_bytes`` is the lossless inverse.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING, Any, Iterable, Sequence, overload

import numpy as np

from tokenizer.errors import InputError, InvalidIdError
from tokenizer.loading import load_model_file
from tokenizer.sampling import encode_sampled
from tokenizer.vocabulary import piece_bytes_of, vocab_of
from tokenizer.model import Model, PieceType
from tokenizer.piece_types import byte_piece_value
from tokenizer.special_tokens import (SpecialSet, check_disallowed, model_matching, resolve_allowed,
                                      special_tokens_of)

if TYPE_CHECKING:
    import pyarrow

    from tokenizer.compiled import CompiledModel

__all__ = ["Tokenizer", "InvalidIdError"]

UNBUILT = object()  # a lazy part not built yet (None is a built value: a model without added tokens has no splitter)
#: the attributes :meth:`Tokenizer._built` fills on first use
LAZY_PARTS = ("_compiled", "_normalizer", "_splitter", "_decode_table", "_piece_bytes", "_piece_lengths",
              "_special_tokens", "_special_ids")


class Tokenizer:
    """Encode text to ids and decode ids to text with a :class:`~tokenizer.model.Model`.

    ``Tokenizer(model)`` or ``Tokenizer.load(path)`` (a shardpiece model, a SentencePiece ``.model``, a BytePiece
    JSON, a Hugging Face ``tokenizer.json`` or the folder holding one). Thread-safe: each lazy part (compiled
    arrays, normalizer, added-token splitter, decode tables, per-call encoder) is built once, under a lock, and is
    read-only afterwards.
    """

    def __init__(self, model: Model):
        if not isinstance(model, Model):
            raise TypeError(f"Tokenizer(model) needs a tokenizer.Model, not {type(model).__name__}; "
                            "to read a file use Tokenizer.load(path)")
        self.model = model
        self._lock = threading.RLock()  # (re-entrant: building the splitter builds the normalizer)
        for name in LAZY_PARTS:
            setattr(self, name, UNBUILT)
        self._encode_plain = None  # built by _plain_encoder on first encode()
        self._matching: dict[frozenset[int], Tokenizer] = {}  # allowed_special ids -> a tokenizer that cuts them
        self._disallowed_patterns: dict = {}

    # ------------------------------------------------------------------ construction, pickling
    @classmethod
    def load(cls, path: str | os.PathLike) -> "Tokenizer":
        """Read a model file, detecting its format by content: shardpiece (magic bytes), a Hugging Face
        ``tokenizer.json``, a BytePiece JSON or a SentencePiece ``.model`` (protobuf); a folder is read through the
        ``tokenizer.json`` in it (a Hugging Face tokenizer folder, as ``export --to huggingface`` writes).
        ``Tokenizer.load("out/hf")`` reads ``out/hf/tokenizer.json``."""
        return cls(load_model_file(path))

    def __reduce__(self):
        return (Tokenizer, (self.model,))

    def save(self, path: str | os.PathLike) -> None:
        """Write the model as a shardpiece model file (atomically)."""
        self.model.save(path)

    def _built(self, name: str, build) -> Any:
        """The lazy part ``name`` (one of :data:`LAZY_PARTS`): read without the lock once built; built at most
        once, by ``build()`` under the lock, however many threads ask first."""
        value = getattr(self, name)
        if value is UNBUILT:
            with self._lock:
                value = getattr(self, name)
                if value is UNBUILT:
                    value = build()
                    setattr(self, name, value)
        return value

    @property
    def compiled(self) -> CompiledModel:
        return self._built("_compiled", self._build_compiled)

    def _build_compiled(self) -> CompiledModel:
        from tokenizer.compiled import CompiledModel  # (here: decoding needs no Numba)

        return CompiledModel(self.model)

    @property
    def normalizer(self):
        return self._built("_normalizer", self._build_normalizer)

    def _build_normalizer(self):
        from tokenizer.normalizers import for_model

        return for_model(self.model)

    @property
    def added_token_splitter(self):
        """The :class:`~tokenizer.added_tokens.AddedTokenSplitter` of the model's added tokens, or None."""
        return self._built("_splitter", self._build_splitter)

    def _build_splitter(self):
        from tokenizer.added_tokens import AddedTokenSplitter, added_tokens_of

        tokens = added_tokens_of(self.model)
        return AddedTokenSplitter(tokens, self.normalizer) if tokens else None

    # ------------------------------------------------------------------ vocabulary
    @property
    def vocab_size(self) -> int:
        return self.model.vocab_size

    @property
    def bos_id(self) -> int:
        return self.model.bos_id

    @property
    def eos_id(self) -> int:
        return self.model.eos_id

    @property
    def unk_id(self) -> int:
        return self.model.unk_id

    @property
    def pad_id(self) -> int:
        return self.model.pad_id

    def __len__(self) -> int:
        """The number of ids, ``vocab_size`` (as ``len()`` of a Hugging Face tokenizer)."""
        return self.model.vocab_size

    def id_to_piece(self, i: int) -> bytes:
        """The piece's bytes as stored (BYTE pieces in their ``<0xAB>`` text form, "▁" as stored)."""
        self._check_id(i)
        return self.model.pieces[int(i)]

    def piece_to_id(self, piece: bytes | str) -> int | None:
        """Id of ``piece`` (bytes as stored, or str encoded as UTF-8), or ``None`` when it is not in the vocabulary
        (as ``tokenizers``' ``token_to_id``). ``piece_to_id(b"<0x41>")`` is a byte-fallback piece's id."""
        if isinstance(piece, str):
            piece = piece.encode("utf-8")
        if not isinstance(piece, (bytes, bytearray, memoryview)):
            raise TypeError(f"piece_to_id accepts bytes or str, not {type(piece).__name__}")
        found = self.model.piece_to_id(bytes(piece))
        return found if found >= 0 else None

    def id_to_bytes(self, i: int) -> bytes:
        """The bytes id ``i`` contributes to :meth:`decode_bytes` within a text: a byte-fallback piece ``<0xAB>``
        gives ``b"\\xab"``, a SentencePiece-style piece its text with "▁" as a space (``"▁the"`` -> ``b" the"``;
        decoding drops the dummy-prefix space of a text's first piece), a control token what decode gives it
        (nothing natively, an imported model's added token its content), the unknown piece the model's surface
        (`` ⁇ `` for SentencePiece models). For every byte-level model
        ``decode_bytes(ids) == b"".join(map(tok.id_to_bytes, ids))``."""
        self._check_id(i)
        return self.piece_bytes[int(i)]

    @property
    def piece_bytes(self) -> list[bytes]:
        """:meth:`id_to_bytes` of every id, by id (built once)."""
        return self._built("_piece_bytes", self._build_piece_bytes)

    def _build_piece_bytes(self) -> list[bytes]:
        return piece_bytes_of(self.model, self.decode_table, self.normalizer)

    def get_vocab(self) -> dict[bytes, int]:
        """``{bytes: id}``: each piece's bytes as :meth:`id_to_bytes` gives them. Ids that contribute no bytes
        (control tokens, natively) are left out: they are in :attr:`special_tokens`. Where ids give the same bytes
        (a byte-fallback ``<0x41>`` and a piece ``A``), the one that is no BYTE piece is kept, then the lowest id.
        A byte-level model with piece 256 = ``b"ab"``: ``get_vocab()[b"ab"] == 256`` and ``get_vocab()[b"a"] == 97``."""
        return vocab_of(self.model, self.piece_bytes)

    @property
    def special_tokens(self) -> dict[str, int]:
        """``{text: id}`` of the special tokens ``allowed_special`` / ``disallowed_special`` name (control pieces,
        the unknown piece, an imported model's special added tokens): ``{"<s>": 1, "</s>": 2}``."""
        return dict(self._built("_special_tokens", lambda: special_tokens_of(self.model)))

    @property
    def special_ids(self) -> frozenset[int]:
        """Ids ``skip_special_tokens=True`` leaves out: every CONTROL and UNKNOWN piece and special added token."""
        return self._built("_special_ids", self._build_special_ids)

    def _build_special_ids(self) -> frozenset[int]:
        kinds = self.model.types
        found = set(np.flatnonzero((kinds == PieceType.CONTROL) | (kinds == PieceType.UNKNOWN)).tolist())
        return frozenset(found | set(self.special_tokens.values()))

    def _check_id(self, i: Any) -> None:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise InvalidIdError(f"ids must be integers, got {i!r} ({type(i).__name__})")
        if not 0 <= i < self.vocab_size:
            raise InvalidIdError(f"id {int(i)} is out of range: the vocabulary has {self.vocab_size} ids "
                                 f"(0..{self.vocab_size - 1}); was the ids made with another model?")

    # ------------------------------------------------------------------ encoding
    def _to_bytes(self, text: Any) -> bytes:
        if isinstance(text, str):
            try:
                return text.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InputError(
                    f"text has an unpaired surrogate at index {exc.start} and cannot be UTF-8 encoded: fix the "
                    "text, or pass bytes (e.g. text.encode('utf-8', 'surrogatepass'))"
                ) from None
        if isinstance(text, (bytes, bytearray, memoryview)):
            return bytes(text)
        raise TypeError(f"encode accepts str or bytes (UTF-8 or any bytes for identity models), "
                        f"not {type(text).__name__}")

    def _special(self, add: bool, which: str) -> int:
        if not add:
            return -1
        value = getattr(self.model, f"{which}_id")
        if value < 0:
            raise InputError(f"add_{which}=True but the model has no {which} piece: train or build the model "
                             f"with one (e.g. specials=('<s>', '</s>')), or pass add_{which}=False")
        return value

    def encode(self, text: str | bytes, *, allowed_special: SpecialSet = frozenset(),
               disallowed_special: SpecialSet = (), add_bos: bool = False, add_eos: bool = False,
               alpha: float | None = None, dropout: float | None = None, seed: int | None = None) -> list[int]:
        """Ids of ``text``. ``alpha`` (unigram models) samples a segmentation with probability proportional to
        ``exp(alpha * score)``; ``dropout`` (SentencePiece-style BPE models; byte-level ones refuse it) skips each
        merge with that probability; ``seed`` makes either reproducible. Without them the result is the
        deterministic best segmentation.

        Special tokens (:attr:`special_tokens`) spelled in the text are ordinary text unless ``allowed_special``
        (``"all"`` or a set of their texts) names them; ``disallowed_special`` (``"all"``: every special token not
        allowed, or a set) raises :class:`~tokenizer.errors.DisallowedSpecialError` when the text spells one, as
        tiktoken does (whose default is ``"all"``; here ``()``, see :mod:`tokenizer.special_tokens`). With ``<s>``
        = 257: ``encode("a<s>", allowed_special={"<s>"})`` ends with 257, ``encode("a<s>")`` spells it."""
        if alpha is None and dropout is None and seed is None and not allowed_special and not disallowed_special:
            # the per-call fast path: no set-up, one kernel call
            encode_plain = self._encode_plain or self._plain_encoder()
            if text.__class__ is str:
                try:
                    data = text.encode()
                except UnicodeEncodeError:
                    data = self._to_bytes(text)  # raises, naming the unpaired surrogate
            else:
                data = self._to_bytes(text)
            return encode_plain(data, self._special(True, "bos") if add_bos else -1,
                                self._special(True, "eos") if add_eos else -1)
        data = self._to_bytes(text)
        tok = self._for_specials(allowed_special, disallowed_special, (data,))
        if alpha is None and dropout is None and seed is None:
            return tok.encode(data, add_bos=add_bos, add_eos=add_eos)
        return tok._encode_sampling(data, add_bos, add_eos, alpha, dropout, seed)

    def _for_specials(self, allowed_special, disallowed_special, texts) -> "Tokenizer":
        """The tokenizer that encodes with ``allowed_special`` cut out of the text (``self`` when nothing is
        allowed), after checking ``texts`` (bytes) for ``disallowed_special``."""
        if disallowed_special:
            for data in texts:
                check_disallowed(self.special_tokens, allowed_special, disallowed_special, data,
                                 self._disallowed_patterns)
        if not allowed_special:
            return self
        allowed = resolve_allowed(self.special_tokens, allowed_special)
        matching = self._matching.get(allowed)
        if matching is None:
            with self._lock:
                matching = self._matching.get(allowed)
                if matching is None:
                    matching = Tokenizer(model_matching(self.model, allowed))
                    # the same compiled arrays and normalizer: the extra tokens are control pieces no text reaches
                    matching._compiled, matching._normalizer = self.compiled, self.normalizer
                    self._matching[allowed] = matching
        return matching

    def _encode_sampling(self, data: bytes, add_bos: bool, add_eos: bool, alpha, dropout, seed) -> list[int]:
        bos, eos = self._special(add_bos, "bos"), self._special(add_eos, "eos")
        raw = data
        if not self.normalizer.is_identity:
            data = self.normalizer.normalize(data)
        compiled = self.compiled
        splitter = self.added_token_splitter
        if alpha is None and dropout is None:
            raise InputError("seed only matters with alpha= (unigram sampling) or dropout= (BPE-dropout)")
        # added tokens are kept as they are; each stretch between them is sampled on its own
        parts = splitter.split(raw) if splitter is not None and splitter.needs_split(raw, data) else [data]
        ids = encode_sampled(compiled, parts, alpha, dropout, seed)
        if bos >= 0:
            ids.insert(0, bos)
        if eos >= 0:
            ids.append(eos)
        return ids

    def _plain_encoder(self):
        """``encode_plain(raw bytes, bos_id, eos_id) -> list[int]`` (normalize, cut added tokens, encode), with the
        normalizer and kernel choices made once (under the lock); kept as ``self._encode_plain``."""
        compiled, normalizer, splitter = self.compiled, self.normalizer, self.added_token_splitter
        with self._lock:
            if self._encode_plain is None:
                self._encode_plain = self._build_plain_encoder(compiled, normalizer, splitter)
        return self._encode_plain

    def _build_plain_encoder(self, compiled, normalizer, splitter):
        from tokenizer.compiled import encode_split

        encode_one = compiled.one_text_encoder()
        normalize, identity = normalizer.normalize, normalizer.is_identity
        if splitter is not None:
            def encode_plain(data, bos_id, eos_id):
                normalized = data if identity else normalize(data)
                if splitter.needs_split(data, normalized):
                    return encode_split(compiled, splitter, data, bos_id, eos_id)
                return encode_one(normalized, bos_id, eos_id)
        elif identity:
            encode_plain = encode_one
        elif hasattr(normalizer, "kernel_parts"):  # a kernel normalizer: it runs in the same compiled call
            from tokenizer.one_text import one_text_encoder

            encode_plain = one_text_encoder(compiled, normalizer)
        elif normalizer.name in ("nfc", "nfkc"):  # ASCII is invariant under both: no call, no copy
            def encode_plain(data, bos_id, eos_id):
                return encode_one(data if data.isascii() else normalize(data), bos_id, eos_id)
        else:
            def encode_plain(data, bos_id, eos_id):
                return encode_one(normalize(data), bos_id, eos_id)
        return encode_plain

    @overload
    def encode_batch(self, texts: "Sequence[str | bytes]", *, num_threads: int | None = ..., add_bos: bool = ...,
                     add_eos: bool = ..., allowed_special: SpecialSet = ...,
                     disallowed_special: SpecialSet = ...) -> list[list[int]]: ...

    @overload
    def encode_batch(self, texts: "pyarrow.Array", *, num_threads: int | None = ..., add_bos: bool = ...,
                     add_eos: bool = ..., allowed_special: SpecialSet = ...,
                     disallowed_special: SpecialSet = ...) -> "pyarrow.Array": ...

    @overload
    def encode_batch(self, texts: "pyarrow.ChunkedArray", *, num_threads: int | None = ..., add_bos: bool = ...,
                     add_eos: bool = ..., allowed_special: SpecialSet = ...,
                     disallowed_special: SpecialSet = ...) -> "pyarrow.ChunkedArray": ...

    def encode_batch(self, texts, *, num_threads: int | None = None, add_bos: bool = False,
                     add_eos: bool = False, allowed_special: SpecialSet = frozenset(),
                     disallowed_special: SpecialSet = ()):
        """Encode many texts; the result's kind follows the input's. A list (or tuple) of str/bytes gives
        ``list[list[int]]`` (``encode_batch(["ab", "b"])`` -> ``[[256], [98]]`` for pieces ``a``, ``b``, ``ab``);
        a pyarrow string, binary (or large_*) Array gives a ``list<int32>`` Array (``large_list<int32>`` past
        2**31 ids) and a ChunkedArray a ChunkedArray. Nulls stay null. ``allowed_special`` /
        ``disallowed_special`` as in :meth:`encode` (each text checked). ``num_threads=None`` uses every core,
        1 the calling thread only; each thread takes a contiguous document range, and one done early part of
        another's. The lists of ids hold no cycles and are built untracked by the cyclic garbage collector, so
        collections after a batch skip them (:mod:`tokenizer.kernels.python_lists`); a list of a few short texts is
        encoded text by text, as :meth:`encode` does (:data:`tokenizer.batching.FEW_TEXTS`)."""
        from tokenizer.batching import encode_arrow, encode_list, pyarrow_if_loaded

        if allowed_special or disallowed_special:
            checked = ()
            if disallowed_special:
                pa = pyarrow_if_loaded()
                items = texts.to_pylist() if pa is not None and isinstance(texts, (pa.Array, pa.ChunkedArray)) \
                    else texts if isinstance(texts, (list, tuple)) else ()
                checked = [self._to_bytes(text) for text in items if text is not None]
            tok = self._for_specials(allowed_special, disallowed_special, checked)
            return tok.encode_batch(texts, num_threads=num_threads, add_bos=add_bos, add_eos=add_eos)
        bos, eos = self._special(add_bos, "bos"), self._special(add_eos, "eos")
        if num_threads is not None and (not isinstance(num_threads, int) or num_threads < 1):
            raise InputError(f"num_threads={num_threads!r} must be a positive int or None (all cores)")
        pa = pyarrow_if_loaded()
        if pa is not None and isinstance(texts, pa.ChunkedArray):
            return pa.chunked_array([self.encode_batch(c, num_threads=num_threads, add_bos=add_bos,
                                                       add_eos=add_eos) for c in texts.chunks],
                                    type=pa.list_(pa.int32()) if texts.num_chunks == 0 else None)
        if pa is not None and isinstance(texts, pa.Array):
            return encode_arrow(self, pa, texts, num_threads, bos, eos)
        if isinstance(texts, (str, bytes)) or not isinstance(texts, (list, tuple)):
            raise TypeError(f"encode_batch accepts a list of str/bytes or a pyarrow string/binary array, not "
                            f"{type(texts).__name__}; for one text use encode()")
        return encode_list(self, texts, num_threads, bos, eos)

    def encode_with_offsets(self, text: str | bytes, *, allowed_special: SpecialSet = frozenset(),
                            disallowed_special: SpecialSet = ()) -> tuple[list[int], list[tuple[int, int]]]:
        """``(ids, spans)``: the ids :meth:`encode` gives and, per id, the ``(start, end)`` of the input it came
        from: character offsets into a ``str``, byte offsets into ``bytes``. See :mod:`tokenizer.offsets` for the
        rules (the spans cover the input in order; a byte piece inside a multi-byte character gets that whole
        character's span, so several ids may share one). With pieces ``a``, ``b``, ``ab``:
        ``encode_with_offsets("abb")`` -> ``([256, 98], [(0, 2), (2, 3)])``."""
        from tokenizer.offsets import encode_with_offsets, piece_lengths

        data = self._to_bytes(text)
        tok = self._for_specials(allowed_special, disallowed_special, (data,))
        return encode_with_offsets(tok, text, data, self._built("_piece_lengths", lambda: piece_lengths(self.model)))

    # ------------------------------------------------------------------ decoding
    @property
    def decode_table(self) -> list[bytes]:
        """The bytes each id joins to before ``denormalize`` (built once)."""
        return self._built("_decode_table", self._build_decode_table)

    def _build_decode_table(self) -> list[bytes]:
        unk_surface = self.model.pretokenizer.get("unk_surface")
        unk_bytes = unk_surface.encode("utf-8") if isinstance(unk_surface, str) else b""
        table = []
        for piece, kind in zip(self.model.pieces, self.model.types.tolist()):
            if kind == PieceType.CONTROL:
                table.append(b"")
            elif kind == PieceType.UNKNOWN:
                table.append(unk_bytes)
            elif kind == PieceType.BYTE:
                table.append(bytes([byte_piece_value(piece)]))
            else:
                table.append(piece)
        splitter = self.added_token_splitter
        for i, content in (splitter.decode_bytes.items() if splitter is not None else ()):
            table[i] = content  # added tokens, special ones included, decode to what they match
        return table

    def decode_bytes(self, ids: Iterable[int], *, skip_special_tokens: bool = False) -> bytes:
        """Lossless inverse of :meth:`encode` (for identity models): NORMAL/USER_DEFINED/UNUSED pieces give their
        bytes, BYTE pieces their byte, CONTROL pieces nothing, UNKNOWN nothing (or the model's ``unk_surface``);
        then the normalizer's ``denormalize``. ``skip_special_tokens=True`` leaves out :attr:`special_ids` first
        (control pieces, the unknown piece, special added tokens), as ``tokenizers``' decode does."""
        table = self.decode_table
        ids = _as_id_list(ids)
        try:
            if ids and (min(ids) < 0 or max(ids) >= len(table)):
                raise IndexError
            if skip_special_tokens:
                special = self.special_ids
                ids = [i for i in ids if i not in special]
            decode_ids = getattr(self.normalizer, "decode_ids", None)
            if decode_ids is not None:  # SentencePiece models: its piece-by-piece Decode rules, exactly
                return decode_ids(ids, self.model.pieces, self.model.types)
            data = b"".join([table[i] for i in ids])
        except (TypeError, IndexError):
            for i in ids:
                self._check_id(i)
            raise
        return self.normalizer.denormalize(data)

    def decode(self, ids: Iterable[int], *, skip_special_tokens: bool = False) -> str:
        """Text of ``ids``; invalid UTF-8 (e.g. a partial byte-fallback sequence) becomes U+FFFD.
        ``skip_special_tokens`` as in :meth:`decode_bytes`."""
        return self.decode_bytes(ids, skip_special_tokens=skip_special_tokens).decode("utf-8", errors="replace")

    def decode_batch(self, batch: Iterable[Iterable[int]], *, skip_special_tokens: bool = False) -> list[str]:
        """:meth:`decode` of each id list: ``decode_batch([[256], [98]])`` -> ``["ab", "b"]``."""
        if isinstance(batch, (str, bytes)):
            raise TypeError("decode_batch takes a list of id lists, not a string")
        return [self.decode(ids, skip_special_tokens=skip_special_tokens) for ids in batch]

    def __repr__(self) -> str:
        return f"Tokenizer({self.model.algorithm}, vocab_size={self.vocab_size})"




def _as_id_list(ids) -> list:
    if isinstance(ids, np.ndarray):
        if ids.dtype.kind not in "iu":
            raise InvalidIdError(f"ids must be integers, got an array of {ids.dtype}")
        return ids.tolist()
    if isinstance(ids, (str, bytes)):
        raise TypeError("decode takes a sequence of int ids, not a string")
    ids = list(ids)
    for i in ids:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
            raise InvalidIdError(f"ids must be integers, got {i!r} ({type(i).__name__})")
    return [int(i) for i in ids]
