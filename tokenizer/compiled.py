"""The compiled model: the arrays the encode kernels take, built once per model and process from a
:class:`~tokenizer.model.Model` (never pickled: a Tokenizer pickles as its Model and compiles on first use), and the
per-call encoders over them. :class:`~tokenizer.core.Tokenizer` is the API around it.

    >>> from tokenizer.model import Model
    >>> CompiledModel(Model.byte_level([b"ab"], [-1.0])).encode_one(b"abab", -1, -1)
    [256, 256]
"""

from __future__ import annotations

import threading

import numpy as np

from tokenizer.errors import ModelError, unrepresentable_error
from tokenizer.kernels.batch import (ENTRIES, PIECE_BPE, RANKED_BPE, VITERBI, WHOLE, ZEROED_WORDS, cut_marker,
                                     cuts_of, flags, work_sizes)
from tokenizer.kernels.tables import pack_record
from tokenizer.model import LATTICE_SUMS, Model, PieceType
from tokenizer.packed import read_only
from tokenizer.piece_types import byte_piece_value
from tokenizer.shared_ids import SharedIds

MATCHABLE_TYPES = (PieceType.NORMAL, PieceType.USER_DEFINED)
UNK_PENALTY = np.float32(10.0)            # SentencePiece's kUnkPenalty
FLOAT32_MAX = np.float32(np.finfo(np.float32).max)
FLOAT32_TINY = np.float32(np.finfo(np.float32).tiny)  # SentencePiece starts max_score at FLT_MIN
ALL_VALID = np.zeros(0, dtype=np.uint8)
#: the claims of a range no other thread shares (tokenizer.kernels.claims)
NO_CLAIMS = np.zeros(0, dtype=np.int64)
NO_CHAR_CLASS = np.zeros(0, dtype=np.uint8)  # the character classes of a model with no regex pre-split
# Bytes the work arrays hold at first for models that cut documents into segments (encode_range)
WORK_START = 1 << 16
KEEP_WORK_BYTES = 64 << 20  # a thread keeps work arrays up to this size for its next calls (work_arrays)


