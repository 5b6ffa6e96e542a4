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

import math
import os
import threading
from typing import Any, Iterable

import numpy as np

from tokenizer.batching import encode_arrow, encode_list, pyarrow_if_loaded
from tokenizer.compiled import CompiledModel, byte_piece_value, encode_split
from tokenizer.errors import InputError, ModelFileError
from tokenizer.loading import load_model_bytes
from tokenizer.model import Model, PieceType

class InvalidIdError(InputError, IndexError):
    """An id outside ``0 .. vocab_size - 1`` (or not an integer) was passed to decode / id_to_piece."""


class Tokenizer:
    """Encode text to ids and decode ids to text with a :class:`~tokenizer.model.Model`.

    ``Tokenizer(model)`` or ``Tokenizer.load(path)`` (a shardpiece model, a SentencePiece ``.model`` or a BytePiece
    JSON). Thread-safe: the compiled arrays are read-only once built.
    """

    def __init__(self, model: Model):
        if not isinstance(model, Model):
            raise TypeError(f"Tokenizer(model) needs a tokenizer.Model, not {type(model).__name__}; "
                            "to read a file use Tokenizer.load(path)")
        self.model = model
        self._lock = threading.Lock()
        self._compiled: CompiledModel | None = None
        self._normalizer = None
        self._decode_table: list[bytes] | None = None
        self._splitter = False  # AddedTokenSplitter | None once built (False = not built yet)
        self._encode_plain = None  # built by _plain_encoder on first encode()

    # ------------------------------------------------------------------ construction, pickling
    @classmethod
    def load(cls, path: str | os.PathLike) -> "Tokenizer":
        """Read a model file, detecting its format by content: shardpiece (magic bytes), BytePiece JSON, or a
        SentencePiece ``.model`` (protobuf)."""
        source = os.fspath(path)
        try:
            with open(source, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            raise ModelFileError(source, f"cannot read the file: {exc.strerror}") from None
        return cls(load_model_bytes(data, source))

    def __reduce__(self):
        return (Tokenizer, (self.model,))

    def save(self, path: str | os.PathLike) -> None:
        """Write the model as a shardpiece model file (atomically)."""
        self.model.save(path)

    @property
    def compiled(self) -> CompiledModel:
        if self._compiled is None:
            with self._lock:
                if self._compiled is None:
                    self._compiled = CompiledModel(self.model)
        return self._compiled

    @property
    def normalizer(self):
        if self._normalizer is None:
            from tokenizer.normalizers import for_model

            self._normalizer = for_model(self.model)
        return self._normalizer

    @property
    def added_token_splitter(self):
        """The :class:`~tokenizer.added_tokens.AddedTokenSplitter` of the model's added tokens, or None."""
        if self._splitter is False:
            from tokenizer.added_tokens import AddedTokenSplitter, added_tokens_of

            tokens = added_tokens_of(self.model)
            self._splitter = AddedTokenSplitter(tokens, self.normalizer) if tokens else None
        return self._splitter

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

    def id_to_piece(self, i: int) -> bytes:
        """The piece's bytes as stored (BYTE pieces in their ``<0xAB>`` text form)."""
        self._check_id(i)
        return self.model.pieces[int(i)]

    def piece_to_id(self, piece: bytes | str) -> int:
        """Id of ``piece`` (bytes, or str encoded as UTF-8), or -1 when it is not in the vocabulary."""
        if isinstance(piece, str):
            piece = piece.encode("utf-8")
        if not isinstance(piece, (bytes, bytearray, memoryview)):
            raise TypeError(f"piece_to_id accepts bytes or str, not {type(piece).__name__}")
        return self.model.piece_to_id(bytes(piece))

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

    def encode(self, text: str | bytes, *, add_bos: bool = False, add_eos: bool = False,
               alpha: float | None = None, dropout: float | None = None, seed: int | None = None) -> list[int]:
        """Ids of ``text``. ``alpha`` (unigram models) samples a segmentation with probability proportional to
        ``exp(alpha * score)``; ``dropout`` (BPE models) skips each merge with that probability; ``seed`` makes
        either reproducible. Without them the result is the deterministic best segmentation."""
        if alpha is None and dropout is None and seed is None:  # the per-call fast path: no set-up, one kernel call
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
        ids = self._encode_sampled(compiled, parts, alpha, dropout, seed)
        if bos >= 0:
            ids.insert(0, bos)
        if eos >= 0:
            ids.append(eos)
        return ids

    def _plain_encoder(self):
        """``encode_plain(raw bytes, bos_id, eos_id) -> list[int]`` (normalize, cut added tokens, encode), with the
        normalizer and kernel choices made once; kept as ``self._encode_plain``."""
        compiled, normalizer, splitter = self.compiled, self.normalizer, self.added_token_splitter
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
        self._encode_plain = encode_plain
        return encode_plain

    def _encode_sampled(self, compiled: CompiledModel, parts: list, alpha, dropout, seed) -> list[int]:
        """Sampled ids of ``parts``: normalized stretches (bytes), each sampled with one random stream, and the ids
        of added tokens between them (int), kept."""
        from tokenizer.kernels.random import new_state

        if compiled.byte_level is not None:
            raise InputError("alpha=/dropout= sampling is not available for byte_level (regex pre-split) models")
        if compiled.is_bpe:
            if alpha is not None:
                raise InputError("alpha= samples unigram segmentations; this is a BPE model: use dropout=")
            p = float(dropout)
            if not 0.0 <= p <= 1.0 or math.isnan(p):
                raise InputError(f"dropout={dropout!r} must be a probability in [0, 1]")
            from tokenizer.kernels.batch import bpe_work, piece_bpe_model
            from tokenizer.kernels.bpe import piece_bpe_into

            model, _ = piece_bpe_model(*compiled.record)

            def sample(array, n, rng, out):
                sym, nxt, prv, starts, cand, heap, steps, _, _, memo = bpe_work(*compiled.work_arrays(n))
                return piece_bpe_into(*model, p, rng, array, 0, n, sym, nxt, prv, starts, cand, heap, memo, steps, out,
                                      0)
        else:
            if dropout is not None:
                raise InputError("dropout= applies to BPE models; this is a unigram model: use alpha=")
            a = float(alpha)
            if not math.isfinite(a) or a < 0:
                raise InputError(f"alpha={alpha!r} must be a finite number >= 0 (0 = uniform over segmentations)")
            from tokenizer.kernels.unigram import sample_into

            width = compiled.max_piece_length + 1

            def sample(array, n, rng, out):
                return sample_into(compiled.units, compiled.piece_score, compiled.byte_to_id, compiled.byte_mode,
                                   compiled.split_after_newlines, compiled.unk_id, compiled.byte_fallback,
                                   compiled.unk_score, a, rng, array, 0, n, np.empty(n + 1, np.float64),
                                   np.empty(n + 1, np.int32), np.empty(width, np.int32), np.empty(width, np.int32),
                                   np.empty(width, np.float64), out, 0)

        rng = new_state(seed)
        ids: list[int] = []
        for part in parts:
            if isinstance(part, int):
                ids.append(part)
                continue
            n = len(part)
            out = np.empty(n + 1, dtype=np.int32)
            total = sample(np.frombuffer(part, dtype=np.uint8), n, rng, out)
            if total < 0:
                raise InputError("the text contains characters the model cannot represent (no <unk> piece and no "
                                 "byte fallback): use a byte-level or byte_fallback model, or remove them")
            ids.extend(out[:total].tolist())
        return ids

    def encode_batch(self, texts, *, num_threads: int | None = None, add_bos: bool = False,
                     add_eos: bool = False):
        """Encode many texts. A list (or tuple) of str/bytes gives ``list[list[int]]``; a pyarrow string, binary
        (or large_*) Array gives a ``list<int32>`` Array (``large_list<int32>`` past 2**31 ids) and a
        ChunkedArray a ChunkedArray. Nulls stay null. ``num_threads=None`` uses every core, 1 the calling thread
        only; each thread takes a contiguous document range, and one done early part of another's. The lists of
        ids hold no cycles and are built untracked by the cyclic garbage collector, so collections after a batch
        skip them (:mod:`tokenizer.kernels.python_lists`); a list of a few short texts is encoded text by text, as
        :meth:`encode` does (:data:`tokenizer.batching.FEW_TEXTS`)."""
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

    # ------------------------------------------------------------------ decoding
    @property
    def decode_table(self) -> list[bytes]:
        if self._decode_table is None:
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
            self._decode_table = table
        return self._decode_table

    def decode_bytes(self, ids: Iterable[int]) -> bytes:
        """Lossless inverse of :meth:`encode` (for identity models): NORMAL/USER_DEFINED/UNUSED pieces give their
        bytes, BYTE pieces their byte, CONTROL pieces nothing, UNKNOWN nothing (or the model's ``unk_surface``);
        then the normalizer's ``denormalize``."""
        table = self.decode_table
        ids = _as_id_list(ids)
        try:
            if ids and (min(ids) < 0 or max(ids) >= len(table)):
                raise IndexError
            decode_ids = getattr(self.normalizer, "decode_ids", None)
            if decode_ids is not None:  # SentencePiece models: its piece-by-piece Decode rules, exactly
                return decode_ids(ids, self.model.pieces, self.model.types)
            data = b"".join([table[i] for i in ids])
        except (TypeError, IndexError):
            for i in ids:
                self._check_id(i)
            raise
        return self.normalizer.denormalize(data)

    def decode(self, ids: Iterable[int]) -> str:
        """Text of ``ids``; invalid UTF-8 (e.g. a partial byte-fallback sequence) becomes U+FFFD."""
        return self.decode_bytes(ids).decode("utf-8", errors="replace")

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
