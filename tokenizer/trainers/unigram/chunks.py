"""Sentences -> the unigram trainer's chunk table: :class:`ChunkSplitter` (SentencePiece's sentence loading and
whitespace splitting, a monoid over shards), :func:`split_into_words`, and :func:`chunk_table`, the sorted table
the later steps pack (:func:`tokenizer.packed.pack`)."""

from __future__ import annotations

import re
from collections import Counter
from typing import Iterable

import numpy as np

from tokenizer.kernels.chunk_count import (MODE_BEFORE_SPACE, MODE_BEFORE_SPACE_SYMBOL, MODE_WHOLE_DOCUMENT,
                                           count_chunk_table, gather_spans)
from tokenizer.normalizers.sentencepiece import SentencePieceNormalizer
from tokenizer.packed import check_offsets, pack
from tokenizer.trainers.bytepiece.chunks import pack_texts
from tokenizer.trainers.unigram.settings import BOUNDARY, UNK_CHAR, WS, UnigramSettings


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
        s = self.settings
        if not s.split_by_whitespace:
            return MODE_WHOLE_DOCUMENT
        if s.variant == "byte":
            return MODE_BEFORE_SPACE
        if s.treat_whitespace_as_suffix or s.allow_whitespace_only_pieces:
            return 0
        return MODE_BEFORE_SPACE_SYMBOL

    def count(self, data, offsets) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """``(chunk data uint8, chunk offsets int64, counts int64, skipped sentences)`` of the packed sentences
        ``data[offsets[i]:offsets[i + 1]]``; chunks in order of first occurrence (a monoid:
        ``tokenizer.trainers.bpe.merge_chunk_counts`` adds two tables). The kernels release the GIL, so shards
        can be counted on threads. Example: default settings, ``pack([b"a b", b"a"])`` -> chunks ``▁a``, ``▁b``
        with counts 2, 1 and 0 skipped."""
        s = self.settings
        data = np.ascontiguousarray(data, dtype=np.uint8)
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        check_offsets(offsets, len(data))
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
                data, offsets = gather_spans(data, offsets[:-1][keep], offsets[1:][keep])
            if offsets[0] != 0:
                data, offsets = data[offsets[0]:offsets[-1]], offsets - offsets[0]
            data, offsets = self.normalizer.normalize_batch(data, offsets)
            data, offsets = self._replace_meta_pieces(data, offsets)
        mode = self.kernel_mode
        if mode:
            starts, ends, counts = count_chunk_table(mode, _NO_CLASSES, _NO_SCRIPTS, data, offsets)
            chunk_data, chunk_offsets = gather_spans(data, starts, ends)
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
        data, out_offsets = self.normalizer.normalize_batch(*pack(kept))
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