class CompiledModel:
    """Numpy arrays the kernels need, derived from a :class:`Model` (never pickled; see module docstring).

    Attributes: ``rule``, ``record`` and ``kernel`` (the entry point of :mod:`tokenizer.kernels.batch` and its
    tables), ``segments`` (how that entry cuts a document: ``(char_class, pattern, words, lines)``) and ``cuts``
    (the entry's last argument: :func:`tokenizer.kernels.batch.cut_marker`), ``units`` (compact double array of
    NORMAL and USER_DEFINED pieces, built on first use), ``piece_score`` (unigram lattice scores, of
    ``score_dtype``), ``merge_score`` (float32, BPE priorities), ``is_user_defined`` (uint8), ``byte_to_id``
    (int32[256]), ``byte_mode``, ``split_after_newlines``, ``cut_lines``, ``unk_score`` (scalar of
    ``score_dtype``), ``score_dtype`` (float32, or float64 for models with exact log-count scores),
    ``max_piece_length``.
    """

    #: encode a superword model's chunks from its words' ids (:mod:`tokenizer.kernels.bpe_superword`); False:
    #: replay each chunk whole, the path that defines the ids (tests compare the two)
    superword = True

    def __init__(self, model: Model):
        from tokenizer.added_tokens import added_tokens_of

        types = model.types
        matchable = np.isin(types, np.array(MATCHABLE_TYPES, dtype=np.int8))
        for token in added_tokens_of(model):  # cut out of the text before segmentation by the splitter
            if types[token.id] == PieceType.USER_DEFINED:
                matchable[token.id] = False
        ids = np.flatnonzero(matchable).astype(np.int32)
        keys = [model.pieces[i] for i in ids]
        if any(not k for k in keys):
            raise ModelError("a NORMAL or USER_DEFINED piece is empty: every matched piece needs at least one byte")
        seen: dict[bytes, int] = {}
        for i, k in zip(ids.tolist(), keys):
            if k in seen:
                raise ModelError(f"piece {k!r} appears twice (ids {seen[k]} and {i}): pieces must be distinct")
            seen[k] = i
        self._matchable, self._units = (keys, ids), None  # ``units``' keys; the trie is built on first use
        self.max_piece_length = max((len(k) for k in keys), default=1)

        scores32 = model.scores.astype(np.float32)
        normal = types == PieceType.NORMAL
        min_score = np.float32(min(FLOAT32_MAX, scores32[normal].min())) if normal.any() else FLOAT32_MAX
        max_score = np.float32(max(FLOAT32_TINY, scores32[normal].max())) if normal.any() else FLOAT32_TINY
        self.is_user_defined = ((types == PieceType.USER_DEFINED) & matchable).astype(np.uint8)
        counts = (model.provenance or {}).get("log_count_scores")
        exact = (model.provenance or {}).get("float64_scores") if counts is None else None
        if exact is not None:
            if len(exact) != model.vocab_size:
                raise ModelError(f"float64_scores has {len(exact)} scores for {model.vocab_size} pieces")
            self.piece_score = np.array(exact, dtype=np.float64)
            self.score_dtype = np.float64
            if normal.any():  # the unknown node's score from the same values (tokenizers: min score - 10)
                min_score = self.piece_score[normal].min()
        elif counts is not None:
            counts = counts["counts"]
            if len(counts) != model.vocab_size:
                raise ModelError(f"log_count_scores has {len(counts)} counts for {model.vocab_size} pieces")
            log_total = np.log(sum(int(c) for c in counts))
            self.piece_score = np.array([np.log(int(c)) - log_total if c > 0 else -np.inf for c in counts],
                                        dtype=np.float64)
            self.score_dtype = np.float64
        else:  # float32 scores, summed in float32 (SentencePiece) or float64 (tokenizers' Unigram: see LATTICE_SUMS)
            self.piece_score = scores32.astype(np.float64)
            self.score_dtype = np.float64 if (model.provenance or {}).get(LATTICE_SUMS) == "float64" else np.float32
        lengths = np.fromiter((len(p) for p in model.pieces), dtype=np.float32, count=model.vocab_size)
        user = self.is_user_defined.astype(bool)
        self.piece_score[user] = (lengths[user] * max_score).astype(np.float64) - 0.1
        self.piece_score[~matchable] = -np.inf
        if not np.all(np.isfinite(self.piece_score[matchable])):
            raise ModelError("a matchable piece has no finite score (count 0 in log_count_scores, or a non-finite "
                             "float64_scores value)")
        self.piece_score = self.piece_score.astype(self.score_dtype)
        self.unk_score = self.score_dtype(min_score - UNK_PENALTY) if exact is not None else \
            self.score_dtype(np.float32(min_score - UNK_PENALTY))
        self.merge_score = scores32

        single = np.full(256, -1, dtype=np.int32)
        for i in ids.tolist():
            if len(model.pieces[i]) == 1:
                single[model.pieces[i][0]] = i
        self.byte_mode = bool((single >= 0).all())
        byte_to_id = np.full(256, model.unk_id, dtype=np.int32)
        for i in np.flatnonzero(types == PieceType.BYTE).tolist():
            byte_to_id[byte_piece_value(model.pieces[i])] = i
        self.byte_to_id = byte_to_id
        self.byte_fallback = bool(model.byte_fallback)
        self.unk_id = int(model.unk_id)
        self.split_after_newlines = bool(model.pretokenizer.get("split_after_newlines", False))
        # Viterbi on each line and its newlines on its own (BytePiece's chunks): the same ids where no text is
        # unknown, since no piece spans a line's end (runs of unknown nodes would merge across it)
        self.cut_lines = self.split_after_newlines and self.byte_mode
        self.is_bpe = model.algorithm == "bpe"
        self.has_user_defined = bool(user.any())
        self.byte_level = None  # regex pre-split (+ merge replay for BPE): models from/for Hugging Face tokenizers
        if model.pretokenizer.get("name") == "byte_level":
            from tokenizer.kernels.bpe_ranked import ByteLevelEncoder

            self.byte_level = ByteLevelEncoder(model)

        # The entry point and its record (tokenizer.kernels.batch): kernel(*record, data, offsets, valid, doc_begin,
        # doc_end, bos, eos, *work_arrays(longest), out_ids, out_offsets) -> (total, failed)
        if self.byte_level is not None and self.is_bpe:
            from tokenizer.kernels.bpe_match import build_match_tables
            from tokenizer.kernels.bpe_superword import superword_tables

            encoder = self.byte_level
            left, right, merged = encoder.merges
            match = build_match_tables(self.units, model.pieces, merged, left, right, encoder.byte_to_id,
                                       encoder.pair_table, encoder.bits)
            # a superword model's chunks from their words' ids (needs matching's rule: no merge takes a later part)
            none = np.zeros(0, np.int64)
            word_table, word_bits, phrase_table, phrase_bits, meeting, word_match = (
                match is not None and self.superword and superword_tables(encoder, model.pieces, self.units)
                or (none, 0, none, 0, none, None))
            empty = [np.zeros(0, np.int32)] * 5
            self.rule, self.record = RANKED_BPE, pack_record(
                units=[self.units], ints=[encoder.byte_to_id, *(match or empty), *(word_match or empty)],
                small=[encoder.char_class],
                longs=[encoder.pair_table, flags(encoder.pattern, encoder.bits, encoder.ignore_merges,
                                                 match is not None, word_bits, phrase_bits),
                       word_table, phrase_table, meeting])
            self.segments = (encoder.char_class, encoder.pattern, False, False)
        elif self.byte_level is not None:
            pattern, char_class = max(self.byte_level.pattern, 0), self.byte_level.char_class
            self.segments = (char_class, pattern, False, self.cut_lines and not pattern)
            self.rule, self.record = VITERBI, self.viterbi_record(keys, ids)
        elif self.is_bpe:
            words = _cut_at_words(keys)
            self.rule, self.record = PIECE_BPE, self.piece_bpe_record(keys, ids, model.vocab_size, words)
            self.segments = (NO_CHAR_CLASS, 0, words, False)
        else:
            self.segments = (NO_CHAR_CLASS, 0, False, self.cut_lines)
            self.rule, self.record = VITERBI, self.viterbi_record(keys, ids)
        self.kernel = ENTRIES[self.rule]
        self.cuts = cut_marker(cuts_of(*self.segments[1:]))
        self.vocab_size = model.vocab_size
        self._encode_one = None
        self._shared_ids = None
        self._kept = threading.local()

    @property
    def units(self) -> np.ndarray:
        """The compact double array of the matchable pieces, forward (:mod:`tokenizer.kernels.double_array`): what
        sampling and the BPE records walk; unigram Viterbi walks its own reversed trie, so a unigram model builds
        this one only when it samples."""
        if self._units is None:
            from tokenizer.kernels.double_array import DoubleArray

            self._units = DoubleArray.build(*self._matchable).units
        return self._units

    def viterbi_record(self, keys: list[bytes], ids: np.ndarray) -> tuple:
        """The record of :func:`tokenizer.kernels.batch.viterbi_entry` for the matchable ``keys`` (ids ``ids``),
        cutting documents as ``segments`` says (pattern 0: no pre-split)."""
        char_class, pattern, _, _ = self.segments
        from tokenizer.kernels.char_trie import CharTrie
        from tokenizer.kernels.double_array import DoubleArray, fill_two_byte_steps

        # the reversed pieces: the lattice walks back from where pieces end
        if self.byte_mode:
            units = DoubleArray.build([k[::-1] for k in keys], ids).units
            two_bytes = np.empty(1 << 16, units.dtype)
            fill_two_byte_steps(units, two_bytes)
            pages = blocks = np.zeros(0, np.int32)
        else:  # pieces start and end at characters: a trie over characters, one step per character
            trie = CharTrie.build(keys, ids, reverse=True)
            units, two_bytes, pages, blocks = trie.units, np.zeros(0, trie.units.dtype), trie.pages, trie.blocks
        return pack_record(units=[units, two_bytes],
                           scores=[self.piece_score, np.array([self.unk_score], self.score_dtype)],
                           ints=[self.byte_to_id, pages, blocks], small=[char_class],
                           longs=[flags(self.byte_mode, self.split_after_newlines, self.unk_id, self.byte_fallback,
                                        pattern)])

    def piece_bpe_record(self, keys: list[bytes], ids: np.ndarray, vocab_size: int, words: bool) -> tuple:
        """The record of :func:`tokenizer.kernels.batch.piece_bpe_entry` for the matchable ``keys``."""
        from tokenizer.kernels.bpe_tables import build_piece_pairs

        pair_table, bits, byte_piece, bmp_symbol, pseudo_units, has_pseudo, match = build_piece_pairs(
            keys, ids, self.merge_score, vocab_size, self.byte_mode, self.is_user_defined, self.units)
        match_units, *match_ints = match or [np.zeros(0, self.units.dtype)] + [np.zeros(0, np.int32)] * 5
        return pack_record(units=[self.units, pseudo_units, match_units],
                           ints=[byte_piece, bmp_symbol, self.byte_to_id, *match_ints],
                           small=[self.is_user_defined],
                           longs=[pair_table, flags(self.has_user_defined, self.byte_mode, has_pseudo, vocab_size, bits,
                                                    self.unk_id, self.byte_fallback, words, match is not None)])

    def shared_ids(self) -> SharedIds:
        """The :class:`~tokenizer.shared_ids.SharedIds` of this model's ids (built on first use)."""
        if self._shared_ids is None:
            self._shared_ids = SharedIds(self.vocab_size)
        return self._shared_ids

    # ------------------------------------------------------------------ one document range
    def work_arrays(self, longest: int) -> tuple[np.ndarray, np.ndarray]:
        """The entry point's work arrays ``(wide, narrow)`` for segments of up to ``longest`` bytes
        (:func:`tokenizer.kernels.batch.work_sizes`; they may hold more); refused when the system lacks the memory
        (:func:`tokenizer.memory.check_work_memory`). Each thread keeps its arrays of up to :data:`KEEP_WORK_BYTES`
        for its next calls: fresh pages cost a fault each, and BPE's pre-token cache stays warm."""
        from tokenizer.memory import check_work_memory, fresh_array

        kept = getattr(self._kept, "arrays", None)
        wide, narrow = work_sizes(self.rule, longest)
        if kept is not None and kept[1].shape[0] >= narrow:
            return kept
        wide_dtype = self.score_dtype if self.rule == VITERBI else np.int64
        itemsize = np.dtype(wide_dtype).itemsize
        rounded = work_sizes(self.rule, max(255, 1 << int(longest).bit_length()) - 1)  # room to grow into
        keep = rounded[0] * itemsize + 4 * rounded[1] <= KEEP_WORK_BYTES
        if keep:
            wide, narrow = rounded
        # (a ranked BPE pre-token past BUCKETS_ABOVE also takes a bucket's nodes, 4 bytes per byte, in the kernel)
        in_kernel = 4 * (longest + 1) if self.rule == RANKED_BPE else 0
        check_work_memory(wide * itemsize + 4 * narrow + in_kernel, longest)
        wide_array = fresh_array(wide, wide_dtype)
        if self.rule != VITERBI:
            wide_array[wide - ZEROED_WORDS:] = 0  # an empty pre-token cache and pair memo
        arrays = wide_array, fresh_array(narrow, np.int32)
        if keep:
            self._kept.arrays = arrays
        return arrays

    def encode_range(self, data, offsets, valid, doc_begin, doc_end, bos_id, eos_id, out_ids, out_offsets,
                     claims=NO_CLAIMS):
        """Run the batch kernel on documents ``doc_begin .. doc_end - 1`` (with ``claims``, a range shared with
        other threads, up to its final limit: :mod:`tokenizer.kernels.claims`); returns the id count (raises on
        error).

        The work arrays hold the longest document, or where the model cuts documents into segments it encodes
        on their own (pre-tokens, words, lines: ``segments``), at most :data:`WORK_START` bytes at first: a longer
        segment stops the kernel, which goes on from that segment with arrays that hold it. So a long document of
        ordinary text needs small arrays, and no text is encoded (nor its long segment looked for) twice."""
        data = read_only(data)  # one compilation of the entry: texts from Arrow buffers are read-only
        lengths = offsets[doc_begin + 1:doc_end + 1] - offsets[doc_begin:doc_end]
        longest = int(lengths.max()) if len(lengths) else 0
        size = min(longest, WORK_START) if self.cuts != WHOLE else longest
        start, resume, resume_end, base = doc_begin, -1, -1, 0
        while True:
            written = out_offsets[start - doc_begin:]
            document_start = int(written[0])  # where a resumed document's ids began
            total, failed, stopped, stopped_end = self.kernel(*self.record, data, offsets, valid, start, doc_end,
                                                              claims, resume, resume_end, bos_id, eos_id,
                                                              *self.work_arrays(size), out_ids[base:], written,
                                                              self.cuts)
            if base:
                written += base  # the kernel counted from this call's first id
            if resume >= 0:
                written[0] = document_start
            if stopped < 0:
                break
            base += int(total)
            start, resume, resume_end = int(failed), int(stopped), int(stopped_end)
            size = max(size, resume_end - resume)
        if total < 0:
            raise unrepresentable_error(failed)
        return base + int(total)

    def encode_one(self, data: bytes, bos_id: int, eos_id: int) -> list[int]:
        """Ids of one normalized text (bytes), by :meth:`one_text_encoder`."""
        return self.one_text_encoder()(data, bos_id, eos_id)

    def one_text_encoder(self):
        """``encode(data: bytes, bos_id, eos_id) -> list[int]`` for normalized texts, the one
        :func:`tokenizer.one_text.one_text_encoder` of this model (built on first use)."""
        if self._encode_one is None:
            from tokenizer.one_text import one_text_encoder

            self._encode_one = one_text_encoder(self)
        return self._encode_one


