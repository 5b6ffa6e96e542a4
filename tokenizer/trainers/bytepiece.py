"""BytePiece training (byte-level unigram from an n-gram language model), as pure functions of arrays.

The algorithm is BytePiece's (Su Jianlin's ``bytepiece`` 0.6), split into steps that run per partition (counting)
or on the driver (model building, pruning), so a Spark job and :func:`train_bytepiece_local` compute the same
model bytes for any partitioning::

    chunks   = chunk_texts(data, offsets, settings)                    # per partition: normalize, split
    ngrams   = count_ngrams(*chunks, settings.order)                   # per partition  \\  a monoid:
    ngrams   = merge_counts(ngrams_a, ngrams_b)                        # reduce          }  empty_counts() is 0
    lm       = build_ngram_model(*ngrams, settings)                    # driver (prune by min_count, log probs)
    pieces   = segment_and_count_pieces(lm, *chunks, settings)         # per partition (lm broadcast)
    pieces   = merge_piece_counts(pieces_a, pieces_b)                  # reduce (empty_piece_counts() is 0)
    pruned   = prune_pieces(pieces_list, piece_counts, settings)       # driver: {vocab_size: (pieces, counts)}
    [optional: refine_em rounds: em_e_step per partition, summed; em_m_step on the driver]
    model    = build_model(pieces, counts, settings, provenance)       # driver: tokenizer.model.Model

Steps, as BytePiece does them:

1. Text is NFC-normalized (``normalization="nfc"``; ``"identity"`` keeps any bytes) and split into chunks: a run
   of at most ``max_chunk_chars`` non-newline characters plus the newlines after it (at most 100), so no piece ever
   crosses from a newline back to text; with ``isolate_digits`` every Unicode decimal digit is a chunk of its own.
2. Byte n-grams of length ``1..order`` inside each chunk are counted (integers, exact).
3. N-grams of length >= 2 with count < ``min_count`` are dropped; the 256 single bytes are completed with count 1
   (the total grows by one for each). ``log p(g) = log c(g) - log c(g[:-1])`` (``c(b"")`` = total bytes).
4. Each chunk is segmented by a Viterbi over the n-gram model (a piece's bytes after the first are predicted from
   the previous bytes of the same piece, context capped at ``order - 1`` bytes; with ``ensure_unicode`` no piece
   starts on a UTF-8 continuation byte), and the pieces are counted.
5. Pruning (driver): single bytes are completed with count 1; pieces longer than ``max_piece_length`` or rarer than
   ``min_count`` are re-segmented with the kept pieces (a unigram Viterbi, ``log p = log(c / total)``) and their
   counts moved onto the pieces used; then every kept piece is re-segmented with all kept pieces, and the pieces no
   segmentation uses disappear, repeated until the number of pieces is stable. For each vocab size, largest first
   (nested): if too many, keep the single bytes and the most frequent pieces (longer first on equal counts), move
   the rest's counts as above, and repeat the stability loop.
6. Scores are ``log(count / total count)``; the model is byte level (ids 0..255 are the bytes; then the multi-byte
   pieces sorted by length then bytes, exactly BytePiece's id order minus its 3 leading specials; then the special
   tokens as CONTROL pieces).

What this adds: ``refine_em_rounds`` rounds of unigram EM over the corpus after pruning. Each round segments the
corpus with the current model (E-step: piece counts of the best segmentations, ``refine_em_mode="viterbi"``, or
posterior counts, ``"expected"``, plus the counts of adjacent piece pairs), then re-estimates the counts, drops
pieces nothing uses and (every round but the last) fills the slots BytePiece leaves free (it often stops well
below the requested size) with the most frequent concatenations of two adjacent pieces. On zh.train (NFC, order 6,
min_count 8, 32k), where BytePiece and the plain pipeline give the same pieces, a few viterbi rounds fill most of
the free slots and raise bytes per token on zh.test markedly. With refinement each vocabulary size is
refined on its own, so smaller vocabularies are no longer guaranteed subsets of larger ones.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import math
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

from tokenizer._version import __version__
from tokenizer.errors import ConfigError, InputError
from tokenizer.kernels import ngram as K
from tokenizer.model import LATTICE_SUMS, SCORE_STEP_FLOAT64_SUMS, Model, quantize_scores
from tokenizer.normalizers import NORMALIZERS

NORMALIZATIONS = ("identity", "nfc")
EM_MODES = ("viterbi", "expected")


# ============================================================================================================ settings
@dataclass(frozen=True)
class TrainSettings:
    """Everything that affects a BytePiece model (stored in its provenance).

    Attributes:
        order: longest byte n-gram of the language model (1..7; BytePiece's default 6).
        min_count: n-grams and pieces rarer than this are pruned (BytePiece's default 2).
        max_piece_length: longest piece in bytes (36).
        normalization: ``"identity"`` (lossless, any bytes) or ``"nfc"`` (what BytePiece always applies).
        isolate_digits: every Unicode decimal digit is a chunk (so a piece) of its own.
        ensure_unicode: no piece starts on a UTF-8 continuation byte.
        vocab_sizes: requested vocabulary sizes, each counting the 256 byte pieces and the special tokens; one
            model per size, nested (a smaller vocabulary is a subset of a larger one).
        special_tokens: CONTROL pieces appended after the learned pieces (BytePiece reserves 3 ids likewise).
        refine_em_rounds: rounds of unigram EM after pruning (0 = plain BytePiece; 1 = re-estimate only; more
            rounds also fill free vocabulary slots, see the module docstring).
        refine_em_mode: ``"viterbi"`` (counts from the best segmentation) or ``"expected"`` (posterior counts).
        max_chunk_chars: longest chunk in characters before a newline (BytePiece's 10000; <= 0: no limit).
        max_newline_run: newlines a chunk may end with (BytePiece's 100).
    """

    order: int = 6
    min_count: int = 2
    max_piece_length: int = 36
    normalization: str = "identity"
    isolate_digits: bool = False
    ensure_unicode: bool = True
    vocab_sizes: tuple[int, ...] = (32000,)
    special_tokens: tuple[str, ...] = ("<pad>", "<s>", "</s>")
    refine_em_rounds: int = 0
    refine_em_mode: str = "viterbi"
    max_chunk_chars: int = 10000
    max_newline_run: int = 100

    def __post_init__(self) -> None:
        if isinstance(self.vocab_sizes, int):
            object.__setattr__(self, "vocab_sizes", (self.vocab_sizes,))
        object.__setattr__(self, "vocab_sizes", tuple(self.vocab_sizes))
        object.__setattr__(self, "special_tokens", tuple(self.special_tokens))

    def validate(self) -> "TrainSettings":
        """Raise :class:`ConfigError` saying what to change; returns ``self`` when valid."""
        def integer(name: str, low: int, high: int | None = None, hint: str = "") -> None:
            value = getattr(self, name)
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < low or (
                    high is not None and value > high):
                bound = f"{low}..{high}" if high is not None else f">= {low}"
                raise ConfigError(f"{name}={value!r} is invalid: use an integer {bound}{hint}")

        integer("order", 1, K.MAX_ORDER, " (n-gram keys pack at most 7 bytes; BytePiece uses 6)")
        integer("min_count", 1, hint=" (BytePiece's default is 2; 8 suits ~10 MB corpora)")
        integer("max_piece_length", 1, hint=" (BytePiece's default is 36)")
        integer("refine_em_rounds", 0, hint=" (0 turns the EM refinement off)")
        integer("max_newline_run", 1, hint=" (BytePiece uses 100)")
        if not isinstance(self.max_chunk_chars, (int, np.integer)) or isinstance(self.max_chunk_chars, bool):
            raise ConfigError(f"max_chunk_chars={self.max_chunk_chars!r}: use an integer (10000; <= 0: no limit)")
        if self.normalization not in NORMALIZATIONS:
            raise ConfigError(f"normalization={self.normalization!r} is unknown: use one of {NORMALIZATIONS}")
        if self.refine_em_mode not in EM_MODES:
            raise ConfigError(f"refine_em_mode={self.refine_em_mode!r} is unknown: use one of {EM_MODES}")
        for name in ("isolate_digits", "ensure_unicode"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name}={getattr(self, name)!r}: use true or false")
        if len(set(self.special_tokens)) != len(self.special_tokens) or not all(
                isinstance(s, str) and s for s in self.special_tokens):
            raise ConfigError(f"special_tokens={self.special_tokens!r}: use distinct non-empty strings")
        if not self.vocab_sizes:
            raise ConfigError("vocab_sizes is empty: request at least one vocabulary size, e.g. 32000")
        floor = 256 + len(self.special_tokens)
        for size in self.vocab_sizes:
            if not isinstance(size, (int, np.integer)) or isinstance(size, bool):
                raise ConfigError(f"vocab size {size!r} is not an integer: pass whole numbers like 32000")
            if size < floor:
                raise ConfigError(
                    f"vocab size {size} is below the {floor} ids a byte-level model always holds (256 single bytes "
                    f"+ {len(self.special_tokens)} special tokens): request at least {floor}"
                )
        if len(set(self.vocab_sizes)) != len(self.vocab_sizes):
            raise ConfigError(f"vocab_sizes {self.vocab_sizes} repeats a size: list each size once")
        return self

    def to_dict(self) -> dict:
        out = dataclasses.asdict(self)
        out["vocab_sizes"] = [int(v) for v in self.vocab_sizes]
        out["special_tokens"] = list(self.special_tokens)
        return out


# ============================================================================================================ chunking
_DIGIT_TABLE: np.ndarray | None = None


def _digit_table() -> np.ndarray:
    """uint8[0x110000]: 1 where ``re``'s ``\\d`` matches the code point (``str.isdecimal``, category Nd)."""
    global _DIGIT_TABLE
    if _DIGIT_TABLE is None:
        table = np.zeros(0x110000, dtype=np.uint8)
        for cp in range(0x110000):
            if chr(cp).isdecimal():
                table[cp] = 1
        _DIGIT_TABLE = table
    return _DIGIT_TABLE


_NO_DIGITS = np.zeros(1, dtype=np.uint8)


def _as_packed(data, offsets) -> tuple[np.ndarray, np.ndarray]:
    data = np.ascontiguousarray(np.frombuffer(data, dtype=np.uint8) if isinstance(data, (bytes, bytearray,
                                                                                         memoryview)) else data)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    if data.dtype != np.uint8:
        raise InputError(f"data must be a uint8 array (text bytes), got dtype {data.dtype}")
    if offsets.ndim != 1 or len(offsets) < 1:
        raise InputError("offsets must be a 1-d int64 array of n_texts + 1 positions (use [0] for no text)")
    if len(offsets) > 1 and (offsets[0] < 0 or offsets[-1] > len(data) or np.any(np.diff(offsets) < 0)):
        raise InputError(
            f"offsets must rise from >= 0 to <= len(data) = {len(data)}: rebuild them from the Arrow array's offsets"
        )
    return data, offsets


def pack_texts(texts: Iterable[bytes | str]) -> tuple[np.ndarray, np.ndarray]:
    """Pack texts Arrow-style: ``pack_texts([b"ab", "c"]) -> (uint8 [97, 98, 99], int64 [0, 2, 3])``."""
    blobs = []
    for i, text in enumerate(texts):
        if isinstance(text, str):
            text = text.encode("utf-8", errors="surrogatepass")
        elif not isinstance(text, (bytes, bytearray, memoryview)):
            raise InputError(f"text {i} is a {type(text).__name__}: pass str or bytes")
        blobs.append(bytes(text))
    offsets = np.zeros(len(blobs) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in blobs], out=offsets[1:])
    return np.frombuffer(b"".join(blobs), dtype=np.uint8).copy(), offsets


def chunk_texts(data, offsets, settings: TrainSettings) -> tuple[np.ndarray, np.ndarray]:
    """Normalize documents and split them into BytePiece chunks.

    Args: ``data`` uint8 (all documents' bytes), ``offsets`` int64 ``(n_docs + 1,)``.
    Returns ``(data, chunk_offsets)`` in the same layout, one entry per chunk (empty documents give none).
    Raises :class:`InputError` for invalid UTF-8 under ``normalization="nfc"``.

    Example: ``[b"ab\\n\\ncd"]`` -> chunks ``[b"ab\\n\\n", b"cd"]``; with ``isolate_digits``, ``[b"a12"]`` ->
    ``[b"a", b"1", b"2"]``.
    """
    data, offsets = _as_packed(data, offsets)
    if settings.normalization != "identity":
        data, offsets = NORMALIZERS[settings.normalization]().normalize_batch(data, offsets)
        data = np.ascontiguousarray(data, dtype=np.uint8)
    table = _digit_table() if settings.isolate_digits else _NO_DIGITS
    chunk_offsets = K.chunk_offsets_kernel(data, offsets, int(settings.max_chunk_chars),
                                           int(settings.max_newline_run), bool(settings.isolate_digits), table)
    return data, chunk_offsets


# ============================================================================================================ n-grams
def empty_counts() -> tuple[np.ndarray, np.ndarray]:
    """The empty n-gram count (the monoid's identity): ``(int64[0], int64[0])``."""
    return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)


def count_ngrams(data, offsets, order: int, block_positions: int = 1 << 24) -> tuple[np.ndarray, np.ndarray]:
    """Count every byte n-gram of length ``1..order`` inside each chunk.

    Args: ``data`` uint8, ``offsets`` int64 ``(n_chunks + 1,)`` (from :func:`chunk_texts`), ``order`` 1..7.
    Returns ``(keys, counts)``: int64, sorted by key (= by bytes), distinct; keys packed as
    :mod:`tokenizer.kernels.ngram` documents (bytes at the top, length in the low 3 bits).

    Only one n-gram per position, the longest (``min(order, bytes left)``), is materialized: blocks of at most
    ``block_positions`` such keys are sorted and run-length counted, blocks merged; every shorter n-gram's count is
    then the sum over the longest ones it begins, found in one pass over them in sorted order. (Sorting beat an
    open-addressing hash count here several times over: sequential memory traffic instead of a cache miss per byte.)
    Example: ``count_ngrams(b"aab", [0, 3], 2)`` -> ``{a: 2, aa: 1, ab: 1, b: 1}``.
    """
    if not 1 <= int(order) <= K.MAX_ORDER:
        raise ConfigError(f"order={order} is invalid: use 1..{K.MAX_ORDER}")
    data, offsets = _as_packed(data, offsets)
    if len(offsets) < 2 or offsets[-1] == offsets[0]:
        return empty_counts()
    maximal = empty_counts()
    first = 0
    while first < len(offsets) - 1:
        last = int(np.searchsorted(offsets, offsets[first] + block_positions, side="right")) - 1
        last = min(max(last, first + 1), len(offsets) - 1)
        keys = K.maximal_ngram_keys_kernel(data, offsets[first:last + 1], int(order))
        keys.sort()
        maximal = merge_counts(maximal, K.run_length_counts_kernel(keys))
        first = last
    return K.expand_prefixes_kernel(*maximal)


def merge_counts(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Sum two n-gram counts (each sorted by key, distinct). Associative, commutative, ``empty_counts()`` neutral."""
    return K.merge_sorted_counts_kernel(np.asarray(a[0], np.int64), np.asarray(a[1], np.int64),
                                        np.asarray(b[0], np.int64), np.asarray(b[1], np.int64))


@dataclass
class NgramTable:
    """What the driver gets from the n-gram pass (pipelines.bytepiece.reduce_ngrams): the kept n-grams' packed
    keys and counts (int64), the pass's statistics and what the driver's memory bound dropped."""

    keys: np.ndarray
    counts: np.ndarray
    distinct_ngrams: int
    documents: int
    chunks: int
    chunk_bytes: int
    fingerprint: str
    bound: dict = field(default_factory=dict)  # what the driver's memory bound dropped


@dataclass
class NgramModel:
    """BytePiece's pruned n-gram language model: plain arrays, picklable (a Spark broadcast).

    Attributes:
        keys: int64, sorted packed n-gram keys (all 256 single bytes, longer n-grams with count >= min_count).
        log_probs: float64, ``log c(g) - log c(g[:-1])`` per key (``c(b"")`` = total bytes).
        order, ensure_unicode: as in :class:`TrainSettings`.
    """

    keys: np.ndarray
    log_probs: np.ndarray
    order: int
    ensure_unicode: bool = True
    _table: tuple | None = field(default=None, repr=False, compare=False)

    def lookup_table(self) -> tuple:
        if self._table is None:
            self._table = K.build_lookup_table_kernel(self.keys, self.log_probs)
        return self._table

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_table"] = None
        return state

    def log_prob(self, gram: bytes) -> float:
        """``log p`` of an n-gram, ``-inf`` when pruned: ``model.log_prob(b"ab")``."""
        i = int(np.searchsorted(self.keys, K.pack_ngram(gram)))
        return float(self.log_probs[i]) if i < len(self.keys) and self.keys[i] == K.pack_ngram(gram) else -math.inf


def kept_ngrams(keys: np.ndarray, counts: np.ndarray, min_count: int) -> np.ndarray:
    """bool mask of the packed n-grams the model keeps: every single byte, and longer n-grams with
    ``count >= min_count``. The same rule prunes the merged counts on the driver (:func:`build_ngram_model`) and
    in Spark's reduce tasks, so only what the model needs is collected.
    Example: keys of ``a``, ``ab``, ``abc`` with counts 1, 5, 2 and min_count 3 -> ``[True, True, False]``."""
    return ((keys & 7) == 1) | (counts >= min_count)


def build_ngram_model(keys, counts, settings: TrainSettings) -> NgramModel:
    """Prune the merged n-gram counts and turn them into BytePiece's conditional log probabilities (driver).

    The driver need not hold every n-gram: dropping those of length >= 2 with count < ``min_count`` before
    collecting (a filter after the reduce) gives the same model, as only the single bytes' total and the kept
    n-grams enter it.

    Example: chunk ``b"aab"``, order 2, min_count 1: total = 3 + 253 missing bytes = 256, so
    ``log p(a) = log 2 - log 256`` and ``log p(ab) = log 1 - log 2``.
    """
    keys = np.asarray(keys, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    lengths = keys & 7
    if np.any(lengths > settings.order):
        raise ConfigError(f"the counts hold n-grams longer than order={settings.order}: count with the same order")
    byte_keys = (np.arange(256, dtype=np.int64) << 51) | 1
    total = int(counts[lengths == 1].sum())
    present = np.isin(byte_keys, keys[lengths == 1])
    missing = byte_keys[~present]
    total += len(missing)
    keep = kept_ngrams(keys, counts, settings.min_count)
    keys = np.concatenate([keys[keep], missing])
    counts = np.concatenate([counts[keep], np.ones(len(missing), dtype=np.int64)])
    order = np.argsort(keys, kind="stable")
    keys, counts = keys[order], counts[order]
    logs = np.log(counts.astype(np.float64))
    lengths = keys & 7
    prefix_logs = np.empty(len(keys), dtype=np.float64)
    single = lengths == 1
    prefix_logs[single] = np.log(np.float64(total))
    multi = ~single
    if multi.any():
        shifts = 3 + 8 * (7 - (lengths[multi] - 1))
        prefixes = ((keys[multi] >> shifts) << shifts) | (lengths[multi] - 1)
        where = np.searchsorted(keys, prefixes)
        prefix_logs[multi] = logs[where]
    return NgramModel(keys=keys, log_probs=logs - prefix_logs, order=int(settings.order),
                      ensure_unicode=bool(settings.ensure_unicode))


# ============================================================================================================ pieces
def empty_piece_counts() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The empty piece count: ``(piece_data uint8[0], piece_offsets int64[1] = [0], counts int64[0])``."""
    return np.zeros(0, dtype=np.uint8), np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64)


def segment_chunks(model: NgramModel, data, offsets) -> np.ndarray:
    """Piece end offsets (int64) of the n-gram Viterbi over every chunk (see :func:`segment_and_count_pieces`)."""
    data, offsets = _as_packed(data, offsets)
    table, bits, unigrams, bigrams = model.lookup_table()
    return K.ngram_viterbi_kernel(data, offsets, int(model.order), bool(model.ensure_unicode), table, int(bits),
                                  unigrams, bigrams)


def segment_and_count_pieces(model: NgramModel, data, offsets, settings: TrainSettings
                             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Segment every chunk with the n-gram model and count the pieces (per partition).

    Args: ``data`` uint8, ``offsets`` int64 ``(n_chunks + 1,)`` from :func:`chunk_texts`.
    Returns ``(piece_data uint8, piece_offsets int64 (n + 1,), counts int64 (n,))``, distinct pieces sorted by
    bytes: the buffers of an Arrow binary array plus its counts. Example: with an n-gram model of single bytes
    only, ``[b"aba"]`` -> pieces ``a`` (2), ``b`` (1).
    """
    del settings  # the model carries order and ensure_unicode
    data, offsets = _as_packed(data, offsets)
    if len(offsets) < 2 or offsets[-1] == offsets[0]:
        return empty_piece_counts()
    ends = segment_chunks(model, data, offsets)
    # chunks are contiguous, so every piece starts where the previous one ended
    starts = np.empty_like(ends)
    starts[1:] = ends[:-1]
    starts[0] = offsets[0]
    return K.count_byte_strings_kernel(data, starts, ends)


def merge_piece_counts(a, b) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sum two piece counts ``(piece_data, piece_offsets, counts)`` sorted by bytes; ``empty_piece_counts()`` is
    neutral."""
    return K.merge_byte_string_counts_kernel(np.asarray(a[0], np.uint8), np.asarray(a[1], np.int64),
                                             np.asarray(a[2], np.int64), np.asarray(b[0], np.uint8),
                                             np.asarray(b[1], np.int64), np.asarray(b[2], np.int64))


def piece_list(piece_data, piece_offsets) -> list[bytes]:
    """``(b"aab", [0, 1, 3]) -> [b"a", b"ab"]``."""
    blob = np.asarray(piece_data, np.uint8).tobytes()
    offsets = np.asarray(piece_offsets, np.int64).tolist()
    return [blob[offsets[i]:offsets[i + 1]] for i in range(len(offsets) - 1)]


def pack_pieces(pieces: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """``[b"a", b"ab"] -> (uint8 b"aab", int64 [0, 1, 3])``."""
    return pack_texts(pieces)


# ============================================================================================================ pruning
class PieceModel:
    """A unigram model over a fixed piece list: the pieces' trie and log probabilities (``log(c / total)``).

    Plain arrays; picklable. ``pieces`` sorted by bytes; ``counts`` int64 (or float64 for EM's expected counts).
    """

    def __init__(self, pieces: Sequence[bytes], counts):
        self.pieces = list(pieces)
        self.counts = np.asarray(counts)
        counts64 = self.counts.astype(np.float64)
        with np.errstate(divide="ignore"):
            self.scores = np.log(counts64) - np.log(np.float64(counts64.sum()))
        self.piece_data, self.piece_offsets = pack_pieces(self.pieces)
        self._trie = None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_trie"] = None
        return state

    def trie(self) -> tuple:
        if self._trie is None:
            self._trie = K.build_piece_trie_kernel(self.piece_data, self.piece_offsets)
        return self._trie

    def viterbi_counts(self, data, offsets, weights=None) -> tuple[np.ndarray, int]:
        """``(counts int64[n_pieces], n_tokens)``: pieces of each text's best segmentation, times its weight."""
        data, offsets = _as_packed(data, offsets)
        n_texts = len(offsets) - 1
        weights = np.ones(n_texts, np.int64) if weights is None else np.asarray(weights, np.int64)
        edge_keys, edge_child, bits, node_piece = self.trie()
        counts, n_tokens, n_bad, _ = K.piece_viterbi_counts_kernel(
            data, offsets, weights, edge_keys, edge_child, int(bits), node_piece, self.scores, len(self.pieces),
            False)
        if n_bad:
            raise InputError(f"{n_bad} texts cannot be segmented with these pieces: the 256 single bytes are missing")
        return counts, int(n_tokens)

    def viterbi_counts_and_pairs(self, data, offsets) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
        """Piece counts of the best segmentations plus the counts of adjacent piece pairs, keyed
        ``left_index << 32 | right_index`` (sorted, distinct: a count table :func:`merge_counts` sums)."""
        data, offsets = _as_packed(data, offsets)
        edge_keys, edge_child, bits, node_piece = self.trie()
        counts, _, n_bad, pairs = K.piece_viterbi_counts_kernel(
            data, offsets, np.ones(len(offsets) - 1, np.int64), edge_keys, edge_child, int(bits), node_piece,
            self.scores, len(self.pieces), True)
        if n_bad:
            raise InputError(f"{n_bad} texts cannot be segmented with these pieces: the 256 single bytes are missing")
        pairs.sort()
        return counts, K.run_length_counts_kernel(pairs)

    def expected_counts(self, data, offsets) -> tuple[np.ndarray, float]:
        data, offsets = _as_packed(data, offsets)
        edge_keys, edge_child, bits, node_piece = self.trie()
        return K.piece_forward_backward_kernel(data, offsets, np.ones(len(offsets) - 1), edge_keys, edge_child,
                                               int(bits), node_piece, self.scores, len(self.pieces))

    def segment(self, text: bytes) -> list[bytes]:
        """The best segmentation of one text (for inspection): ``model.segment(b"abc")``."""
        data, offsets = pack_texts([text])
        edge_keys, edge_child, bits, node_piece = self.trie()
        out = []
        # segment by counting one text at a time, then reading the back-pointers is not exposed; do it here
        n = len(text)
        best = [0.0] + [-math.inf] * n
        back = [(0, -1)] * (n + 1)
        for s in range(n):
            if best[s] == -math.inf:
                continue
            node = 0
            for e in range(s + 1, n + 1):
                node = K._child(edge_keys, edge_child, bits, node, data[e - 1])
                if node < 0:
                    break
                p = node_piece[node]
                if p >= 0 and best[s] + self.scores[p] > best[e]:
                    best[e], back[e] = best[s] + self.scores[p], (s, p)
        e = n
        while e > 0:
            s, p = back[e]
            out.append(self.pieces[p])
            e = s
        return out[::-1]


def resegment_counts(keep: Sequence[bytes], keep_counts, items, item_counts) -> np.ndarray:
    """Counts (int64, one per kept piece) gained by segmenting each item with the kept pieces (unigram Viterbi,
    ``log p = log(c / total)``), weighted by the item's count. Per partition when the dropped pieces are many:
    the results of several partitions add up.

    ``items`` is a list of bytes or ``(piece_data, piece_offsets)``. Example: keep ``a, b, ab`` (+ bytes), item
    ``abab`` seen 3 times -> ``ab`` gains 6.
    """
    model = PieceModel(list(keep), keep_counts)
    data, offsets = (np.asarray(items[0], np.uint8), np.asarray(items[1], np.int64)) if isinstance(items, tuple) \
        else pack_texts(items)
    counts, _ = model.viterbi_counts(data, offsets, np.asarray(item_counts, np.int64))
    return counts


_resegment = resegment_counts


def candidate_mask(pieces: Sequence[bytes], counts, settings: TrainSettings) -> np.ndarray:
    """bool per piece: kept as a candidate (a single byte, or at most ``max_piece_length`` bytes and at least
    ``min_count`` occurrences); the others are re-segmented onto the candidates (:func:`resegment_counts`)."""
    lengths = np.fromiter((len(p) for p in pieces), dtype=np.int64, count=len(pieces))
    counts = np.asarray(counts, dtype=np.int64)
    return (lengths == 1) | ((lengths <= settings.max_piece_length) & (counts >= settings.min_count))


def _drop_wasted(keep: list[bytes], counts: np.ndarray) -> tuple[list[bytes], np.ndarray]:
    """Re-segment every piece with all pieces; keep those some segmentation uses; repeat until the size is
    stable (BytePiece's "prune wasted pieces" loop)."""
    while True:
        before = len(keep)
        new_counts = _resegment(keep, counts, keep, counts)
        used = np.flatnonzero(new_counts > 0)
        keep = [keep[i] for i in used]
        counts = new_counts[used]
        if len(keep) == before:
            return keep, counts


def complete_bytes(pieces: list[bytes], counts) -> tuple[list[bytes], np.ndarray]:
    """Add each missing single byte with count 1 (as BytePiece does); result sorted by bytes."""
    counts = np.asarray(counts, dtype=np.int64)
    present = {p for p in pieces if len(p) == 1}
    missing = [bytes([b]) for b in range(256) if bytes([b]) not in present]
    merged = sorted(zip(list(pieces) + missing, counts.tolist() + [1] * len(missing)))
    return [p for p, _ in merged], np.array([c for _, c in merged], dtype=np.int64)


_complete_bytes = complete_bytes


def prune_candidates(keep: Sequence[bytes], keep_counts, settings: TrainSettings
                     ) -> dict[int, tuple[list[bytes], np.ndarray]]:
    """The driver's part of pruning once the dropped pieces' counts were moved onto the candidates: the "wasted
    pieces" loop, then every vocab size (largest first, nested). See :func:`prune_pieces`."""
    order = sorted(range(len(keep)), key=keep.__getitem__)
    keep = [bytes(keep[i]) for i in order]
    keep_counts = np.asarray(keep_counts, dtype=np.int64)[order]
    keep, keep_counts = _drop_wasted(keep, keep_counts)
    results: dict[int, tuple[list[bytes], np.ndarray]] = {}
    for vocab_size in sorted(settings.vocab_sizes, reverse=True):
        cap = int(vocab_size) - len(settings.special_tokens)
        if len(keep) > cap:
            rank = sorted(range(len(keep)), key=lambda i: (len(keep[i]) > 1, -int(keep_counts[i]), -len(keep[i]),
                                                           keep[i]))
            top = sorted(rank[:cap])
            rest = rank[cap:]
            new_keep = [keep[i] for i in top]
            new_counts = keep_counts[top]
            new_counts = new_counts + _resegment(new_keep, new_counts, [keep[i] for i in rest], keep_counts[rest])
            keep, keep_counts = _drop_wasted(new_keep, new_counts)
        results[int(vocab_size)] = (list(keep), keep_counts.copy())
    return results


def prune_pieces(pieces, counts, settings: TrainSettings) -> dict[int, tuple[list[bytes], np.ndarray]]:
    """BytePiece's pruning (driver), for every requested vocab size (nested, largest first).

    Args: ``pieces``: list of bytes, or ``(piece_data, piece_offsets)``; ``counts`` int64, one per piece (distinct
    pieces, any order). Returns ``{vocab_size: (pieces sorted by bytes, counts int64)}``; each piece list holds the
    256 single bytes and at most ``vocab_size - len(special_tokens)`` pieces in all (fewer when the corpus offers
    fewer, as in BytePiece). See the module docstring, step 5.

    The same in three distributable steps (when the distinct pieces are too many for the driver):
    ``mask = candidate_mask(...)`` per partition, collect the candidates (plus :func:`complete_bytes`), broadcast
    them, sum ``resegment_counts(candidates, counts, dropped, dropped_counts)`` over the partitions of dropped
    pieces, add it to the candidates' counts, then :func:`prune_candidates` on the driver.
    """
    settings.validate()
    if isinstance(pieces, tuple):
        pieces = piece_list(*pieces)
    pieces = [bytes(p) for p in pieces]
    counts = np.asarray(counts, dtype=np.int64)
    if len(pieces) != len(counts):
        raise InputError(f"{len(pieces)} pieces but {len(counts)} counts: pass one count per piece")
    pieces, counts = complete_bytes(pieces, counts)
    kept = candidate_mask(pieces, counts, settings)
    keep = [p for p, k in zip(pieces, kept) if k]
    keep_counts = counts[kept]
    drop = [p for p, k in zip(pieces, kept) if not k]
    if drop:
        keep_counts = keep_counts + resegment_counts(keep, keep_counts, drop, counts[~kept])
    return prune_candidates(keep, keep_counts, settings)


# ======================================================================================================= EM refinement
@dataclass
class EStepStatistics:
    """Summable E-step output of one partition: ``pieces`` (float64 or int64 per piece) and the adjacent-pair
    counts ``(keys, counts)`` (key ``left << 32 | right``, sorted). ``a + b`` merges two partitions'."""

    pieces: np.ndarray
    pairs: tuple[np.ndarray, np.ndarray]

    def __add__(self, other: "EStepStatistics") -> "EStepStatistics":
        return EStepStatistics(self.pieces + other.pieces, merge_counts(self.pairs, other.pairs))

    def to_bytes(self) -> bytes:
        """A self-describing blob (for a Spark row): dtype code, three lengths, then the arrays."""
        pieces = np.ascontiguousarray(self.pieces)
        code = b"i" if pieces.dtype.kind == "i" else b"f"
        pieces = pieces.astype("<i8" if code == b"i" else "<f8")
        keys = np.ascontiguousarray(self.pairs[0], "<i8")
        counts = np.ascontiguousarray(self.pairs[1], "<i8")
        header = code + np.array([len(pieces), len(keys)], "<i8").tobytes()
        return header + pieces.tobytes() + keys.tobytes() + counts.tobytes()

    @classmethod
    def from_bytes(cls, blob: bytes) -> "EStepStatistics":
        """Inverse of :meth:`to_bytes`."""
        code = blob[:1]
        n_pieces, n_pairs = np.frombuffer(blob[1:17], "<i8").tolist()
        body = np.frombuffer(blob[17:], "<i8" if code == b"i" else "<f8", count=n_pieces)
        rest = np.frombuffer(blob[17 + 8 * n_pieces:], "<i8")
        pieces = body.astype(np.int64 if code == b"i" else np.float64)
        return cls(pieces, (rest[:n_pairs].astype(np.int64), rest[n_pairs:2 * n_pairs].astype(np.int64)))


def em_e_step(pieces: Sequence[bytes], counts, data, offsets, settings: TrainSettings, with_pairs: bool = False):
    """Per partition: statistics of the chunks under the unigram model ``(pieces, counts)``, summable across
    partitions.

    ``viterbi`` mode: int64 counts of the pieces of the best segmentations; ``expected``: float64 posterior counts.
    Returns that array, or with ``with_pairs`` an :class:`EStepStatistics` that also counts adjacent pieces in the
    best segmentations (the candidates :func:`em_m_step` fills free vocabulary slots with).
    """
    model = PieceModel(pieces, counts)
    pairs = None
    if with_pairs:
        viterbi, pairs = model.viterbi_counts_and_pairs(data, offsets)
    elif settings.refine_em_mode == "viterbi":
        viterbi = model.viterbi_counts(data, offsets)[0]
    piece_stats = viterbi if settings.refine_em_mode == "viterbi" else model.expected_counts(data, offsets)[0]
    return EStepStatistics(piece_stats, pairs) if with_pairs else piece_stats


def em_m_step(pieces: Sequence[bytes], statistics, settings: TrainSettings | None = None,
              capacity: int | None = None, add_pieces: bool = True) -> tuple[list[bytes], np.ndarray]:
    """Driver: the new model from summed E-step statistics.

    Counts become the E-step's (expected counts rounded to integers, so the model stays a function of integers);
    single bytes keep at least 1 (every text stays segmentable); multi-byte pieces with count 0 are removed. With
    ``add_pieces``, the free slots up to ``capacity`` pieces are filled with the most frequent concatenations of
    two adjacent pieces (at most ``max_piece_length`` bytes, at least ``min_count`` occurrences, ties by bytes),
    each starting with its pair count; the next E-step re-estimates them. ``capacity`` defaults to the current
    number of pieces; a plain array of piece statistics (no pairs) only re-estimates.
    Example: pieces ``a, b`` (+ bytes), pair ``(a, b)`` seen 5 times, one free slot -> ``ab`` added with count 5.
    """
    if not isinstance(statistics, EStepStatistics):  # piece statistics alone: re-estimate only
        statistics = EStepStatistics(np.asarray(statistics), empty_counts())
    settings = settings or TrainSettings()
    capacity = len(pieces) if capacity is None else capacity
    stats = np.asarray(statistics.pieces, dtype=np.float64)
    keep_pieces, keep_counts = [], []
    for piece, value in zip(pieces, stats):
        rounded = int(np.floor(value + 0.5))
        if len(piece) == 1:
            keep_pieces.append(piece)
            keep_counts.append(max(1, rounded))
        elif rounded >= 1:
            keep_pieces.append(piece)
            keep_counts.append(rounded)
    free = capacity - len(keep_pieces)
    if add_pieces and free > 0 and len(statistics.pairs[0]):
        present = set(keep_pieces)
        candidates: dict[bytes, int] = {}
        keys, counts = statistics.pairs
        eligible = counts >= 1
        for key, count in zip(keys[eligible].tolist(), counts[eligible].tolist()):
            piece = pieces[key >> 32] + pieces[key & 0xFFFFFFFF]
            if len(piece) <= settings.max_piece_length and piece not in present:
                candidates[piece] = candidates.get(piece, 0) + count
        ranked = sorted((item for item in candidates.items() if item[1] >= settings.min_count),
                        key=lambda item: (-item[1], item[0]))[:free]
        for piece, count in ranked:
            keep_pieces.append(piece)
            keep_counts.append(count)
    order = sorted(range(len(keep_pieces)), key=keep_pieces.__getitem__)
    return [keep_pieces[i] for i in order], np.array([keep_counts[i] for i in order], dtype=np.int64)


def refine_em(pieces: list[bytes], counts, chunk_shards: Sequence[tuple[np.ndarray, np.ndarray]],
              settings: TrainSettings, capacity: int | None = None) -> tuple[list[bytes], np.ndarray]:
    """``settings.refine_em_rounds`` rounds of EM over the chunked corpus (E-step per shard, summed; M-step).

    Every round but the last also fills free slots (up to ``capacity`` pieces, default ``len(pieces)``) with
    frequent adjacent-piece concatenations; the last round only re-estimates, so every score is a count the final
    model's own segmentation produced.
    """
    counts = np.asarray(counts, dtype=np.int64)
    capacity = len(pieces) if capacity is None else capacity
    rounds = settings.refine_em_rounds
    for r in range(rounds):
        total = None
        for data, offsets in chunk_shards:
            stats = em_e_step(pieces, counts, data, offsets, settings, with_pairs=True)
            total = stats if total is None else total + stats
        if total is None:
            break
        pieces, counts = em_m_step(pieces, total, settings, capacity, add_pieces=r < rounds - 1)
    return pieces, counts


# ============================================================================================================ model
def build_model(pieces, counts, settings: TrainSettings, provenance: dict | None = None) -> Model:
    """The byte-level unigram :class:`~tokenizer.model.Model` of the final pieces (driver).

    ``pieces`` must hold all 256 single bytes. ids 0..255 = bytes; then multi-byte pieces sorted by (length, bytes);
    then ``settings.special_tokens`` (CONTROL). Scores: ``log(count / sum of counts)`` (float32 in the file).
    Provenance: shardpiece version, ``algorithm: "bytepiece"``, the settings, plus the caller's entries (e.g. a
    ``corpus_fingerprint``).
    """
    if isinstance(pieces, tuple):
        pieces = piece_list(*pieces)
    pieces = [bytes(p) for p in pieces]
    counts = np.asarray(counts, dtype=np.int64)
    if len(pieces) != len(counts) or len(set(pieces)) != len(pieces):
        raise InputError("build_model needs distinct pieces and one count per piece")
    if np.any(counts <= 0):
        raise InputError("every piece needs a positive count: prune zero-count pieces before building the model")
    by_piece = dict(zip(pieces, counts.tolist()))
    missing = [b for b in range(256) if bytes([b]) not in by_piece]
    if missing:
        raise InputError(f"{len(missing)} single bytes are missing (e.g. {missing[0]}): pass prune_pieces' output, "
                         "which holds all 256")
    total = np.log(np.float64(counts.sum()))
    multi = sorted((p for p in pieces if len(p) > 1), key=lambda p: (len(p), p))
    byte_scores = quantize_scores(np.log(np.array([by_piece[bytes([b])] for b in range(256)], np.float64)) - total,
                                  SCORE_STEP_FLOAT64_SUMS)
    scores = quantize_scores(np.log(np.array([by_piece[p] for p in multi], np.float64)) - total,
                             SCORE_STEP_FLOAT64_SUMS)
    info = {"shardpiece_version": __version__, "algorithm": "bytepiece", "settings": settings.to_dict(),
            "num_pieces": len(pieces), LATTICE_SUMS: "float64"}
    info.update(provenance or {})
    return Model.byte_level(multi, scores, specials=tuple(settings.special_tokens), algorithm="unigram",
                            normalizer={"name": settings.normalization}, provenance=info,
                            byte_scores=byte_scores)


def bytepiece_json(pieces: Sequence[bytes], counts) -> dict:
    """The pieces in BytePiece's model JSON layout (``{base64(piece): [id, text, count]}``, ids from 3 in
    (length, bytes) order), so BytePiece's own ``Tokenizer`` can load a shardpiece result for comparison."""
    rows = sorted(zip(pieces, np.asarray(counts).tolist()), key=lambda t: (len(t[0]), t[0]))
    return {base64.b64encode(p).decode(): [i + 3, p.decode(errors="ignore"), int(c)] for i, (p, c) in enumerate(rows)}


# ============================================================================================================ local
def corpus_fingerprint(texts: Sequence[bytes]) -> str:
    """SHA-256 over the texts (each length-prefixed), hex: a run is keyed by its exact input."""
    digest = hashlib.sha256()
    for text in texts:
        digest.update(len(text).to_bytes(8, "little"))
        digest.update(text)
    return "sha256:" + digest.hexdigest()


def train_bytepiece_local(texts: Sequence[bytes | str], settings: TrainSettings, shard_bytes: int = 8 << 20,
                          provenance: dict | None = None) -> dict[int, Model]:
    """The whole BytePiece pipeline on one machine, through the same per-shard and driver functions a Spark job
    calls; returns ``{vocab_size: Model}``. Shards of about ``shard_bytes`` only change speed, never the result.

    Example: ``train_bytepiece_local(["abcabc"] * 10, TrainSettings(min_count=2, vocab_sizes=(300,)))``.
    """
    settings.validate()
    data_all, offsets_all = pack_texts(texts)
    if len(data_all) == 0:
        raise InputError("the corpus has no text: pass at least one non-empty document")
    fingerprint = corpus_fingerprint([data_all[offsets_all[i]:offsets_all[i + 1]].tobytes()
                                      for i in range(len(offsets_all) - 1)])
    shards = []
    bounds = [0]
    for i in range(1, len(offsets_all)):
        if offsets_all[i] - offsets_all[bounds[-1]] >= shard_bytes or i == len(offsets_all) - 1:
            bounds.append(i)
    for a, b in zip(bounds, bounds[1:]):
        shard_offsets = offsets_all[a:b + 1] - offsets_all[a]
        shards.append(chunk_texts(data_all[offsets_all[a]:offsets_all[b]], shard_offsets, settings))
    ngrams = empty_counts()
    for data, offsets in shards:
        ngrams = merge_counts(ngrams, count_ngrams(data, offsets, settings.order))
    lm = build_ngram_model(*ngrams, settings)
    piece_counts = empty_piece_counts()
    for data, offsets in shards:
        piece_counts = merge_piece_counts(piece_counts, segment_and_count_pieces(lm, data, offsets, settings))
    pruned = prune_pieces(piece_list(piece_counts[0], piece_counts[1]), piece_counts[2], settings)
    models = {}
    for vocab_size, (pieces, counts) in pruned.items():
        if settings.refine_em_rounds:
            pieces, counts = refine_em(pieces, counts, shards, settings,
                                       capacity=vocab_size - len(settings.special_tokens))
        info = {"corpus_fingerprint": fingerprint, "vocab_size_requested": vocab_size}
        info.update(provenance or {})
        models[vocab_size] = build_model(pieces, counts, settings, info)
    return models
