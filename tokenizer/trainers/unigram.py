"""SentencePiece's unigram trainer over a table of (chunk, count), on one machine.

The algorithm follows SentencePiece's ``unigram_model_trainer.cc`` and ``trainer_interface.cc``:

1. sentences are normalized (SentencePiece's normalizer: charsmap, whitespace rules, space -> "▁"), meta pieces in
   the text become boundaries (U+001F, sentencepiece 0.2's boundary; a tab is an ordinary character), and they
   are split into words at "▁" (``split_by_whitespace``); the words
   with their counts are the chunk table (:func:`count_chunks`, a monoid: counts of two shards add up);
2. characters are kept by frequency until ``character_coverage`` of all characters is covered; the rest is the
   unknown character (never inside a piece);
3. seed pieces: every character, plus the ``seed_sentencepiece_size`` substrings of 2..``max_sentencepiece_length``
   characters that are internal nodes of the suffix tree (branching, occurring at least twice) and valid pieces,
   best first by frequency x length. SentencePiece builds a suffix array over the corpus; here it is built over the
   distinct chunks, each suffix weighted by its chunk's count, which yields the same frequencies;
4. EM: ``num_sub_iterations`` rounds of E-step (forward-backward expected counts) and the Bayesian M-step
   (pieces expected less than 0.5 times go, score = digamma(count) - digamma(total)); then loss-based pruning
   keeps ``shrinking_factor`` of the pieces; repeat until at most 1.1 x vocab_size pieces remain;
5. the final vocabulary: required characters first, then the best-scored pieces, meta pieces at their ids.

Expected counts are int64 fixed point (``E_STEP_SCALE``) summed exactly, so a sharded E-step (the Spark pipeline)
gives the same model as one process. The byte-level variant (``variant="byte"``) works on raw bytes: no "▁", no
normalization, every byte a base piece (lossless, like BytePiece), chunks split before each space.

Example::

    settings = UnigramSettings(vocab_size=8000)
    model = train_unigram_local(["Hello world", "hello there"] * 100, settings)
"""

from __future__ import annotations

import functools
import math
import re
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterable, Sequence

import numpy as np

from tokenizer._version import __version__
from tokenizer.errors import ConfigError, InputError
from tokenizer.kernels import unigram_train as kt
from tokenizer.model import (LATTICE_SUMS, SCORE_STEP_FLOAT32_SUMS, SCORE_STEP_FLOAT64_SUMS, Model, PieceType,
                             quantize_scores)

WS = "\u2581".encode()
UNK_CHAR = "\u2585"
E_STEP_SCALE = float(1 << 24)  # expected counts in units of 2**-24: exact sums up to ~5e11 tokens per piece
UNK_PENALTY = 10.0
MIN_EXPECTED = 0.5
MIN_SCORE_PENALTY_DELTA = 0.0001
LOCAL_BLOCK_BYTES = 1 << 18  # chunk bytes per block of the local E-step (fixed: results never depend on threads)
VARIANTS = ("sentencepiece", "byte")
#: What a meta piece (user-defined or control symbol) in the text becomes before the text is split into chunks:
#: a character no piece may hold, as sentencepiece 0.2's ``kPretokenizationBoundaryChar`` (U+001F).
BOUNDARY = b"\x1f"


@dataclass(frozen=True)
class UnigramSettings:
    """Training settings; names and defaults are SentencePiece's (``spm_train --help``)."""

    vocab_size: int = 8000
    variant: str = "sentencepiece"
    character_coverage: float = 0.9995
    seed_sentencepiece_size: int = 1_000_000
    shrinking_factor: float = 0.75
    num_sub_iterations: int = 2
    max_sentencepiece_length: int = 16
    max_sentence_length: int = 4192
    split_by_whitespace: bool = True
    split_by_number: bool = True
    split_by_unicode_script: bool = True
    split_digits: bool = False
    treat_whitespace_as_suffix: bool = False
    allow_whitespace_only_pieces: bool = False
    add_dummy_prefix: bool = True
    remove_extra_whitespaces: bool = True
    byte_fallback: bool = False
    charsmap: bytes = b""
    normalizer_name: str = "identity"
    user_defined_symbols: tuple[str, ...] = ()
    control_symbols: tuple[str, ...] = ()
    unk_id: int = 0
    bos_id: int = 1
    eos_id: int = 2
    pad_id: int = -1
    unk_piece: str = "<unk>"
    bos_piece: str = "<s>"
    eos_piece: str = "</s>"
    pad_piece: str = "<pad>"

    def validate(self) -> "UnigramSettings":
        if self.variant not in VARIANTS:
            raise ConfigError(f"unigram variant {self.variant!r} is unknown: use one of {VARIANTS}")
        if not 0.98 <= self.character_coverage <= 1.0:
            raise ConfigError(f"character_coverage={self.character_coverage}: use a value in 0.98..1.0")
        if not 0.0 < self.shrinking_factor < 1.0:
            raise ConfigError(f"shrinking_factor={self.shrinking_factor}: use a value in (0, 1)")
        if self.num_sub_iterations < 1 or self.seed_sentencepiece_size < 1:
            raise ConfigError("num_sub_iterations and seed_sentencepiece_size must be >= 1")
        if not 1 <= self.max_sentencepiece_length <= 512:
            raise ConfigError(f"max_sentencepiece_length={self.max_sentencepiece_length}: use 1..512")
        if self.max_sentence_length < 0:
            raise ConfigError("max_sentence_length must be >= 0 (0: no limit)")
        if self.variant == "sentencepiece":
            meta = self.meta_pieces()
            if len(meta) + 1 > self.vocab_size:
                raise ConfigError(
                    f"vocab_size={self.vocab_size} leaves no room beside {len(meta)} meta pieces (special, "
                    "user-defined, control and byte pieces): raise --vocab-size")
        elif self.vocab_size <= 256 + len(self.byte_specials()):
            raise ConfigError(f"vocab_size={self.vocab_size}: the byte variant needs more than the 256 byte pieces "
                              f"and its {len(self.byte_specials())} control tokens: raise --vocab-size")
        return self

    def byte_specials(self) -> tuple[str, ...]:
        """The byte variant's control tokens, placed after its pieces: bos, eos and pad where their ids are set
        (>= 0), then the control symbols. Defaults: ``("<s>", "</s>")``."""
        ends = ((self.bos_id, self.bos_piece), (self.eos_id, self.eos_piece), (self.pad_id, self.pad_piece))
        return tuple(piece for id_, piece in ends if id_ >= 0) + tuple(self.control_symbols)

    def meta_pieces(self) -> dict[int, tuple[str, int]]:
        """``{id: (piece, PieceType)}`` of the special, control, user-defined and byte pieces, placed as
        SentencePiece's ``InitMetaPieces`` places them. Raises :class:`ConfigError` for clashing ids or names."""
        meta: dict[int, tuple[str, int]] = {}
        for id_, piece in ((self.unk_id, self.unk_piece), (self.bos_id, self.bos_piece),
                           (self.eos_id, self.eos_piece), (self.pad_id, self.pad_piece)):
            if id_ < 0:
                continue
            if id_ >= self.vocab_size or id_ in meta:
                raise ConfigError(f"special id {id_} ({piece}) is outside the vocabulary or used twice: fix the ids")
            meta[id_] = (piece, PieceType.UNKNOWN if piece == self.unk_piece else PieceType.CONTROL)
        if self.unk_id < 0:
            raise ConfigError("unk_id must be >= 0: SentencePiece models need an unknown piece")
        seen: set[str] = set()
        next_id = 0
        extra = [(w, PieceType.CONTROL) for w in self.control_symbols]
        extra += [(w, PieceType.USER_DEFINED) for w in self.user_defined_symbols]
        if self.byte_fallback:
            extra += [(f"<0x{b:02X}>", PieceType.BYTE) for b in range(256)]
        for piece, kind in extra:
            if piece in seen or piece == self.unk_piece or not piece:
                raise ConfigError(f"symbol {piece!r} is empty, duplicated or the unknown piece: remove it")
            seen.add(piece)
            special = {self.bos_piece: self.bos_id, self.eos_piece: self.eos_id, self.pad_piece: self.pad_id}
            if special.get(piece, -1) >= 0:
                meta[special[piece]] = (piece, kind)
                continue
            while next_id in meta:
                next_id += 1
            meta[next_id] = (piece, kind)
        return meta

    def to_dict(self) -> dict:
        out = asdict(self)
        out["charsmap"] = f"<{len(self.charsmap)} bytes>"
        out["user_defined_symbols"] = list(self.user_defined_symbols)
        out["control_symbols"] = list(self.control_symbols)
        return out


