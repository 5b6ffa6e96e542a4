"""BPE training over a chunk count table, as pure functions of arrays (the Spark job and
:func:`train_bpe_local` share them, so both give the same model bytes for any partitioning)::

    chunks = count_chunks(data, offsets, settings)        # per partition: pre-tokenize, count distinct chunks
    chunks = merge_chunk_counts(chunks_a, chunks_b)       # reduce (empty_chunk_counts() is the zero)
    merges = learn_bpe(*chunks, settings)                 # driver: incremental merges (Numba)
    models = build_models(merges, settings, provenance)   # {vocab_size: tokenizer.model.Model}, nested

Pre-tokenization (``settings.pretokenizer``):

- ``"byte_level"``: the text is split with a regex (``settings.pattern``: ``"gpt2"``, ``"llama3"`` or ``"o200k"``,
  see :mod:`tokenizer.kernels.pretokenize`), pieces never cross a pre-token. The model's ``pretokenizer`` is
  ``{"name": "byte_level", "pattern": ...}`` and it encodes by *replaying the merges* (lowest rank first, leftmost
  first), exactly as Hugging Face ``tokenizers`` and tiktoken do; it exports to a ``tokenizer.json``.
- ``"sentencepiece"``: SentencePiece's BPE trainer's rules (``bpe_model_trainer.cc`` with identity normalization,
  no dummy prefix, no whitespace removal, ``allow_whitespace_only_pieces``, ``split_by_whitespace``,
  ``split_by_unicode_script``, ``split_by_number``): every space becomes U+2581 ``▁``; a chunk is SentencePiece's
  word, a run of ``▁`` plus the non-``▁`` text after it (cut where the Unicode script changes, which no piece may
  cross anyway); newline runs and tab runs are chunks of their own. Merges start from *characters*: the
  ``character_coverage`` share of character occurrences (most frequent first) are the required characters,
  each multi-byte one assembled from its bytes by the first merges; other characters stay bytes that never merge
  (SentencePiece's byte fallback). A merge is allowed only when the result is a valid SentencePiece piece: at most
  ``max_piece_length`` characters (16), ``▁`` only at its start or a piece of ``▁`` only, one script (Hiragana
  and Katakana count as Han; Inherited takes its neighbour's), no tab or NUL. The model uses SentencePiece's
  normalizer (lossless for valid UTF-8) and SentencePiece's BPE rule (merge the adjacent pair whose concatenation
  is the best-scored piece). Ties between equally frequent pairs go SentencePiece's way: the merged piece with
  fewer characters, then the smaller string (then the smaller ids). ``byte_level`` breaks ties by smaller ids.

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
import functools
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from tokenizer._version import __version__
from tokenizer.errors import ConfigError, InputError
from tokenizer.kernels import pretokenize as P
from tokenizer.kernels.bpe_merges import learn_merges
from tokenizer.kernels.bpe_pair_rules import ALL_SPACE, FROZEN, LEAD_SPACE, NO_SPACE, SCRIPT_ANY
from tokenizer.kernels.chunk_chars import chars_to_symbols, weighted_char_counts
from tokenizer.kernels.chunk_count import MODE_SENTENCEPIECE, count_chunk_table, count_spans, gather_spans
from tokenizer.memory import release_freed_memory
from tokenizer.model import Model
from tokenizer.kernels.packed_sort import argsort_spans, gather_distinct, strictly_increasing
from tokenizer.packed import PackedBytes, as_packed, pack
from tokenizer.trainers.bytepiece.chunks import pack_texts  # noqa: F401  (re-exported: count_chunks(*pack_texts(...)))

PRETOKENIZERS = ("byte_level", "sentencepiece")
from tokenizer.trainers.limits import BYTE_LEVEL_MAX_PIECE_BYTES  # noqa: E402  (byte_level's default)
SPACE_SYMBOL = "\u2581".encode()


@dataclass(frozen=True)
class BpeSettings:
    """Everything that affects a BPE model (stored in its provenance).

    Attributes:
        vocab_sizes: vocabulary sizes, each counting the 256 byte pieces and the special tokens.
        pretokenizer: ``"byte_level"`` (regex pre-split, Hugging Face / tiktoken compatible) or ``"sentencepiece"``.
        pattern: the regex of ``byte_level``: ``"gpt2"``, ``"llama3"`` or ``"o200k"``.
        min_count: stop merging when the best pair occurs fewer times than this: default 1 for ``sentencepiece``
            (SentencePiece's BPE merges on to the vocabulary size), 2 for ``byte_level``.
        max_piece_length: longest merged piece: bytes for ``byte_level`` (default 256), characters for
            ``sentencepiece`` (default 16, SentencePiece's ``max_sentencepiece_length``).
        character_coverage: ``sentencepiece`` only: the share of character occurrences whose characters are
            merged (SentencePiece's default 0.9995); the rarest characters stay bytes.
        special_tokens: CONTROL pieces after the merged pieces.
        superword_transition: ``byte_level`` only: train superword BPE (:mod:`tokenizer.trainers.superword`):
            ordinary merges up to this vocabulary size (an integer, counted as ``vocab_sizes`` are) or share of the
            largest vocab size (a number below 1), then merges inside ``superword_pattern``'s coarser chunks;
            ``None`` (default): plain BPE.
        superword_pattern: the second stage's split (default ``"superword"``); the model encodes with it.
        superword_max_words: most words in a second-stage piece (default 4), a word counted at each space.
    """

    vocab_sizes: tuple[int, ...] = (32000,)
    pretokenizer: str = "byte_level"
    pattern: str = "gpt2"
    min_count: int | None = None
    max_piece_length: int | None = None
    special_tokens: tuple[str, ...] = ("<pad>", "<s>", "</s>")
    character_coverage: float = 0.9995
    superword_transition: float | int | None = None
    superword_pattern: str = "superword"
    superword_max_words: int = 4

    def __post_init__(self) -> None:
        sizes = (self.vocab_sizes,) if isinstance(self.vocab_sizes, int) else self.vocab_sizes
        object.__setattr__(self, "vocab_sizes", tuple(sizes))
        object.__setattr__(self, "special_tokens", tuple(self.special_tokens))
        if self.min_count is None:
            object.__setattr__(self, "min_count", 1 if self.pretokenizer == "sentencepiece" else 2)
        if self.max_piece_length is None:
            object.__setattr__(self, "max_piece_length",
                               16 if self.pretokenizer == "sentencepiece" else BYTE_LEVEL_MAX_PIECE_BYTES)

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
        coverage = self.character_coverage
        if isinstance(coverage, bool) or not isinstance(coverage, (int, float)) or not 0.98 <= coverage <= 1.0:
            raise ConfigError(f"character_coverage={coverage!r} is invalid: use a number from 0.98 to 1.0 "
                              f"(SentencePiece's range)")
        if self.superword_transition is not None:
            from tokenizer.trainers.superword_settings import validate_superword

            validate_superword(self)
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
        if self.pretokenizer != "sentencepiece":
            del out["character_coverage"]  # unused: byte_level models stay as they were
        if self.superword_transition is None:  # plain BPE models stay as they were
            for key in ("superword_transition", "superword_pattern", "superword_max_words"):
                del out[key]
        return out

    @property
    def model_pretokenizer(self) -> dict:
        if self.pretokenizer == "byte_level":
            superword = self.superword_transition is not None
            return {"name": "byte_level", "pattern": self.superword_pattern if superword else self.pattern}
        return {"name": "sentencepiece", "add_dummy_prefix": False, "remove_extra_whitespaces": False,
                "escape_whitespaces": True, "treat_whitespace_as_suffix": False}


# ---------------------------------------------------------------------------------------------- chunking
def escape_spaces(data: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Replace every space (0x20) by ``▁`` (3 bytes), as SentencePiece's ``escape_whitespaces`` does; returns
    ``(text, offsets from 0)``."""
    data, offsets = as_packed(data, offsets)
    spaces = int(np.count_nonzero(data[offsets[0]:offsets[-1]] == 0x20))
    out = np.empty(int(offsets[-1] - offsets[0]) + 2 * spaces, np.uint8)
    out_offsets = np.empty(len(offsets), np.int64)
    P.escape_spaces_packed(data, offsets, out, out_offsets)
    return out, out_offsets


@functools.lru_cache(maxsize=1)
def sentencepiece_script_table() -> np.ndarray:
    """int16 of shape ``(0x110000,)``: each code point's script as SentencePiece's piece rule compares it
    (:func:`~tokenizer.trainers.unicode_scripts.sentencepiece_scripts`), Inherited as ``SCRIPT_ANY`` (it takes its
    neighbour's script). Digits are Common (split_by_number). ``SCRIPT_NAMES[sentencepiece_script_table()[ord("a")]]
    == "LATIN"``."""
    from tokenizer.trainers.unicode_scripts import sentencepiece_scripts

    return sentencepiece_scripts(P.SCRIPT_ANY)


def chunk_spans(data, offsets, settings: BpeSettings) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(text, starts, ends)``: the chunks of every document as spans of ``text`` (the input, or its
    space-escaped copy for ``sentencepiece``), each chunk inside one document, all bytes covered."""
    data, offsets = as_packed(data, offsets)
    if settings.pretokenizer == "sentencepiece":
        data, offsets = escape_spaces(data, offsets)
    ends = np.empty(int(offsets[-1] - offsets[0]), dtype=np.int64)
    per_doc = np.empty(len(offsets) - 1, dtype=np.int64)
    if settings.pretokenizer == "byte_level":
        count = P.pretokenize_batch(P.char_class_table(), P.PATTERNS[settings.pattern], data, offsets, ends, per_doc)
    else:
        count = P.sentencepiece_batch(sentencepiece_script_table(), data, offsets, ends, per_doc)
    ends = ends[:count]
    starts = np.empty(count, dtype=np.int64)
    if count:
        starts[1:] = ends[:-1]
        doc_first = np.concatenate([[0], np.cumsum(per_doc)[:-1]])
        nonempty = per_doc > 0
        starts[doc_first[nonempty]] = offsets[:-1][nonempty]
    return data, starts, ends


def empty_chunk_counts() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The zero of the chunk-count monoid: ``(chunk data, chunk offsets, counts)``."""
    return np.zeros(0, np.uint8), np.zeros(1, np.int64), np.zeros(0, np.int64)


def _dedupe(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, weights: np.ndarray):
    first, counts = count_spans(data, starts, ends, weights)
    chunk_data, offsets = gather_spans(data, starts[first], ends[first])
    return chunk_data, offsets, counts


def count_chunks(data, offsets, settings: BpeSettings) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distinct chunks of packed texts and their counts: ``(chunk data uint8, chunk offsets int64, counts int64)``,
    in order of first occurrence (one Numba pass: pre-tokenize and hash-count). ``count_chunks(*pack_texts([b"a a"]),
    byte_level gpt2)`` -> chunks ``a``, `` a`` with counts 1, 1."""
    data, offsets = as_packed(data, offsets)
    if settings.pretokenizer == "sentencepiece":
        data, offsets = escape_spaces(data, offsets)
        mode, char_class, script = MODE_SENTENCEPIECE, _NO_CLASSES, sentencepiece_script_table()
    else:
        mode, char_class, script = P.PATTERNS[settings.pattern], P.char_class_table(), _NO_SCRIPTS
    starts, ends, counts = count_chunk_table(mode, char_class, script, data, offsets)
    chunk_data, chunk_offsets = gather_spans(data, starts, ends)
    return chunk_data, chunk_offsets, counts


_NO_CLASSES = np.zeros(1, np.uint8)
_NO_SCRIPTS = np.zeros(1, np.int16)


def merge_chunk_counts(*tables) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sum chunk count tables (the monoid's operation, over any number of them in one pass); the result lists
    the first table's chunks first, then each later table's new ones in order."""
    if not tables:
        return empty_chunk_counts()
    data, offsets, counts = join_chunk_tables(list(tables))
    return _dedupe(data, offsets[:-1], offsets[1:], counts)


def sort_chunk_tables(tables: list) -> tuple[PackedBytes, np.ndarray]:
    """``(chunks sorted by bytes, their counts)`` of chunk count tables ``(data, offsets, counts)`` summed: the
    canonical table the driver learns from, kept packed (no Python object per chunk). The list is emptied as the
    tables are joined, so each one's memory (a collected row's Arrow buffer) can go once it is copied. The sort
    adds up equal chunks, so it needs no hash table: its memory is the joined bytes, the sorted copy and a few
    int64 per chunk; one table already sorted and distinct is used as it is. Example: ``[(b"ba", [0, 1, 2], [1,
    2]), (b"b", [0, 1], [4])]`` -> ``[b"a", b"b"]``, ``[2, 5]``."""
    if len(tables) == 1:
        data, offsets = as_packed(tables[0][0], tables[0][1])
        counts = np.asarray(tables.pop()[2], np.int64)
        if strictly_increasing(data, offsets[:-1], offsets[1:]):
            return PackedBytes(data, offsets), counts
    else:
        data, offsets, counts = join_chunk_tables(tables)
        release_freed_memory()  # the joined tables' own memory
    order = np.empty(len(counts), np.int64)
    argsort_spans(data, offsets[:-1], offsets[1:], order)
    sorted_data, sorted_offsets, summed = gather_distinct(data, offsets[:-1], offsets[1:], counts, order)
    return PackedBytes(sorted_data, sorted_offsets), summed


def join_chunk_tables(tables: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One packed table ``(data, offsets, counts)`` of the tables one after the other, emptying ``tables`` as it
    copies them (each table's memory can go once it is copied). Example: ``[(b"ab", [0, 2], [1]), (b"c", [0, 1],
    [2])]`` -> ``(b"abc", [0, 2, 3], [1, 2])``."""
    n = sum(len(t[1]) - 1 for t in tables)
    data = np.empty(sum(int(t[1][-1] - t[1][0]) for t in tables), np.uint8)
    offsets = np.zeros(n + 1, np.int64)
    counts = np.empty(n, np.int64)
    tables.reverse()
    at = base = 0
    while tables:
        part_data, part_offsets, part_counts = tables.pop()
        size, m = int(part_offsets[-1] - part_offsets[0]), len(part_offsets) - 1
        data[base:base + size] = part_data[part_offsets[0]:part_offsets[-1]]
        offsets[at + 1:at + m + 1] = part_offsets[1:] - part_offsets[0] + base
        counts[at:at + m] = part_counts
        at, base = at + m, base + size
        del part_data, part_offsets, part_counts
    return data, offsets, counts


def sort_chunks(chunk_data, chunk_offsets, counts) -> tuple[PackedBytes, np.ndarray]:
    """:func:`sort_chunk_tables` of one table: ``(b"ba", [0, 1, 2], [1, 2])`` -> ``[b"a", b"b"]``, ``[2, 1]``."""
    return sort_chunk_tables([(chunk_data, chunk_offsets, counts)])


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


def learn_bpe(chunks: list[bytes], counts, settings: BpeSettings, wanted: int | None = None) -> Merges:
    """Merges for the largest vocab size over a chunk count table (chunks as bytes; any order); at most
    ``wanted`` merges when given (superword BPE's first stage)."""
    settings.validate()
    counts = np.asarray(counts, np.int64)
    if len(chunks) != len(counts):
        raise InputError(f"{len(chunks)} chunks but {len(counts)} counts")
    if wanted is None:
        wanted = max(settings.vocab_sizes) - 256 - len(settings.special_tokens)
    data, offsets = pack(chunks)
    if settings.pretokenizer == "byte_level":
        symbols = data.astype(np.int32)
        left, right, merged = learn_merges(symbols, offsets, counts, np.ones(256, np.int64),
                                             np.full(256, SCRIPT_ANY, np.int64), np.full(256, SCRIPT_ANY, np.int64),
                                             np.full(256, NO_SPACE, np.int64), wanted, settings.min_count,
                                             settings.max_piece_length, *_symbol_strings(np.zeros(0, np.int64),
                                                                                         np.zeros(0, np.int64)),
                                             False)
        return Merges(left, right, merged)
    alphabet = character_alphabet(data, offsets, counts, settings)
    symbols, symbol_offsets = chars_to_symbols(data, offsets, alphabet.char_symbol)
    prefix = len(alphabet.left)
    left, right, merged = learn_merges(symbols, symbol_offsets, counts, alphabet.lengths, alphabet.first,
                                         alphabet.last, alphabet.flags, max(0, wanted - prefix),
                                         settings.min_count, settings.max_piece_length,
                                         *_symbol_strings(alphabet.left, alphabet.right), True)
    n = min(prefix, wanted)
    return Merges(np.concatenate([alphabet.left[:n], left]), np.concatenate([alphabet.right[:n], right]),
                  np.concatenate([alphabet.counts[:n], merged]))


def _symbol_strings(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(bytes uint8, offsets int64)`` of the starting symbols: the 256 bytes, then ``left[k] + right[k]``.
    ``_symbol_strings([104], [105])`` -> symbol 256 is ``b"hi"``."""
    pieces = [bytes([b]) for b in range(256)]
    for a, b in zip(np.asarray(left).tolist(), np.asarray(right).tolist()):
        pieces.append(pieces[a] + pieces[b])
    return pack(pieces, writable=True)


@dataclass
class Alphabet:
    """SentencePiece-style BPE's starting symbols: the 256 bytes, then the pieces that assemble the required
    multi-byte characters from their bytes (merges ``left``/``right``/``counts``, most frequent character
    first), with per-symbol ``lengths`` (characters), ``first``/``last`` scripts and ``flags`` for
    :func:`tokenizer.kernels.bpe_merges.learn_merges`, and ``char_symbol`` (int32 per code point: the symbol of a
    required multi-byte character, else -1)."""

    left: np.ndarray
    right: np.ndarray
    counts: np.ndarray
    lengths: np.ndarray
    first: np.ndarray
    last: np.ndarray
    flags: np.ndarray
    char_symbol: np.ndarray
    required: int


def required_characters(data: np.ndarray, offsets: np.ndarray, counts: np.ndarray,
                        coverage: float) -> list[tuple[int, int]]:
    """SentencePiece's character coverage over a chunk table: ``[(code point, count)]``, most frequent first (ties:
    smaller code point), taken while the share of occurrences already covered is below ``coverage``; NUL and
    invalid bytes are not characters. The tab is an ordinary character, as in sentencepiece 0.2 (whose trainer
    merges it: ``\t\t`` is a piece of its models of indented text)."""
    totals = np.zeros(0x110000, np.int64)
    weighted_char_counts(data, offsets, counts, totals)
    totals[0] = 0
    present = np.flatnonzero(totals)
    order = present[np.lexsort((present, -totals[present]))]
    all_count = int(totals.sum())
    required, accumulated = [], 0
    for cp in order.tolist():
        if all_count and accumulated / all_count >= coverage:
            break
        accumulated += int(totals[cp])
        required.append((cp, int(totals[cp])))
    return required


def character_alphabet(data: np.ndarray, offsets: np.ndarray, counts: np.ndarray,
                       settings: BpeSettings) -> Alphabet:
    """The :class:`Alphabet` of a (space-escaped) chunk table."""
    required = required_characters(data, offsets, counts, settings.character_coverage)
    script = sentencepiece_script_table()
    piece_ids: dict[bytes, int] = {bytes([b]): b for b in range(256)}
    left, right, merge_counts = [], [], []
    lengths = [1] * 256
    first = [SCRIPT_ANY] * 256
    last = [SCRIPT_ANY] * 256
    flags = [FROZEN] * 256
    char_symbol = np.full(0x110000, -1, np.int32)
    for cp, count in required:
        encoded = chr(cp).encode("utf-8", "surrogatepass")
        for k in range(2, len(encoded) + 1):
            if encoded[:k] not in piece_ids:
                piece_ids[encoded[:k]] = 256 + len(left)
                left.append(piece_ids[encoded[:k - 1]])
                right.append(encoded[k - 1])
                merge_counts.append(count)
                lengths.append(1)
                first.append(SCRIPT_ANY)
                last.append(SCRIPT_ANY)
                flags.append(FROZEN)  # a part of a character (the whole one is set below)
        symbol = piece_ids[encoded]
        if len(encoded) > 1:
            char_symbol[cp] = symbol
        if cp == 0x2581:
            flags[symbol] = ALL_SPACE | LEAD_SPACE
        elif cp != 0x00:
            flags[symbol] = NO_SPACE
            first[symbol] = last[symbol] = int(script[cp])
    as_array = lambda values: np.asarray(values, np.int64)  # noqa: E731
    return Alphabet(as_array(left), as_array(right), as_array(merge_counts), as_array(lengths), as_array(first),
                    as_array(last), as_array(flags), char_symbol, len(required))


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


def bpe_table_fingerprint(chunks: list[bytes], counts: np.ndarray) -> str:
    """SHA-256 of the sorted chunk count table (what the merges are a function of)."""
    import hashlib

    digest = hashlib.sha256()
    for chunk, count in zip(chunks, np.asarray(counts, np.int64).tolist()):
        digest.update(len(chunk).to_bytes(8, "little") + chunk + int(count).to_bytes(8, "little"))
    return f"sha256-chunks:{digest.hexdigest()}"


def train_from_table(chunks: list[bytes], counts, settings: BpeSettings,
                     provenance: dict | None = None) -> tuple[Merges, dict[int, Model], str]:
    """``(merges, models, table fingerprint)`` from the sorted chunk table: what the Spark job and the
    single-machine job both run on the driver, so their models are the same bytes. The provenance records the
    table's fingerprint, then ``provenance``."""
    if not chunks:
        raise InputError("the corpus has no text (every document is empty): check --input and --text-column")
    merges = learn_bpe(chunks, counts, settings)
    fingerprint = bpe_table_fingerprint(chunks, counts)
    info = {"chunk_table_fingerprint": fingerprint}
    info.update(provenance or {})
    return merges, build_models(merges, settings, info), fingerprint


def train_bpe_local(texts: Iterable[bytes | str], settings: BpeSettings,
                    provenance: dict | None = None) -> dict[int, Model]:
    """Train on an in-memory corpus (what the Spark job computes, on one machine). ``provenance`` is stored as
    given (pass ``{"chunk_table_fingerprint": ...}`` to match the Spark job's model). Plain BPE only: superword
    settings train with :func:`tokenizer.trainers.superword.train_local`."""
    settings.validate()
    if settings.superword_transition is not None:
        raise ConfigError("train_bpe_local trains plain BPE: train superword settings with "
                          "tokenizer.trainers.superword.train_local")
    table = count_chunks(*pack_texts(texts), settings)
    chunks, counts = sort_chunks(*table)
    if not chunks:
        raise InputError("the corpus has no text (every document is empty)")
    return build_models(learn_bpe(chunks, counts, settings), settings, provenance)
