"""BPE training over a chunk count table, as pure functions of arrays (the Spark job and
:func:`train_bpe_local` share them, so both give the same model bytes for any partitioning)::

    chunks = count_chunks(data, offsets, settings)        # per partition: pre-tokenize, count distinct chunks
    chunks = merge_chunk_counts(chunks_a, chunks_b)       # reduce (empty_chunk_counts() is the zero)
    merges = learn_bpe(*chunks, settings)                 # driver: incremental merges (Numba)
    models = build_models(merges, settings, provenance)   # {vocab_size: tokenizer.model.Model}, nested

Pre-tokenization (``settings.pretokenizer``):

- ``"byte_level"``: the text is split with a regex (``settings.pattern``: ``"gpt2"`` or ``"llama3"``, see
  :mod:`tokenizer.kernels.pretokenize`), pieces never cross a pre-token. The model's ``pretokenizer`` is
  ``{"name": "byte_level", "pattern": ...}`` and it encodes by *replaying the merges* (lowest rank first, leftmost
  first), exactly as Hugging Face ``tokenizers`` and tiktoken do; it exports to a ``tokenizer.json``.
- ``"sentencepiece"``: SentencePiece-style: every space becomes U+2581 ``▁``; a chunk is a run of ``▁`` (all but
  the last) or one ``▁`` plus the following non-``▁`` text, and newline runs are chunks of their own. The model
  uses SentencePiece's normalizer (no dummy prefix, no whitespace removal: lossless for valid UTF-8) and SentencePiece's
  BPE rule (merge the adjacent pair whose concatenation is the best-scored piece).

Both are byte level: ids 0..255 are the single bytes, so any text encodes losslessly. Then the merged pieces in
merge order (id ``256 + rank``, score ``-rank``), then the special tokens (CONTROL). A vocabulary of size ``V``
holds the first ``V - 256 - len(special_tokens)`` merges, so models of several sizes are nested.

Which pieces a merged piece came from is stored in ``provenance["bpe_merges"]`` as the byte length of each merge's
left part (the right part is the rest), so the merges list is recoverable exactly for the encoder and for export.

Example::

    >>> s = BpeSettings(vocab_sizes=(259,), special_tokens=(), min_count=1)
    >>> m = train_bpe_local([b"abab", b"ab"], s)[259]
    >>> m.pieces[256:]          # "ab" (count 2), then "ab"+"ab" (count 1); nothing is left to merge
    [b'ab', b'abab']
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from tokenizer._version import __version__
from tokenizer.errors import ConfigError, InputError
from tokenizer.kernels import bpe_train as K
from tokenizer.kernels import pretokenize as P
from tokenizer.model import Model
from tokenizer.trainers.bytepiece import pack_texts  # noqa: F401  (re-exported: count_chunks(*pack_texts(...)))

PRETOKENIZERS = ("byte_level", "sentencepiece")
SPACE_SYMBOL = "\u2581".encode()


@dataclass(frozen=True)
class BpeSettings:
    """Everything that affects a BPE model (stored in its provenance).

    Attributes:
        vocab_sizes: vocabulary sizes, each counting the 256 byte pieces and the special tokens.
        pretokenizer: ``"byte_level"`` (regex pre-split, Hugging Face / tiktoken compatible) or ``"sentencepiece"``.
        pattern: the regex of ``byte_level``: ``"gpt2"`` or ``"llama3"``.
        min_count: stop merging when the best pair occurs fewer times than this.
        max_piece_length: longest merged piece in bytes.
        special_tokens: CONTROL pieces after the merged pieces.
    """

    vocab_sizes: tuple[int, ...] = (32000,)
    pretokenizer: str = "byte_level"
    pattern: str = "gpt2"
    min_count: int = 2
    max_piece_length: int = 32
    special_tokens: tuple[str, ...] = ("<pad>", "<s>", "</s>")

    def __post_init__(self) -> None:
        sizes = (self.vocab_sizes,) if isinstance(self.vocab_sizes, int) else self.vocab_sizes
        object.__setattr__(self, "vocab_sizes", tuple(sizes))
        object.__setattr__(self, "special_tokens", tuple(self.special_tokens))

    def validate(self) -> "BpeSettings":
        """Raise :class:`ConfigError` saying what to change; returns ``self`` when valid."""
        if self.pretokenizer not in PRETOKENIZERS:
            raise ConfigError(f"pretokenizer={self.pretokenizer!r}: use one of {PRETOKENIZERS}")
        if self.pattern not in P.PATTERNS:
            raise ConfigError(f"pattern={self.pattern!r}: use one of {sorted(P.PATTERNS)}")
        for name, low in (("min_count", 1), ("max_piece_length", 2)):
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < low:
                raise ConfigError(f"{name}={value!r} is invalid: use an integer >= {low}")
        if len(set(self.special_tokens)) != len(self.special_tokens) or any(not s for s in self.special_tokens):
            raise ConfigError(f"special_tokens={self.special_tokens!r} must be distinct non-empty strings")
        if not self.vocab_sizes:
            raise ConfigError("give at least one vocab size")
        floor = 256 + len(self.special_tokens)
        for size in self.vocab_sizes:
            if not isinstance(size, (int, np.integer)) or isinstance(size, bool) or size < floor:
                raise ConfigError(f"vocab size {size!r} is too small: a BPE vocabulary holds the 256 bytes and "
                                  f"{len(self.special_tokens)} special tokens, so use at least {floor}")
        return self

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out["vocab_sizes"] = list(self.vocab_sizes)
        out["special_tokens"] = list(self.special_tokens)
        return out

    @property
    def model_pretokenizer(self) -> dict:
        if self.pretokenizer == "byte_level":
            return {"name": "byte_level", "pattern": self.pattern}
        return {"name": "sentencepiece", "add_dummy_prefix": False, "remove_extra_whitespaces": False,
                "escape_whitespaces": True, "treat_whitespace_as_suffix": False}


# ---------------------------------------------------------------------------------------------- chunking
def _as_packed(data, offsets) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(data, (bytes, bytearray, memoryview)):
        data = np.frombuffer(data, dtype=np.uint8)
    data = np.ascontiguousarray(data)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    if data.dtype != np.uint8:
        raise InputError(f"data must be a uint8 array (text bytes), got dtype {data.dtype}")
    if offsets.ndim != 1 or len(offsets) < 1 or offsets[0] < 0 or offsets[-1] > len(data) or np.any(
            np.diff(offsets) < 0):
        raise InputError(f"offsets must be 1-d, rising from >= 0 to <= len(data) = {len(data)}")
    return data, offsets


def escape_spaces(data: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Replace every space (0x20) by ``▁`` (3 bytes), as SentencePiece's ``escape_whitespaces`` does."""
    data = data[offsets[0]:offsets[-1]]
    offsets = offsets - offsets[0]
    is_space = data == 0x20
    if not is_space.any():
        return data.copy(), offsets.copy()
    grow = np.concatenate([[0], np.cumsum(is_space.astype(np.int64) * 2)])
    out = np.empty(len(data) + int(grow[-1]), dtype=np.uint8)
    positions = np.arange(len(data)) + grow[:-1]
    out[positions] = data
    where = positions[is_space]
    out[where], out[where + 1], out[where + 2] = SPACE_SYMBOL
    return out, offsets + grow[offsets]