# ---------------------------------------------------------------------------------------------- chunks
class ChunkSplitter:
    """Sentences -> normalized chunks, as SentencePiece's ``LoadSentences`` + ``SplitSentencesByWhitespace``.

    Picklable (built from the settings), so a Spark task can rebuild it. :meth:`count` takes packed sentences
    (``data`` uint8, ``offsets`` int64) and returns the chunk count table as arrays plus the number of sentences
    skipped (too long / containing the reserved unknown character U+2585, as SentencePiece skips them): the batch
    is normalized (Numba), meta pieces become a tab (a regex, only over sentences that may hold one), then one
    Numba pass splits and hash-counts the chunks (``count_chunk_table``, a chunk before each "▁" / space, or whole
    sentences). :meth:`split` gives the same as a :class:`collections.Counter`; :meth:`split_python` is the slow,
    obviously-correct twin (per-sentence ``bytes.split`` and ``Counter.update``).

    Example: default settings, ``[b"a b", b"a"]`` -> ``{"▁a": 2, "▁b": 1}``.
    """

    def __init__(self, settings: UnigramSettings):
        self.settings = settings
        self._normalizer = None
        self._meta = None
        self._meta_first = None

    def __getstate__(self):
        return {"settings": self.settings}

    def __setstate__(self, state):
        self.__init__(state["settings"])

    @property
    def normalizer(self):
        if self._normalizer is None:
            from tokenizer.normalizers.sentencepiece import SentencePieceNormalizer

            s = self.settings
            self._normalizer = SentencePieceNormalizer(
                s.charsmap, add_dummy_prefix=s.add_dummy_prefix, remove_extra_whitespaces=s.remove_extra_whitespaces,
                escape_whitespaces=True, treat_whitespace_as_suffix=s.treat_whitespace_as_suffix)
        return self._normalizer

    @property
    def meta_pattern(self):
        if self._meta is None:
            pieces = sorted({p.encode() for p, _ in self.settings.meta_pieces().values()}, key=lambda p: (-len(p), p))
            first = np.zeros(256, bool)
            for p in pieces:
                first[p[0]] = True
            self._meta_first = first  # set before _meta: a thread that sees _meta sees this too
            self._meta = re.compile(b"|".join(re.escape(p) for p in pieces)) if pieces else False
        return self._meta

    @property
    def kernel_mode(self) -> int:
        """``count_chunk_table``'s mode for these settings, or 0 when only :func:`split_into_words` fits
        (``treat_whitespace_as_suffix`` or ``allow_whitespace_only_pieces`` with ``split_by_whitespace``)."""
        from tokenizer.kernels import bpe_train as kb

        s = self.settings
        if not s.split_by_whitespace:
            return kb.MODE_WHOLE_DOCUMENT
        if s.variant == "byte":
            return kb.MODE_BEFORE_SPACE
        if s.treat_whitespace_as_suffix or s.allow_whitespace_only_pieces:
            return 0
        return kb.MODE_BEFORE_SPACE_SYMBOL

    def count(self, data, offsets) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """``(chunk data uint8, chunk offsets int64, counts int64, skipped sentences)`` of the packed sentences
        ``data[offsets[i]:offsets[i + 1]]``; chunks in order of first occurrence (a monoid:
        ``tokenizer.trainers.bpe.merge_chunk_counts`` adds two tables). The kernels release the GIL, so shards
        can be counted on threads. Example: default settings, ``pack([b"a b", b"a"])`` -> chunks ``▁a``, ``▁b``
        with counts 2, 1 and 0 skipped."""
        from tokenizer.kernels import bpe_train as kb

        s = self.settings
        data = np.ascontiguousarray(data, dtype=np.uint8)
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        if len(offsets) < 1 or np.any(np.diff(offsets) < 0) or offsets[0] < 0 or offsets[-1] > len(data):
            raise InputError(f"offsets must be 1-d, rising from >= 0 to <= len(data) = {len(data)}")
        skipped = 0
        if s.variant != "byte":
            lengths = np.diff(offsets)
            drop = np.zeros(len(lengths), bool)
            if s.max_sentence_length:
                drop |= lengths > s.max_sentence_length
            drop |= _holds_unk_char(data, offsets)
            drop &= lengths > 0
            skipped = int(np.count_nonzero(drop))
            if skipped:
                keep = ~drop
                data, offsets = kb.gather_spans(data, offsets[:-1][keep], offsets[1:][keep])
            if offsets[0] != 0:
                data, offsets = data[offsets[0]:offsets[-1]], offsets - offsets[0]
            data, offsets = self.normalizer.normalize_batch(data, offsets)
            data, offsets = self._replace_meta_pieces(data, offsets)
        mode = self.kernel_mode
        if mode:
            starts, ends, counts = kb.count_chunk_table(mode, _NO_CLASSES, _NO_SCRIPTS, data, offsets)
            chunk_data, chunk_offsets = kb.gather_spans(data, starts, ends)
            return chunk_data, chunk_offsets, counts, skipped
        blob = data.tobytes()
        words: Counter = Counter()
        bounds = offsets.tolist()
        for a, b in zip(bounds, bounds[1:]):
            if b > a:
                words.update(split_into_words(blob[a:b], s.treat_whitespace_as_suffix, s.allow_whitespace_only_pieces))
        chunks = list(words)
        chunk_data, chunk_offsets = pack(chunks)
        return chunk_data.copy(), chunk_offsets, np.fromiter((words[c] for c in chunks), np.int64, len(chunks)), skipped

    def _replace_meta_pieces(self, data: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Meta pieces -> ``BOUNDARY`` in normalized sentences; the regex runs only on sentences holding a byte that
        starts a meta piece (a superset of those holding one)."""
        pattern = self.meta_pattern
        if not pattern or not len(data):
            return data, offsets
        positions = np.flatnonzero(self._meta_first[data])
        if not len(positions):
            return data, offsets
        candidates = np.unique(np.searchsorted(offsets, positions, side="right") - 1)
        blob = data.tobytes()
        replaced = []
        for i in candidates.tolist():
            sentence = blob[offsets[i]:offsets[i + 1]]
            new = pattern.sub(BOUNDARY, sentence)
            if new != sentence:
                replaced.append((i, new))
        if not replaced:
            return data, offsets
        lengths = np.diff(offsets)
        parts, previous = [], 0
        for i, new in replaced:
            parts.append(blob[offsets[previous]:offsets[i]])
            parts.append(new)
            lengths[i] = len(new)
            previous = i + 1
        parts.append(blob[offsets[previous]:offsets[-1]])
        new_offsets = np.zeros(len(offsets), np.int64)
        np.cumsum(lengths, out=new_offsets[1:])
        return np.frombuffer(b"".join(parts), np.uint8), new_offsets

    def split(self, texts: Iterable[bytes]) -> tuple[Counter, int]:
        """:meth:`count` of an iterable of sentences (bytes) as ``(Counter of chunk bytes, skipped)``."""
        from tokenizer.trainers.bytepiece import pack_texts

        chunk_data, chunk_offsets, counts, skipped = self.count(*pack_texts(bytes(t) for t in texts))
        blob = chunk_data.tobytes()
        bounds = chunk_offsets.tolist()
        return Counter({blob[a:b]: c for a, b, c in zip(bounds, bounds[1:], counts.tolist())}), skipped

    def split_python(self, texts: Iterable[bytes]) -> tuple[Counter, int]:
        """The slow twin of :meth:`count`: per sentence in Python (the normalizer still runs as one batch)."""
        s = self.settings
        counts: Counter = Counter()
        skipped = 0
        if s.variant == "byte":
            for text in texts:
                text = bytes(text)
                if not text:
                    continue
                if s.split_by_whitespace:
                    parts = text.split(b" ")
                    if parts[0]:
                        counts[parts[0]] += 1
                    counts.update(b" " + p for p in parts[1:])
                else:
                    counts[text] += 1
            return counts, 0
        unk = UNK_CHAR.encode()
        kept = []
        for text in texts:
            text = bytes(text)
            if not text:
                continue
            if (s.max_sentence_length and len(text) > s.max_sentence_length) or unk in text:
                skipped += 1
                continue
            kept.append(text)
        if not kept:
            return counts, skipped
        offsets = np.zeros(len(kept) + 1, np.int64)
        np.cumsum([len(t) for t in kept], out=offsets[1:])
        data, out_offsets = self.normalizer.normalize_batch(np.frombuffer(b"".join(kept), np.uint8), offsets)
        blob = data.tobytes()
        pattern = self.meta_pattern
        simple = s.split_by_whitespace and not s.treat_whitespace_as_suffix and not s.allow_whitespace_only_pieces
        for i in range(len(kept)):
            sentence = blob[out_offsets[i]:out_offsets[i + 1]]
            if pattern:
                sentence = pattern.sub(BOUNDARY, sentence)
            if not sentence:
                continue
            if not s.split_by_whitespace:
                counts[sentence] += 1
            elif simple:
                parts = sentence.split(WS)
                if parts[0]:
                    counts[parts[0]] += 1
                counts.update(WS + p for p in parts[1:])
            else:
                counts.update(split_into_words(sentence, s.treat_whitespace_as_suffix,
                                               s.allow_whitespace_only_pieces))
        return counts, skipped


_NO_CLASSES = np.zeros(1, np.uint8)
_NO_SCRIPTS = np.zeros(1, np.int16)
_UNK_CHAR_BYTES = np.frombuffer(UNK_CHAR.encode(), np.uint8)


def _holds_unk_char(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """bool per sentence: whether ``data[offsets[i]:offsets[i + 1]]`` contains U+2585 (bytes E2 96 85)."""
    out = np.zeros(len(offsets) - 1, bool)
    if len(data) < 3 or len(offsets) < 2:
        return out
    a, b, c = (int(x) for x in _UNK_CHAR_BYTES)
    hits = np.flatnonzero((data[:-2] == a) & (data[1:-1] == b) & (data[2:] == c))
    if len(hits):
        sentence = np.searchsorted(offsets, hits, side="right") - 1
        inside = (sentence >= 0) & (sentence < len(offsets) - 1)
        sentence, hits = sentence[inside], hits[inside]
        inside = hits + 3 <= offsets[sentence + 1]
        out[sentence[inside]] = True
    return out


def split_into_words(text: bytes, treat_whitespace_as_suffix: bool = False,
                     allow_whitespace_only_pieces: bool = False) -> list[bytes]:
    """SentencePiece's ``SplitIntoWords`` on normalized bytes ("▁" marks whitespace).

    >>> [w.decode() for w in split_into_words("▁a▁▁b".encode())]
    ['▁a', '▁', '▁b']
    """
    chars = text.decode("utf-8", errors="surrogateescape")
    ws = WS.decode()
    words: list[str] = []
    if treat_whitespace_as_suffix:
        if chars:
            words.append("")
        in_ws = False
        for k, c in enumerate(chars):
            is_ws = c == ws
            if is_ws:
                in_ws = True
            elif in_ws:
                if allow_whitespace_only_pieces:
                    words.append("")
                in_ws = False
            words[-1] += c
            if k + 1 < len(chars) and is_ws and not allow_whitespace_only_pieces:
                words.append("")
    else:
        in_ws = False
        for k, c in enumerate(chars):
            is_ws = c == ws
            if k == 0 or (is_ws and (not in_ws or not allow_whitespace_only_pieces)):
                words.append("")
                in_ws = True
            if in_ws and not is_ws:
                in_ws = False
            words[-1] += c
    return [w.encode("utf-8", errors="surrogateescape") for w in words]


def chunk_table(counts: Counter | dict) -> tuple[list[bytes], np.ndarray]:
    """Chunks sorted by bytes and their int64 counts (the canonical order every later step relies on)."""
    chunks = sorted(counts)
    return chunks, np.fromiter((counts[c] for c in chunks), dtype=np.int64, count=len(chunks))


def pack(chunks: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """``(data uint8, offsets int64)`` of byte strings."""
    offsets = np.zeros(len(chunks) + 1, np.int64)
    if chunks:
        np.cumsum(np.fromiter(map(len, chunks), np.int64, len(chunks)), out=offsets[1:])
    data = np.frombuffer(b"".join(chunks), np.uint8) if chunks else np.zeros(0, np.uint8)
    return data, offsets


# ---------------------------------------------------------------------------------------------- symbols
@dataclass
class SymbolTable:
    """Chunks as int32 symbol ids for the seed step: 0 separates chunks; for text, symbols are characters (ids
    in code-point order of the covered ones, one id for every uncovered character), for bytes ``byte + 1``."""

    text: np.ndarray          # int32, chunks joined with 0
    weights: np.ndarray       # int64 per text position: the count of its chunk (0 at separators)
    to_end: np.ndarray        # int32 per text position: symbols left in its chunk
    symbols: list[bytes]      # bytes of each symbol id (b"" for 0 and the unknown id)
    symbol_class: np.ndarray  # uint8, see kt.valid_pieces
    symbol_script: np.ndarray  # int32
    blob: bytes = b""         # the chunks' bytes, packed
    unit_bytes: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))  # byte offset of each unit, + end
    chunk_text_start: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # text position of chunks

    def piece_bytes(self, positions: np.ndarray, lengths: np.ndarray) -> list[bytes]:
        """Bytes of the pieces ``text[p:p + n]`` (within one chunk, no unknown symbol): their units' bytes are
        contiguous in ``blob`` (each covered symbol's bytes are the character's own UTF-8, or the byte)."""
        positions = np.asarray(positions, np.int64)
        chunk = np.searchsorted(self.chunk_text_start, positions, side="right") - 1
        unit = positions - chunk - 1
        starts = self.unit_bytes[unit].tolist()
        ends = self.unit_bytes[unit + np.asarray(lengths, np.int64)].tolist()
        blob = self.blob
        return [blob[a:b] for a, b in zip(starts, ends)]


def required_characters(chunks: Sequence[bytes], counts: np.ndarray,
                        coverage: float) -> tuple[list[tuple[str, int]], int]:
    """SentencePiece's character coverage: ``([(char, count)] most frequent first, ties by code point), all``.

    Characters are counted with their chunks' counts; ``BOUNDARY`` (where a meta piece was) is never required.
    """
    from tokenizer.kernels.bpe_train import weighted_char_counts

    data, offsets = pack(chunks)
    per_code_point = np.zeros(0x110000, np.int64)
    invalid = weighted_char_counts(data, offsets, np.asarray(counts, np.int64), per_code_point)
    if invalid:
        raise InputError("the chunk table holds invalid UTF-8: normalized text must be valid UTF-8 (use the byte "
                         "variant for raw bytes)")
    unique = np.flatnonzero(per_code_point)
    totals = per_code_point[unique]
    keep = (unique != 0) & (unique != 0x20)
    unique, totals = unique[keep], totals[keep]
    all_count = int(totals.sum())
    order = np.lexsort((unique, -totals))
    required, accumulated = [], 0
    for k in order:
        if all_count and accumulated / all_count >= coverage:
            break
        accumulated += int(totals[k])
        if unique[k] == BOUNDARY[0]:
            continue
        required.append((chr(int(unique[k])), int(totals[k])))
    return required, all_count


def symbol_table(chunks: Sequence[bytes], counts: np.ndarray, settings: UnigramSettings,
                 required: Sequence[str]) -> SymbolTable:
    data, offsets = pack(chunks)
    n_chunks = len(chunks)
    if settings.variant == "byte":
        sym = data.astype(np.int32) + 1
        symbols = [b""] + [bytes([b]) for b in range(256)]
        symbol_class = np.zeros(258, np.uint8)
        symbol_class[0] = 2
        symbol_class[ord(" ") + 1] = 1
        symbol_class[257] = 2
        symbol_script = np.full(258, -1, np.int32)
        unit_offsets = offsets
    else:
        from tokenizer.trainers.unicode_scripts import sentencepiece_scripts

        code_points = np.frombuffer(data.tobytes().decode("utf-8").encode("utf-32-le"), dtype="<u4").astype(np.int64)
        starts = np.flatnonzero((data & 0xC0) != 0x80)
        unit_offsets = np.searchsorted(starts, offsets)
        alphabet = np.array(sorted(ord(c) for c in required), dtype=np.int64)
        unk_id = len(alphabet) + 1
        symbol_of = np.full(int(code_points.max()) + 1 if len(code_points) else 1, unk_id, np.int32)
        covered = alphabet[alphabet < len(symbol_of)]
        symbol_of[covered] = np.searchsorted(alphabet, covered).astype(np.int32) + 1  # code-point order ids
        sym = symbol_of[code_points]
        symbols = [b""] + [chr(int(c)).encode() for c in alphabet] + [b""]
        symbol_class = np.zeros(unk_id + 1, np.uint8)
        symbol_script = np.full(unk_id + 1, -1, np.int32)
        symbol_class[0] = symbol_class[unk_id] = 2
        table = sentencepiece_scripts(-2)  # -2: Inherited, valid_pieces' marker for "the previous symbol's script"
        for k, c in enumerate(alphabet.tolist(), start=1):
            if c == 0x2581:
                symbol_class[k] = 1
            elif c in (0, 0x20, BOUNDARY[0], 0x2585) or 0xD800 <= c <= 0xDFFF:
                symbol_class[k] = 2
            elif 0x30 <= c <= 0x39 or 0xFF10 <= c <= 0xFF19:
                symbol_class[k] = 3
            symbol_script[k] = table[c]
    total_units = len(sym)
    unit_offsets = np.asarray(unit_offsets, np.int64)
    unit_chunk = np.repeat(np.arange(n_chunks, dtype=np.int64), np.diff(unit_offsets))
    text = np.zeros(total_units + n_chunks + 1, np.int32)
    # chunk i's units go to [unit_offsets[i] + i + 1, unit_offsets[i+1] + i + 1): a separator before each chunk
    unit_index = np.arange(total_units)
    destination = unit_index + unit_chunk + 1
    text[destination] = sym
    weights = np.zeros(len(text), np.int64)
    weights[destination] = counts[unit_chunk]
    to_end = np.zeros(len(text), np.int32)
    to_end[destination] = (unit_offsets[unit_chunk + 1] - unit_index).astype(np.int32)
    if settings.variant == "byte":
        unit_bytes = np.arange(len(data) + 1, dtype=np.int64)
    else:
        unit_bytes = np.append(starts, len(data)).astype(np.int64)
    chunk_text_start = np.asarray(unit_offsets[:-1], np.int64) + np.arange(n_chunks, dtype=np.int64) + 1
    return SymbolTable(text, weights, to_end, symbols, symbol_class, symbol_script, data.tobytes(), unit_bytes,
                       chunk_text_start)


def suffix_array_prefix(text: np.ndarray, depth: int) -> np.ndarray:
    """Suffix start positions of ``text`` (int32) sorted by their first ``depth`` symbols (prefix doubling with
    numpy's unstable sort, faster than a stable one here: suffixes whose first ``depth`` symbols are equal may
    come in any order, which the seed step never looks at: it uses whole groups of equal prefixes, their summed
    weights and any member's string). Symbols past the end count as smaller than all."""
    n = len(text)
    alphabet = int(text.max()) + 2 if n else 2
    bits = max(1, math.ceil(math.log2(alphabet)))
    per_key = max(1, min(depth, 62 // bits))
    key = np.zeros(n, np.int64)
    padded = np.concatenate([text.astype(np.int64) + 1, np.zeros(per_key, np.int64)])
    for k in range(per_key):
        key = (key << bits) | padded[k:k + n]
    order = np.argsort(key, kind="quicksort")
    sorted_keys = key[order]
    rank = np.empty(n, np.int64)
    rank[order] = np.concatenate([[0], np.cumsum(sorted_keys[1:] != sorted_keys[:-1])]) + 1
    span = per_key
    while span < depth and n:
        following = np.zeros(n, np.int64)
        following[:n - span] = rank[span:]
        key = rank * (n + 2) + following
        order = np.argsort(key, kind="quicksort")
        sorted_keys = key[order]
        rank = np.empty(n, np.int64)
        rank[order] = np.concatenate([[0], np.cumsum(sorted_keys[1:] != sorted_keys[:-1])]) + 1
        span *= 2
    return order.astype(np.int64)


def seed_pieces(chunks: Sequence[bytes], counts: np.ndarray, settings: UnigramSettings,
                required: Sequence[tuple[str, int]]) -> tuple[list[bytes], np.ndarray]:
    """Seed vocabulary ``(pieces, log-probabilities float64)``: the characters (``required``, with counts) then
    the best ``seed_sentencepiece_size`` frequent substrings, scored frequency x length, as SentencePiece."""
    s = settings
    max_len = s.max_sentencepiece_length
    table = symbol_table(chunks, counts, s, [c for c, _ in required])
    text = table.text
    sa = suffix_array_prefix(text, max_len + 1)
    lcp = np.zeros(len(sa), np.int64)
    kt.clipped_lcp(text, sa, max_len + 1, lcp)
    cumulative = np.concatenate([[0], np.cumsum(table.weights[sa])])
    left = np.empty(len(sa), np.int64)
    right = np.empty(len(sa), np.int64)
    depth = np.empty(len(sa), np.int64)
    n_nodes = kt.lcp_interval_nodes(lcp, 2, max_len, left, right, depth)
    node_start = sa[left[:n_nodes]]
    node_len = depth[:n_nodes]
    node_freq = cumulative[right[:n_nodes] + 1] - cumulative[left[:n_nodes]]
    # chunk-final substrings found in one distinct chunk only (a leaf): frequent when the chunk is
    neighbour = np.maximum(lcp, np.append(lcp[1:], 0))
    remaining = table.to_end[sa].astype(np.int64)
    leaf = (remaining >= 2) & (remaining <= max_len) & (remaining > neighbour) & (table.weights[sa] >= 2)
    starts = np.concatenate([node_start, sa[leaf]])
    lengths = np.concatenate([node_len, remaining[leaf]])
    freqs = np.concatenate([node_freq, table.weights[sa][leaf]])
    valid = np.zeros(len(starts), np.uint8)
    kt.valid_pieces(text, starts, lengths, table.symbol_class, table.symbol_script, s.split_by_whitespace,
                    s.treat_whitespace_as_suffix, s.allow_whitespace_only_pieces, s.split_by_number,
                    s.split_by_unicode_script, s.split_digits, valid)
    keep = (valid == 1) & (freqs >= 2)
    starts, lengths, freqs = starts[keep], lengths[keep], freqs[keep]
    scores = freqs * lengths
    limit = s.seed_sentencepiece_size
    if len(scores) > limit:
        threshold = np.partition(scores, len(scores) - limit)[len(scores) - limit]
        above = np.flatnonzero(scores > threshold)
        at = np.flatnonzero(scores == threshold)
    else:
        above, at = np.arange(len(scores)), np.zeros(0, np.int64)
    chosen = list(zip((-scores[above]).tolist(), table.piece_bytes(starts[above], lengths[above])))
    if len(at):
        ties = sorted(table.piece_bytes(starts[at], lengths[at]))[:limit - len(chosen)]
        chosen += [(-int(threshold), p) for p in ties]
    chosen.sort()
    if s.variant == "byte":
        base = [(bytes([b]), c) for b, c in required]
    else:
        base = [(c.encode(), n) for c, n in required]
    pieces = [p for p, _ in base] + [p for _, p in chosen]
    values = np.array([n for _, n in base] + [-v for v, _ in chosen], dtype=np.float64)
    values = np.log(values) - math.log(values.sum())
    return pieces, values


# ---------------------------------------------------------------------------------------------- EM
digamma = kt.digamma  # SentencePiece's digamma (Numba; its Python twin: reference_unigram_train.ref_digamma)


class PieceTrie:
    """Hash trie over a fixed list of pieces; scores change per round, ``-inf`` marks removed pieces.

    Picklable (plain arrays) so a Spark broadcast can carry it with the scores.
    """

    def __init__(self, pieces: Sequence[bytes], byte_mode: bool):
        self.pieces = list(pieces)
        self.byte_mode = bool(byte_mode)
        data, offsets = pack(self.pieces)
        capacity = 1 << max(4, int(len(data) * 2 + 2).bit_length())
        self.table_keys = np.zeros(capacity, np.int64)
        self.table_child = np.zeros(capacity, np.int32)
        self.node_value = np.full(len(data) + 1, -1, np.int32)
        kt.build_hash_trie(data, offsets, np.arange(len(self.pieces), dtype=np.int32), self.table_keys,
                           self.table_child, self.node_value)
        self.max_bytes = int(max((len(p) for p in self.pieces), default=1))

    @functools.cached_property
    def index(self) -> dict[bytes, int]:
        """``{piece: id}``, built on first use (training never needs it; a broadcast trie does not carry it)."""
        return {p: i for i, p in enumerate(self.pieces)}

    def arrays(self):
        return self.table_keys, self.table_child, self.node_value


def e_step(trie: PieceTrie, scores: np.ndarray, data: np.ndarray, offsets: np.ndarray,
           weights: np.ndarray) -> tuple[np.ndarray, float]:
    """Expected counts of one shard of chunks: ``(int64 fixed-point counts per trie piece, sum weight*logZ)``.
    A monoid: shards' results add up (the int64 part exactly)."""
    expected = np.zeros(len(trie.pieces), np.int64)
    active = scores[np.isfinite(scores)]
    unk = float(active.min()) - UNK_PENALTY if len(active) else -UNK_PENALTY
    objective = kt.expected_counts(*trie.arrays(), scores, unk, trie.max_bytes, trie.byte_mode, data, offsets,
                                   weights, E_STEP_SCALE, expected)
    return expected, float(objective)


def m_step(active: np.ndarray, expected_fixed: np.ndarray) -> np.ndarray:
    """New scores (float64, ``-inf`` for dropped pieces) from summed fixed-point expected counts: pieces expected
    fewer than 0.5 times go; the others get ``digamma(count) - digamma(total)`` (SentencePiece's Bayesian EM)."""
    expected = expected_fixed.astype(np.float64) / E_STEP_SCALE
    keep = active & (expected >= MIN_EXPECTED)
    scores = np.empty(len(expected), np.float64)
    total = float(expected[keep].sum())
    kt.bayesian_scores(expected, keep, digamma(total), scores)
    return scores


def viterbi_step(trie: PieceTrie, scores: np.ndarray, data, offsets, weights) -> tuple[np.ndarray, int]:
    """Viterbi piece frequencies of one shard (int64, exact monoid) and its weighted token count."""
    freq = np.zeros(len(trie.pieces), np.int64)
    active = scores[np.isfinite(scores)]
    unk = float(active.min()) - UNK_PENALTY
    tokens = kt.viterbi_counts(*trie.arrays(), scores, unk, trie.max_bytes, trie.byte_mode, data, offsets, weights,
                               freq)
    return freq, int(tokens)


def prune(trie: PieceTrie, scores: np.ndarray, order: np.ndarray, freq: np.ndarray, sentence_total: int,
          desired: int, shrinking_factor: float, threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """SentencePiece's ``PruneSentencePieces``: keep pieces without a second-best segmentation, then those whose
    removal would lose the most likelihood, down to ``max(desired, shrinking_factor * size)`` pieces.

    ``order``: the active pieces' trie ids in SentencePiece's list order. Returns ``(new scores, new order)``.
    ``threads``: the pieces' second-best segmentations are found on that many threads (each piece's alone: the
    same result for any value).
    """
    pieces = [trie.pieces[k] for k in order]
    piece_data, piece_offsets = pack(pieces)
    status, alt_offsets, alt_ids = piece_alternatives(trie, scores, order, piece_data, piece_offsets, threads)
    freq_f = freq.astype(np.float64)
    total = float(freq_f[order].sum())
    log_total = math.log(total) if total > 0 else 0.0
    losses = np.empty(len(order), np.float64)
    kt.pruning_losses(order.astype(np.int64), freq_f, status, alt_offsets, alt_ids, float(sentence_total), total,
                      log_total, losses)
    used = freq[order] != 0
    kept = order[used & (status == 0)].tolist()
    candidate_positions = np.flatnonzero(used & (status == 2))
    candidate_ids = order[candidate_positions]
    ranked = candidate_ids[np.lexsort((candidate_ids, -losses[candidate_positions]))]  # loss desc, then id
    target = max(desired, int(shrinking_factor * len(order)))
    kept.extend(ranked[:max(0, target - len(kept))].tolist())
    new_scores = np.full(len(scores), -np.inf)
    kept_array = np.asarray(kept, np.int64)
    new_scores[kept_array] = scores[kept_array]
    return new_scores, kept_array


def piece_alternatives(trie: PieceTrie, scores: np.ndarray, order: np.ndarray, piece_data: np.ndarray,
                       piece_offsets: np.ndarray, threads: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``kt.piece_alternatives`` over the pieces ``order`` (packed as ``piece_data``/``piece_offsets``), the pieces
    cut into ``threads`` contiguous parts run at once (the kernel releases the GIL; every piece is independent)
    and the parts' ``(status int8, alternative offsets int64, alternative ids int64)`` joined in order."""
    order = np.asarray(order, np.int64)
    unk = float(scores[order].min()) - UNK_PENALTY
    n = len(order)
    cuts = np.unique(np.linspace(0, n, max(1, min(int(threads), n)) + 1).astype(np.int64))

    def part(a: int, b: int):
        data = piece_data[piece_offsets[a]:piece_offsets[b]]
        offsets = piece_offsets[a:b + 1] - piece_offsets[a]
        status = np.zeros(b - a, np.int8)
        alt_offsets = np.zeros(b - a + 1, np.int64)
        alt_ids = np.zeros(max(1, len(data)), np.int64)
        written = kt.piece_alternatives(*trie.arrays(), scores, unk, trie.max_bytes, trie.byte_mode, data, offsets,
                                        order[a:b], status, alt_offsets, alt_ids)
        return status, alt_offsets, alt_ids[:written]

    ranges = [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:])]
    if len(ranges) <= 1:
        results = [part(0, n)]
    else:
        with ThreadPoolExecutor(max_workers=len(ranges)) as pool:
            results = list(pool.map(lambda r: part(*r), ranges))
    status = np.concatenate([r[0] for r in results])
    alt_offsets = np.zeros(n + 1, np.int64)
    base = 0
    for (a, b), r in zip(ranges, results):
        alt_offsets[a + 1:b + 1] = r[1][1:] + base
        base += len(r[2])
    alt_ids = np.concatenate([r[2] for r in results] + [np.zeros(1, np.int64)])
    return status, alt_offsets, alt_ids


# ---------------------------------------------------------------------------------------------- driver loop
@dataclass
class EStepRunner:
    """How the E-step and the Viterbi counts run: ``local`` over packed chunks here, or any callable pair with
    the same signatures (the Spark pipeline passes distributed ones). Both must return exact monoid sums."""

    e_step: Callable[[PieceTrie, np.ndarray], tuple[np.ndarray, float]]
    viterbi: Callable[[PieceTrie, np.ndarray], tuple[np.ndarray, int]]


def chunk_blocks(offsets: np.ndarray, block_bytes: int = LOCAL_BLOCK_BYTES) -> np.ndarray:
    """Boundaries (int64 chunk indices, first 0, last n) of contiguous blocks of about ``block_bytes`` bytes each.

    They depend only on the chunk table, never on the number of threads, so per-block float partials summed in
    block order give the same value for any thread count. Example: offsets [0, 3, 6, 9], 4 -> [0, 2, 3]."""
    n = len(offsets) - 1
    total = int(offsets[-1] - offsets[0]) if n > 0 else 0
    if n <= 0 or total <= block_bytes:
        return np.array([0, max(n, 0)], np.int64)
    targets = offsets[0] + np.arange(1, -(-total // block_bytes)) * block_bytes
    inner = np.searchsorted(offsets, targets, side="left")
    return np.unique(np.concatenate(([0], np.clip(inner, 1, n), [n]))).astype(np.int64)


def local_runner(chunks: Sequence[bytes], counts: np.ndarray, threads: int = 1,
                 block_bytes: int | None = None) -> EStepRunner:
    """The E-step and Viterbi counts over packed chunks in this process, on ``threads`` threads (the kernels
    release the GIL). The chunks are cut into fixed blocks (:func:`chunk_blocks`); the int64 counts add up exactly
    and the float objective is summed in block order, so every thread count gives the same results."""
    if threads < 1:
        raise ConfigError(f"threads={threads}: use 1 or more")
    data, offsets = pack(chunks)
    weights = np.asarray(counts, np.int64)
    blocks = chunk_blocks(offsets, block_bytes or LOCAL_BLOCK_BYTES)
    ranges = [(int(a), int(b)) for a, b in zip(blocks[:-1], blocks[1:])]

    def over_blocks(kernel_name: str, trie: PieceTrie, scores: np.ndarray):
        active = scores[np.isfinite(scores)]
        unk = float(active.min()) - UNK_PENALTY if len(active) else -UNK_PENALTY
        per_block = np.zeros(len(ranges), np.float64)
        n_workers = max(1, min(threads, len(ranges)))
        totals = [np.zeros(len(trie.pieces), np.int64) for _ in range(n_workers)]
        next_block = [0]
        lock = threading.Lock()
        arrays = trie.arrays()

        def work(total: np.ndarray) -> None:
            while True:
                with lock:
                    k = next_block[0]
                    next_block[0] += 1
                if k >= len(ranges):
                    return
                a, b = ranges[k]
                if kernel_name == "e":
                    per_block[k] = kt.expected_counts(*arrays, scores, unk, trie.max_bytes, trie.byte_mode, data,
                                                      offsets[a:b + 1], weights[a:b], E_STEP_SCALE, total)
                else:
                    per_block[k] = kt.viterbi_counts(*arrays, scores, unk, trie.max_bytes, trie.byte_mode, data,
                                                     offsets[a:b + 1], weights[a:b], total)

        if n_workers == 1:
            work(totals[0])
        else:
            with ThreadPoolExecutor(max_workers=n_workers) as pool:
                for future in [pool.submit(work, total) for total in totals]:
                    future.result()
        for other in totals[1:]:
            totals[0] += other  # int64: exact in any order
        extra = 0.0
        for value in per_block.tolist():  # block order: the same float sum for every thread count
            extra += value
        return totals[0], extra

    return EStepRunner(e_step=lambda trie, scores: over_blocks("e", trie, scores),
                       viterbi=lambda trie, scores: (lambda r: (r[0], int(r[1])))(over_blocks("v", trie, scores)))


@dataclass
class TrainReport:
    seed_pieces: int = 0
    required_characters: int = 0
    em_rounds: int = 0
    log: list[str] = field(default_factory=list)


@dataclass
class EmState:
    """Where :func:`run_em` stands after a pruning round: every piece of its trie (bytes, in trie order), their
    float64 scores (``-inf`` once pruned), the surviving pieces' indices (int64, in list order) and the EM rounds
    run. Saving and restoring it gives the same rounds after it, bit for bit, as a run that never stopped."""

    pieces: list[bytes]
    scores: np.ndarray
    order: np.ndarray
    rounds: int


class Checkpoints:
    """Where :func:`run_em` saves its state after each pruning round and finds it again: ``load()`` -> the last
    saved :class:`EmState` or ``None``; ``save(state)``. This one keeps nothing (a run that cannot resume)."""

    def load(self) -> EmState | None:
        return None

    def save(self, state: EmState) -> None:
        pass


def run_em(pieces: list[bytes], scores: np.ndarray, runner: EStepRunner, settings: UnigramSettings,
           sentence_total: int, progress: Callable[[str], None] = lambda m: None,
           report: TrainReport | None = None, threads: int = 1,
           checkpoints: Checkpoints | None = None) -> tuple[list[bytes], np.ndarray]:
    """EM sub-iterations and pruning until at most ``1.1 * vocab_size`` pieces remain (SentencePiece's loop).
    Returns the surviving pieces in list order and their scores (float64). After every pruning round the state
    goes to ``checkpoints``; a saved state found there is where the loop starts (``pieces`` and ``scores`` are
    then not used)."""
    checkpoints = checkpoints or Checkpoints()
    byte_mode = settings.variant == "byte"
    saved = checkpoints.load()
    if saved is not None:
        trie = PieceTrie(saved.pieces, byte_mode)
        scores, order, rounds = np.asarray(saved.scores, np.float64).copy(), np.asarray(saved.order, np.int64), \
            int(saved.rounds)
        progress(f"[em] resumed after round {rounds}: {len(order):,} pieces")
    else:
        trie = PieceTrie(pieces, byte_mode)
        scores = np.asarray(scores, np.float64).copy()
        order = np.arange(len(pieces), dtype=np.int64)
        rounds = 0
    desired = int(settings.vocab_size * 1.1)
    while True:
        for sub in range(settings.num_sub_iterations):
            started = time.perf_counter()
            expected, objective = runner.e_step(trie, scores)
            active = np.isfinite(scores)
            scores = m_step(active, expected)
            order = order[np.isfinite(scores[order])]
            rounds += 1
            progress(f"[em] round {rounds} (sub {sub}): {len(order):,} pieces, objective "
                     f"{-objective / max(sentence_total, 1):.4f}, {time.perf_counter() - started:.1f} s")
        if len(order) <= desired:
            break
        started = time.perf_counter()
        freq, _ = runner.viterbi(trie, scores)
        viterbi_seconds = time.perf_counter() - started
        scores, order = prune(trie, scores, order, freq, sentence_total, desired, settings.shrinking_factor,
                              threads)
        progress(f"[prune] {len(order):,} pieces kept: Viterbi counts {viterbi_seconds:.1f} s, pruning "
                 f"{time.perf_counter() - started - viterbi_seconds:.1f} s")
        if 4 * len(order) < len(trie.pieces):  # rebuild a smaller trie (faster lookups)
            kept = [trie.pieces[k] for k in order]
            kept_scores = scores[order]
            trie = PieceTrie(kept, byte_mode)
            scores = kept_scores.copy()
            order = np.arange(len(kept), dtype=np.int64)
        checkpoints.save(EmState(list(trie.pieces), scores, order, rounds))
    if report is not None:
        report.em_rounds = rounds
    return [trie.pieces[k] for k in order], scores[order]


def finalize(pieces: list[bytes], scores: np.ndarray, required: Sequence[tuple[str, int]],
             settings: UnigramSettings) -> list[tuple[bytes, float]]:
    """SentencePiece's ``FinalizeSentencePieces``: required characters (missing ones at the minimum score plus a
    small penalty, frequent first), then the best pieces, sorted by score (ties by bytes)."""
    score_of = dict(zip(pieces, scores.tolist()))
    min_score = float(scores.min()) if len(scores) else 0.0
    final: dict[bytes, float] = {}
    penalty = 0.0
    if settings.variant == "byte":
        room = settings.vocab_size - 256 - len(settings.byte_specials())
        ranked = sorted(zip(pieces, scores.tolist()), key=lambda x: (-x[1], x[0]))
        chosen = [(p, s) for p, s in ranked if len(p) > 1][:room]
        byte_scores = {p: s for p, s in ranked if len(p) == 1}
        out = []
        for b in range(256):
            piece = bytes([b])
            if piece not in byte_scores:
                byte_scores[piece] = min_score + penalty
                penalty += MIN_SCORE_PENALTY_DELTA
            out.append((piece, byte_scores[piece]))
        return out + chosen
    for char, _ in sorted(required, key=lambda x: (-x[1], x[0])):
        piece = char.encode()
        if piece in score_of:
            final[piece] = score_of[piece]
        else:
            final[piece] = min_score + penalty
            penalty += MIN_SCORE_PENALTY_DELTA
    room = settings.vocab_size - len(settings.meta_pieces())
    for piece, score in sorted(zip(pieces, scores.tolist()), key=lambda x: (-x[1], x[0])):
        if piece in final:
            continue
        if len(final) >= room:
            break
        final[piece] = score
    return sorted(final.items(), key=lambda x: (-x[1], x[0]))


def build_model(final: list[tuple[bytes, float]], settings: UnigramSettings, provenance: dict | None = None) -> Model:
    """The :class:`Model` of finalized pieces: a SentencePiece-compatible unigram model (meta pieces at their
    ids, SentencePiece normalizer) or, for the byte variant, a lossless byte-level model."""
    info = {"shardpiece_version": __version__, "trainer": "unigram", "unigram_settings": settings.to_dict()}
    info.update(provenance or {})
    if settings.variant == "byte":
        byte_scores = quantize_scores([s for _, s in final[:256]], SCORE_STEP_FLOAT64_SUMS).astype(np.float32)
        rest = final[256:]
        return Model.byte_level([p for p, _ in rest], quantize_scores([s for _, s in rest], SCORE_STEP_FLOAT64_SUMS),
                                byte_scores=byte_scores,
                                specials=settings.byte_specials(), provenance={**info, LATTICE_SUMS: "float64"})
    meta = settings.meta_pieces()
    pieces: list[bytes] = []
    scores: list[float] = []
    types: list[int] = []
    position = 0
    size = len(meta) + len(final)
    for id_ in range(size):
        if id_ in meta:
            piece, kind = meta[id_]
            pieces.append(piece.encode())
            scores.append(0.0)
            types.append(int(kind))
        else:
            piece, score = final[position]
            position += 1
            pieces.append(piece)
            scores.append(float(quantize_scores([score], SCORE_STEP_FLOAT32_SUMS)[0]))
            types.append(int(PieceType.NORMAL))
    ids = {p: i for i, p in enumerate(pieces)}

    def special(piece: str) -> int:
        i = ids.get(piece.encode(), -1)
        return i if i >= 0 and types[i] == PieceType.CONTROL else -1

    info["sentencepiece_trainer_spec"] = {
        "model_type": "unigram", "vocab_size": size, "character_coverage": settings.character_coverage,
        "byte_fallback": settings.byte_fallback, "unk_id": settings.unk_id, "bos_id": settings.bos_id,
        "eos_id": settings.eos_id, "pad_id": settings.pad_id, "unk_piece": settings.unk_piece,
        "bos_piece": settings.bos_piece, "eos_piece": settings.eos_piece, "pad_piece": settings.pad_piece,
        "treat_whitespace_as_suffix": settings.treat_whitespace_as_suffix,
        "max_sentencepiece_length": settings.max_sentencepiece_length,
        "split_by_whitespace": settings.split_by_whitespace,
        "user_defined_symbols": list(settings.user_defined_symbols),
        "control_symbols": list(settings.control_symbols),
    }
    info["sentencepiece_normalizer"] = settings.normalizer_name
    from tokenizer.normalizers.sentencepiece import DEFAULT_UNK_SURFACE

    return Model(
        pieces=pieces, scores=np.asarray(scores, np.float32), types=np.asarray(types, np.int8), algorithm="unigram",
        normalizer={"name": "precompiled"} if settings.charsmap else {"name": "identity"},
        charsmap=settings.charsmap,
        pretokenizer={"name": "sentencepiece", "add_dummy_prefix": settings.add_dummy_prefix,
                      "remove_extra_whitespaces": settings.remove_extra_whitespaces, "escape_whitespaces": True,
                      "treat_whitespace_as_suffix": settings.treat_whitespace_as_suffix,
                      "unk_surface": DEFAULT_UNK_SURFACE},
        unk_id=settings.unk_id, bos_id=special(settings.bos_piece), eos_id=special(settings.eos_piece),
        pad_id=special(settings.pad_piece), byte_fallback=settings.byte_fallback, provenance=info,
    )


def train_from_chunks(chunks: list[bytes], counts: np.ndarray, settings: UnigramSettings,
                      runner: EStepRunner | None = None, provenance: dict | None = None,
                      progress: Callable[[str], None] = lambda m: None,
                      report: TrainReport | None = None, threads: int = 1,
                      checkpoints: Checkpoints | None = None) -> Model:
    """Train from a chunk table (sorted chunks, int64 counts); ``runner`` defaults to the local E-step on
    ``threads`` threads (the model's bytes do not depend on ``threads``). ``checkpoints`` keeps the EM loop's
    state after each pruning round (:func:`run_em`); a run that finds one skips the seeds and goes on from it."""
    settings.validate()
    if not chunks:
        raise InputError("the corpus has no text to train on (every sentence is empty or was skipped)")
    report = report if report is not None else TrainReport()
    counts = np.asarray(counts, np.int64)
    if settings.variant == "byte":
        required = [(b, 0) for b in range(256)]
        data, _ = pack(chunks)
        byte_counts = np.zeros(256, np.int64)
        offsets = pack(chunks)[1]
        np.add.at(byte_counts, data, np.repeat(counts, np.diff(offsets)))
        required = [(b, int(byte_counts[b])) for b in range(256) if byte_counts[b] > 0]
    else:
        required, _ = required_characters(chunks, counts, settings.character_coverage)
        if len(required) + len(settings.meta_pieces()) > settings.vocab_size:
            raise ConfigError(
                f"vocab_size={settings.vocab_size} is smaller than the {len(required)} required characters plus "
                f"{len(settings.meta_pieces())} meta pieces: raise --vocab-size or lower --character-coverage")
    report.required_characters = len(required)
    checkpoints = checkpoints or Checkpoints()
    pieces, scores = [], np.zeros(0)
    if checkpoints.load() is None:
        started = time.perf_counter()
        pieces, scores = seed_pieces(chunks, counts, settings, required)
        report.seed_pieces = len(pieces)
        progress(f"[seed] {len(pieces):,} seed pieces ({len(required):,} characters) in "
                 f"{time.perf_counter() - started:.1f} s")
    runner = runner or local_runner(chunks, counts, threads)
    sentence_total = int(counts.sum())
    kept, kept_scores = run_em(pieces, scores, runner, settings, sentence_total, progress, report, threads,
                               checkpoints)
    started = time.perf_counter()
    final = finalize(kept, kept_scores, required, settings)
    model = build_model(final, settings, provenance)
    progress(f"[final] {model.vocab_size:,} pieces finalized and the model built in {time.perf_counter() - started:.1f} s")
    return model


def train_unigram_local(texts: Iterable[bytes | str], settings: UnigramSettings, provenance: dict | None = None,
                        progress: Callable[[str], None] = lambda m: None, threads: int = 1) -> Model:
    """Train on one machine from an iterable of sentences (str or bytes); E-steps on ``threads`` threads."""
    settings.validate()
    from tokenizer.trainers.bpe import sort_chunks
    from tokenizer.trainers.bytepiece import pack_texts

    chunk_data, chunk_offsets, counts, _ = ChunkSplitter(settings).count(*pack_texts(texts))
    chunks, chunk_counts = sort_chunks(chunk_data, chunk_offsets, counts)
    return train_from_chunks(chunks, chunk_counts, settings, provenance=provenance, progress=progress,
                             threads=threads)
