"""The unigram trainer's seed step: the required characters (character coverage) and the seed pieces, the
frequent substrings found with a suffix array over the distinct chunks, each suffix weighted by its chunk's count."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from tokenizer.errors import InputError
from tokenizer.kernels import unigram_train as kt
from tokenizer.kernels.chunk_chars import weighted_char_counts
from tokenizer.packed import pack
from tokenizer.trainers.unicode_scripts import sentencepiece_scripts
from tokenizer.trainers.unigram.settings import BOUNDARY, UnigramSettings


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