def _sentencepiece_chunk_starts(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Sorted chunk start positions of escaped text (see the module docstring)."""
    n = len(data)
    starts = np.zeros(n + 1, dtype=bool)
    starts[offsets[:-1]] = True
    if n:
        sym = np.zeros(n, dtype=bool)
        if n >= 3:
            sym[:-2] = (data[:-2] == 0xE2) & (data[1:-1] == 0x96) & (data[2:] == 0x81)
        after = np.zeros(n, dtype=bool)       # position right after a ▁ is ▁ too (runs)
        after[:-3] = sym[3:]
        doc_end = np.repeat(offsets[1:], np.diff(offsets))  # never look past a document's end
        after &= np.arange(n) + 3 < doc_end
        prev_sym = np.zeros(n, dtype=bool)    # a ▁ ends right before this position
        prev_sym[3:] = sym[:-3]
        starts[:n] |= sym & ~after            # the last ▁ of a run starts a word
        starts[:n] |= sym & ~prev_sym         # ... and a run starts a chunk
        newline = data == 0x0A
        prev_newline = np.zeros(n, dtype=bool)
        prev_newline[1:] = newline[:-1]
        starts[:n] |= newline != prev_newline  # newline runs are chunks of their own
    starts[n] = False
    starts[offsets[-1]:] = False
    keep = np.flatnonzero(starts)
    # a boundary is only real inside a document (never at a document's end)
    return keep


def chunk_spans(data, offsets, settings: BpeSettings) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(text, starts, ends)``: the chunks of every document as spans of ``text`` (the input, or its
    space-escaped copy for ``sentencepiece``), each chunk inside one document, all bytes covered."""
    data, offsets = _as_packed(data, offsets)
    if settings.pretokenizer == "byte_level":
        ends = np.empty(int(offsets[-1] - offsets[0]), dtype=np.int64)
        per_doc = np.empty(len(offsets) - 1, dtype=np.int64)
        count = P.pretokenize_batch(P.char_class_table(), P.PATTERNS[settings.pattern], data, offsets, ends,
                                    per_doc)
        ends = ends[:count]
        starts = np.empty(count, dtype=np.int64)
        if count:
            starts[1:] = ends[:-1]
            doc_first = np.concatenate([[0], np.cumsum(per_doc)[:-1]])
            nonempty = per_doc > 0
            starts[doc_first[nonempty]] = offsets[:-1][nonempty]
        return data, starts, ends
    text, text_offsets = escape_spaces(data, offsets)
    starts = _sentencepiece_chunk_starts(text, text_offsets)
    bounds = np.union1d(starts, text_offsets)
    ends = np.empty(len(starts), dtype=np.int64)
    # each start's end is the next boundary after it
    position = np.searchsorted(bounds, starts, side="right")
    ends[:] = bounds[position]
    return text, starts, ends


def empty_chunk_counts() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The zero of the chunk-count monoid: ``(chunk data, chunk offsets, counts)``."""
    return np.zeros(0, np.uint8), np.zeros(1, np.int64), np.zeros(0, np.int64)


def _dedupe(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, weights: np.ndarray):
    first, counts = K.count_spans(data, starts, ends, weights)
    lengths = ends[first] - starts[first]
    offsets = np.zeros(len(first) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if len(first):
        index = np.repeat(starts[first] - offsets[:-1], lengths) + np.arange(offsets[-1])
        chunk_data = data[index]
    else:
        chunk_data = np.zeros(0, np.uint8)
    return chunk_data, offsets, counts


def count_chunks(data, offsets, settings: BpeSettings) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct chunks of packed texts and their counts: ``(chunk data uint8, chunk offsets int64, counts int64)``,
    in order of first occurrence. ``count_chunks(*pack_texts([b"a a"]), byte_level gpt2)`` -> chunks
    ``a``, `` a`` with counts 1, 1."""
    text, starts, ends = chunk_spans(data, offsets, settings)
    return _dedupe(text, starts, ends, np.ones(len(starts), np.int64))


def merge_chunk_counts(a, b) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sum two chunk count tables (the monoid's operation); the result lists ``a``'s chunks first."""
    data = np.concatenate([a[0][a[1][0]:a[1][-1]], b[0][b[1][0]:b[1][-1]]])
    starts = np.concatenate([a[1][:-1] - a[1][0], b[1][:-1] - b[1][0] + (a[1][-1] - a[1][0])])
    ends = np.concatenate([a[1][1:] - a[1][0], b[1][1:] - b[1][0] + (a[1][-1] - a[1][0])])
    return _dedupe(data, starts, ends, np.concatenate([a[2], b[2]]).astype(np.int64))


def sort_chunks(chunk_data, chunk_offsets, counts) -> tuple[list[bytes], np.ndarray]:
    """``(chunks sorted by bytes, their counts)``: the canonical table the driver learns from."""
    blob = np.asarray(chunk_data, np.uint8).tobytes()
    pieces = [blob[chunk_offsets[i]:chunk_offsets[i + 1]] for i in range(len(chunk_offsets) - 1)]
    order = sorted(range(len(pieces)), key=pieces.__getitem__)
    return [pieces[i] for i in order], np.asarray(counts, np.int64)[order]


# ---------------------------------------------------------------------------------------------- merges
@dataclass
class Merges:
    """Learned merges, in order: ``pieces[256 + m] = pieces[left[m]] + pieces[right[m]]`` with pair count
    ``counts[m]`` when merged."""

    left: np.ndarray
    right: np.ndarray
    counts: np.ndarray

    def pieces(self) -> list[bytes]:
        out = [bytes([b]) for b in range(256)]
        for left, right in zip(self.left.tolist(), self.right.tolist()):
            out.append(out[left] + out[right])
        return out


def learn_bpe(chunks: list[bytes], counts, settings: BpeSettings) -> Merges:
    """Merges for the largest vocab size over a chunk count table (chunks as bytes; any order)."""
    settings.validate()
    counts = np.asarray(counts, np.int64)
    if len(chunks) != len(counts):
        raise InputError(f"{len(chunks)} chunks but {len(counts)} counts")
    wanted = max(settings.vocab_sizes) - 256 - len(settings.special_tokens)
    offsets = np.zeros(len(chunks) + 1, dtype=np.int64)
    np.cumsum([len(c) for c in chunks], out=offsets[1:])
    symbols = np.frombuffer(b"".join(chunks), dtype=np.uint8).astype(np.int32)
    left, right, merged = K.learn_merges(symbols, offsets, counts, np.ones(256, np.int64), wanted,
                                         settings.min_count, settings.max_piece_length)
    return Merges(left, right, merged)


def build_models(merges: Merges, settings: BpeSettings, provenance: dict | None = None) -> dict[int, Model]:
    """One model per vocab size (nested prefixes of the merges); see the module docstring for the layout."""
    settings.validate()
    pieces = merges.pieces()
    models = {}
    for size in sorted(settings.vocab_sizes):
        n = min(len(pieces) - 256, size - 256 - len(settings.special_tokens))
        left_lengths = [len(pieces[left]) for left in merges.left[:n].tolist()]
        info = {"shardpiece_version": __version__, "algorithm": "bpe", "settings": settings.to_dict(),
                "vocab_size_requested": int(size), "bpe_merges": {"left_lengths": left_lengths}}
        info.update(provenance or {})
        model = Model.byte_level(pieces[256:256 + n], -np.arange(n, dtype=np.float32),
                                 specials=settings.special_tokens, algorithm="bpe", provenance=info,
                                 byte_scores=np.zeros(256, np.float32))
        model.pretokenizer = settings.model_pretokenizer
        model.validate()
        models[int(size)] = model
    return models


def train_bpe_local(texts: Iterable[bytes | str], settings: BpeSettings,
                    provenance: dict | None = None) -> dict[int, Model]:
    """Train on an in-memory corpus (what the Spark job computes, on one machine)."""
    settings.validate()
    table = count_chunks(*pack_texts(texts), settings)
    chunks, counts = sort_chunks(*table)
    if not chunks:
        raise InputError("the corpus has no text (every document is empty)")
    return build_models(learn_bpe(chunks, counts, settings), settings, provenance)