def _cut_at_words(keys: list[bytes]) -> bool:
    """True when SentencePiece-style BPE may encode word by word: "▁" is a piece and no piece has a character
    other than "▁" right before a "▁", so no merge crosses the start of a run of "▁".
    ``_cut_at_words([b"\xe2\x96\x81", b"\xe2\x96\x81a"])`` -> True; with ``b"a\xe2\x96\x81"`` -> False."""
    marker = "\u2581".encode()
    return marker in keys and not any(
        at > 0 and not key[:at].endswith(marker) for key in keys for at in _positions(key, marker))


def _positions(data: bytes, sub: bytes) -> list[int]:
    """Every offset where ``sub`` occurs in ``data``: ``_positions(b"abab", b"ab")`` -> ``[0, 2]``."""
    found, at = [], data.find(sub)
    while at >= 0:
        found.append(at)
        at = data.find(sub, at + 1)
    return found


def encode_split(compiled: CompiledModel, splitter, data: bytes, bos: int, eos: int) -> list[int]:
    """Ids of one raw text with added tokens: each stretch between them encoded on its own."""
    ids = [bos] if bos >= 0 else []
    for part in splitter.split(data):
        if isinstance(part, int):
            ids.append(part)
        else:
            ids.extend(compiled.encode_one(part, -1, -1))
    if eos >= 0:
        ids.append(eos)
    return ids
