"""The shardpiece model: a vocabulary of byte pieces plus everything needed to segment text with it.

A :class:`Model` is plain data (lists, numpy arrays, dicts), so it pickles cheaply and can be broadcast by Spark.
It is saved as one self-contained, versioned file with a checksum::

    offset  size  field
    0       8     magic  b"SHRDPCE\\x00"
    8       4     format version (uint32, little endian)
    12      8     header length H (uint64, little endian)
    20      H     header: UTF-8 JSON, keys sorted (settings, provenance, array table)
    20+H    ...   arrays, each at the offset/length the header's "arrays" table gives
    end-32  32    SHA-256 of every byte before it

Identical models give identical bytes: the header is canonical JSON, and nothing run-specific (time, host, Spark
master) is stored; those belong in the run manifest written beside the model.

Example (hand-checkable)::

    >>> m = Model.byte_level([b"ab"], [-1.0])
    >>> m.vocab_size, m.pieces[256], m.piece_to_id(b"a")
    (257, b'ab', 97)
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tokenizer._version import __version__
from tokenizer.errors import ModelFileError, ModelError
from tokenizer.files import write_atomic
from tokenizer.piece_types import PieceType

MAGIC = b"SHRDPCE\x00"
#: Provenance key: ``"float64"`` makes the unigram lattice sum a model's float32 scores in float64, as Hugging Face
#: tokenizers' Unigram does, so that a model exported to tokenizer.json breaks exact ties the same way on both sides
#: (the models trained here that export only there: BytePiece and the byte unigram variant). Without it the sums
#: are float32, as SentencePiece's (the SentencePiece-style unigram models, which export to SentencePiece).
#: Example: two paths of score -53.17738914489746 in float64 may differ in float32, and only the float32 sums then
#: prefer one of them.
LATTICE_SUMS = "lattice_sums"
#: The scores of the models trained here are multiples of a power of two, so that the clients' lattice sums are
#: exact and exact ties break alike everywhere: 2**-8 for SentencePiece-style unigram models (every path score below
#: 2**16 is an exact float32 sum, as sentencepiece adds), 2**-13 for the byte-level unigram models (float64 sums, as
#: tokenizers adds; and at most 14 significant digits, which tokenizers' JSON reader parses exactly: it loads longer
#: decimals up to one unit in the last place off).
SCORE_STEP_FLOAT32_SUMS = 2.0 ** -8
SCORE_STEP_FLOAT64_SUMS = 2.0 ** -13


def quantize_scores(scores, step: float) -> np.ndarray:
    """``scores`` (float64 array) rounded to multiples of ``step``: ``quantize_scores([-3.5281608], 2**-8)`` ->
    ``[-3.52734375]``."""
    return np.round(np.asarray(scores, np.float64) / step) * step
FORMAT_VERSION = 1
_PREFIX = struct.Struct("<8sIQ")
_DIGEST_SIZE = 32


ALGORITHMS = ("unigram", "bpe")


@dataclass
class Model:
    """A tokenizer model.

    Attributes:
        pieces: list of ``bytes``, index = id. For BYTE pieces this is SentencePiece's text form (``b"<0x41>"``).
        scores: float32 array, shape ``(vocab_size,)``: log-probability (unigram) or merge priority (bpe).
        types: int8 array, shape ``(vocab_size,)``: :class:`PieceType` values.
        algorithm: ``"unigram"`` (Viterbi over a lattice) or ``"bpe"`` (merge best-scored adjacent pair).
        normalizer: JSON-able dict, ``{"name": "identity" | "nfc" | "nfkc" | "precompiled", ...}``.
        charsmap: SentencePiece's precompiled charsmap blob when ``normalizer["name"] == "precompiled"``.
        pretokenizer: JSON-able dict, ``{"name": "none"}`` for byte-level models, or
            ``{"name": "sentencepiece", "add_dummy_prefix": bool, "remove_extra_whitespaces": bool,
            "escape_whitespaces": bool, "treat_whitespace_as_suffix": bool}``. Optional key ``"added_tokens"``
            (models imported from a Hugging Face tokenizer.json): tokens cut out of the text before normalization,
            see :mod:`tokenizer.added_tokens`.
        unk_id, bos_id, eos_id, pad_id: special ids, ``-1`` when absent.
        byte_fallback: uncovered characters become BYTE pieces instead of the unknown piece.
        provenance: JSON-able dict: shardpiece version, settings that affect the result, corpus fingerprint.
    """

    pieces: list[bytes]
    scores: np.ndarray
    types: np.ndarray
    algorithm: str = "unigram"
    normalizer: dict[str, Any] = field(default_factory=lambda: {"name": "identity"})
    charsmap: bytes = b""
    pretokenizer: dict[str, Any] = field(default_factory=lambda: {"name": "none"})
    unk_id: int = -1
    bos_id: int = -1
    eos_id: int = -1
    pad_id: int = -1
    byte_fallback: bool = False
    provenance: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.pieces = [bytes(p) for p in self.pieces]
        self.scores = np.ascontiguousarray(self.scores, dtype=np.float32)
        self.types = np.ascontiguousarray(self.types, dtype=np.int8)
        self.validate()

    # ------------------------------------------------------------------ construction helpers
    @classmethod
    def byte_level(
        cls,
        pieces: list[bytes],
        scores: list[float] | np.ndarray,
        *,
        specials: tuple[str, ...] = (),
        algorithm: str = "unigram",
        normalizer: dict[str, Any] | None = None,
        provenance: dict[str, Any] | None = None,
        byte_scores: np.ndarray | None = None,
    ) -> "Model":
        """A lossless byte-level model: ids ``0..255`` are the single bytes, then ``pieces``, then ``specials``.

        ``byte_scores`` (float32, shape ``(256,)``) default to ``min(scores) - 1`` so multi-byte pieces win ties.
        Specials (e.g. ``("<s>", "</s>")``) are CONTROL pieces; ``<s>``/``</s>``/``<pad>`` set bos/eos/pad ids.
        """
        scores = np.asarray(scores, dtype=np.float32)
        short = next((i for i, piece in enumerate(pieces) if len(piece) < 2), None)
        if short is not None:
            raise ModelError(
                f"piece {short} ({bytes(pieces[short])!r}) is shorter than two bytes: a byte-level model already has "
                "ids 0..255 for the single bytes, so pass only pieces of two or more bytes"
            )
        if len(scores) != len(pieces):
            raise ModelError(f"{len(pieces)} pieces but {len(scores)} scores: pass one score per piece")
        if byte_scores is None:
            floor = float(scores.min()) - 1.0 if len(scores) else -1.0
            byte_scores = np.full(256, floor, dtype=np.float32)
        all_pieces = [bytes([b]) for b in range(256)] + list(pieces) + [s.encode() for s in specials]
        all_scores = np.concatenate([np.asarray(byte_scores, np.float32), scores, np.zeros(len(specials), np.float32)])
        types = np.full(len(all_pieces), PieceType.NORMAL, dtype=np.int8)
        types[256 + len(pieces):] = PieceType.CONTROL
        ids = {s: 256 + len(pieces) + i for i, s in enumerate(specials)}
        return cls(
            all_pieces, all_scores, types, algorithm=algorithm,
            normalizer=normalizer or {"name": "identity"},
            bos_id=ids.get("<s>", -1), eos_id=ids.get("</s>", -1), pad_id=ids.get("<pad>", -1),
            provenance=provenance or {"shardpiece_version": __version__},
        )

    # ------------------------------------------------------------------ queries
    @property
    def vocab_size(self) -> int:
        return len(self.pieces)

    def piece_to_id(self, piece: bytes) -> int:
        """Id of ``piece`` (bytes), or ``-1`` when it is not in the vocabulary."""
        index = self.__dict__.get("_piece_index")
        if index is None:
            index = {p: i for i, p in enumerate(self.pieces)}
            self.__dict__["_piece_index"] = index
        return index.get(bytes(piece), -1)

    def validate(self) -> None:
        """Raise :class:`ModelError` naming the first inconsistency (lengths, types, special ids)."""
        n = len(self.pieces)
        if self.scores.shape != (n,) or self.types.shape != (n,):
            raise ModelError(
                f"model has {n} pieces, {self.scores.shape[0]} scores and {self.types.shape[0]} types: "
                "they must have equal length"
            )
        if self.algorithm not in ALGORITHMS:
            raise ModelError(f"unknown algorithm {self.algorithm!r}: use one of {ALGORITHMS}")
        if n and (self.types.min() < 1 or self.types.max() > 6):
            raise ModelError("piece types must be PieceType values 1..6")
        for name in ("unk_id", "bos_id", "eos_id", "pad_id"):
            value = getattr(self, name)
            if not -1 <= value < n:
                raise ModelError(f"{name}={value} is outside the vocabulary of {n} pieces")
        if self.normalizer.get("name") == "precompiled" and not self.charsmap:
            raise ModelError("normalizer 'precompiled' needs the charsmap blob")
        if not np.all(np.isfinite(self.scores)):
            raise ModelError("scores must be finite")
        if "added_tokens" in self.pretokenizer:
            from tokenizer.added_tokens import added_tokens_of

            added_tokens_of(self)  # raises ModelError naming a malformed entry

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_piece_index", None)
        return state

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Model) and self.to_bytes() == other.to_bytes()

    # ------------------------------------------------------------------ serialization
    def to_bytes(self) -> bytes:
        """The model file's bytes (see the module docstring for the layout)."""
        lengths = np.fromiter((len(p) for p in self.pieces), dtype=np.int64, count=len(self.pieces))
        offsets = np.zeros(len(self.pieces) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        arrays = {
            "piece_offsets": offsets.astype("<i8").tobytes(),
            "piece_bytes": b"".join(self.pieces),
            "scores": self.scores.astype("<f4").tobytes(),
            "types": self.types.astype("i1").tobytes(),
            "charsmap": bytes(self.charsmap),
        }
        table, position = {}, 0
        for name, blob in arrays.items():
            table[name] = [position, len(blob)]
            position += len(blob)
        header = {
            "algorithm": self.algorithm,
            "arrays": table,
            "byte_fallback": bool(self.byte_fallback),
            "normalizer": self.normalizer,
            "num_pieces": len(self.pieces),
            "pretokenizer": self.pretokenizer,
            "provenance": self.provenance,
            "special_ids": {"bos": self.bos_id, "eos": self.eos_id, "pad": self.pad_id, "unk": self.unk_id},
        }
        header_bytes = json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        body = _PREFIX.pack(MAGIC, FORMAT_VERSION, len(header_bytes)) + header_bytes + b"".join(arrays.values())
        return body + hashlib.sha256(body).digest()

    @classmethod
    def from_bytes(cls, data: bytes, source: str = "<bytes>") -> "Model":
        """Parse a model file's bytes; raises :class:`ModelFileError` naming ``source`` and the problem."""
        data = bytes(data)
        if len(data) < _PREFIX.size + _DIGEST_SIZE:
            raise ModelFileError(source, f"file is {len(data)} bytes, too short to be a shardpiece model (truncated?)")
        magic, version, header_len = _PREFIX.unpack_from(data)
        if magic != MAGIC:
            raise ModelFileError(
                source, "not a shardpiece model (bad magic). For a SentencePiece .model, a BytePiece JSON or a "
                "tokenizer.json, use Tokenizer.load(path), which detects the format",
            )
        if version > FORMAT_VERSION:
            raise ModelFileError(
                source, f"format version {version} is newer than this shardpiece ({__version__}) reads "
                f"(up to {FORMAT_VERSION}): upgrade shardpiece",
            )
        body, digest = data[:-_DIGEST_SIZE], data[-_DIGEST_SIZE:]
        if hashlib.sha256(body).digest() != digest:
            raise ModelFileError(source, "checksum mismatch: the file is truncated or corrupted; re-copy or retrain it")
        try:
            header = json.loads(body[_PREFIX.size:_PREFIX.size + header_len].decode())
            base = _PREFIX.size + header_len

            def blob(name: str) -> bytes:
                start, length = header["arrays"][name]
                return body[base + start: base + start + length]

            offsets = np.frombuffer(blob("piece_offsets"), dtype="<i8")
            piece_bytes = blob("piece_bytes")
            pieces = [piece_bytes[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]
            ids = header["special_ids"]
            return cls(
                pieces=pieces,
                scores=np.frombuffer(blob("scores"), dtype="<f4").astype(np.float32),
                types=np.frombuffer(blob("types"), dtype="i1").astype(np.int8),
                algorithm=header["algorithm"],
                normalizer=header["normalizer"],
                charsmap=blob("charsmap"),
                pretokenizer=header["pretokenizer"],
                unk_id=ids["unk"], bos_id=ids["bos"], eos_id=ids["eos"], pad_id=ids["pad"],
                byte_fallback=header["byte_fallback"],
                provenance=header["provenance"],
            )
        except ModelError as exc:
            raise ModelFileError(source, f"inconsistent model: {exc}") from None
        except (KeyError, ValueError, TypeError, IndexError) as exc:
            raise ModelFileError(source, f"malformed header or arrays ({exc!r}); the file is corrupted") from None

    def save(self, path: str | os.PathLike) -> None:
        """Write the model file atomically (temporary file in the same directory, then rename)."""
        write_atomic(path, self.to_bytes(), what="model file")

    @classmethod
    def load(cls, path: str | os.PathLike) -> "Model":
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            raise ModelFileError(str(path), f"cannot read the file: {exc.strerror}") from None
        return cls.from_bytes(data, source=str(path))

