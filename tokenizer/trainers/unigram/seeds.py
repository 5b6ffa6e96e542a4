"""The unigram trainer's seed step: the required characters (character coverage) and the seed pieces, the
frequent substrings found with a suffix array over the distinct chunks, each suffix weighted by its chunk's count.

The suffix array is never built whole. Suffixes are grouped by their first symbol (a counting sort), the groups
gathered into buckets of at most ``bucket_suffixes`` suffixes (a larger group is split between its second
symbols), and each bucket is sorted, walked and cut to its best candidates on its own. A seed has two or more
symbols, so all its occurrences start with the same two symbols and fall in one bucket: the seeds are those of the
whole array, while the step holds the symbol text (two bytes per symbol), the positions of one pass of the counting
sort (:data:`POSITION_PASS_SUFFIXES`) and one bucket at a time."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np

from tokenizer.errors import InputError
from tokenizer.kernels import unigram_train as kt
from tokenizer.kernels.chunk_chars import weighted_char_counts
from tokenizer.ordered_threads import map_in_order
from tokenizer.packed import pack
from tokenizer.trainers.unicode_scripts import sentencepiece_scripts
from tokenizer.trainers.unigram.loop import chunk_blocks
from tokenizer.trainers.unigram.settings import BOUNDARY, UnigramSettings

SEED_BUCKET_SUFFIXES = 1 << 19  # suffixes sorted at once by the seed step (its working memory: ~200 bytes each)
PIECE_BYTES_BATCH = 1 << 18  # pieces spelled at once by SymbolTable.piece_bytes
SYMBOL_BLOCK_BYTES = 1 << 20  # chunk bytes turned into symbols at once
SYMBOL_BLOCK = 1 << 20  # symbols counted, or suffixes' second symbols gathered, at once
POSITION_PASS_SUFFIXES = 1 << 24  # suffix positions one pass of the seed step's counting sort writes


@dataclass
class SymbolTable:
    """Chunks as integer symbol ids for the seed step: ``text`` is 0, chunk 0's symbols, 0, chunk 1's symbols, ...,
    0 (0 separates chunks); for text, symbols are characters (ids in code-point order of the covered ones, one id
    for every uncovered character), for bytes ``byte + 1``. Chunk ``i`` is ``text[chunk_start[i]:chunk_end[i]]``,
    both views of ``chunk_bounds`` (each chunk's start, then ``len(text)``; a chunk ends one before the next
    one starts). Example: byte chunks [b"ab", b"c"] -> text [0, 98, 99, 0, 100, 0], chunk_bounds [1, 4, 6],
    chunk_start [1, 4], chunk_end [3, 5]."""

    text: np.ndarray          # uint8 for up to 256 symbols, uint16 up to 65,536, else int32
    chunk_bounds: np.ndarray  # int64, one per chunk and one more
    counts: np.ndarray        # int64 per chunk
    symbols: list[bytes]      # bytes of each symbol id (b"" for 0 and the unknown id)
    symbol_class: np.ndarray  # uint8, see kt.valid_pieces
    symbol_script: np.ndarray  # int32

    @property
    def chunk_start(self) -> np.ndarray:
        return self.chunk_bounds[:-1]

    @property
    def chunk_end(self) -> np.ndarray:
        return self.chunk_bounds[1:] - 1

    def piece_bytes(self, positions: np.ndarray, lengths: np.ndarray) -> list[bytes]:
        """Bytes of the pieces ``text[p:p + n]`` (within one chunk): their symbols' bytes joined."""
        positions = np.asarray(positions, np.int64)
        lengths = np.asarray(lengths, np.int64)
        width = max(map(len, self.symbols))
        spelling = np.zeros((len(self.symbols), max(width, 1)), np.uint8)
        symbol_length = np.zeros(len(self.symbols), np.int64)
        for k, symbol in enumerate(self.symbols):
            spelling[k, :len(symbol)] = np.frombuffer(symbol, np.uint8)
            symbol_length[k] = len(symbol)
        pieces: list[bytes] = []
        for first in range(0, len(positions), PIECE_BYTES_BATCH):
            at, size = positions[first:first + PIECE_BYTES_BATCH], lengths[first:first + PIECE_BYTES_BATCH]
            longest = int(size.max()) if len(size) else 0
            steps = np.arange(longest)
            ids = self.text[np.minimum(at[:, None] + steps, len(self.text) - 1)]
            ids[steps >= size[:, None]] = 0  # symbol 0 spells nothing
            ids = ids.ravel()  # row-major: piece by piece, each symbol in order
            blob = spelling[ids][np.arange(spelling.shape[1]) < symbol_length[ids][:, None]].tobytes()
            ends = np.cumsum(symbol_length[ids].reshape(len(at), longest).sum(axis=1)).tolist()
            pieces += [blob[a:b] for a, b in zip([0] + ends[:-1], ends)]
        return pieces


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
    """The chunks as symbols (:class:`SymbolTable`); ``required`` are the covered characters (text variant).
    ``text`` is uint8 or uint16 where the symbols fit (else int32), written :data:`SYMBOL_BLOCK_BYTES` of chunks at
    a time."""
    data, offsets = pack(chunks)
    n_chunks = len(chunks)
    cuts = chunk_blocks(offsets, SYMBOL_BLOCK_BYTES)
    blocks = list(zip(cuts[:-1].tolist(), cuts[1:].tolist()))
    if settings.variant == "byte":
        units = np.diff(offsets)
        symbols = [b""] + [bytes([b]) for b in range(256)]
        symbol_class = np.zeros(258, np.uint8)
        symbol_class[0] = 2
        symbol_class[ord(" ") + 1] = 1
        symbol_class[257] = 2
        symbol_script = np.full(258, -1, np.int32)
        symbol_of = np.arange(1, 257, dtype=np.int32)  # byte -> symbol
    else:
        units = _characters_per_chunk(data, offsets, blocks)
        alphabet = np.array(sorted(ord(c) for c in required), dtype=np.int64)
        unk_id = len(alphabet) + 1
        symbol_of = np.full(0x110000, unk_id, np.int32)  # code point -> symbol
        symbol_of[alphabet] = np.arange(1, len(alphabet) + 1, dtype=np.int32)  # code-point order ids
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
    units = np.asarray(units, np.int64)
    unit_offsets = np.zeros(n_chunks + 1, np.int64)
    np.cumsum(units, out=unit_offsets[1:])
    chunk_bounds = unit_offsets + np.arange(n_chunks + 1) + 1  # one separator before each chunk
    chunk_start = chunk_bounds[:-1]
    width = np.uint8 if len(symbol_class) <= 1 << 8 else np.uint16 if len(symbol_class) <= 1 << 16 else np.int32
    text = np.zeros(int(unit_offsets[-1]) + n_chunks + 1, width)
    for first, last in blocks:
        block = data[offsets[first]:offsets[last]]
        if settings.variant == "byte":
            values = block
        else:
            values = np.frombuffer(block.tobytes().decode("utf-8").encode("utf-32-le"), dtype="<u4")
        destination = np.repeat(chunk_start[first:last] - unit_offsets[first:last], units[first:last])
        destination += np.arange(unit_offsets[first], unit_offsets[last])
        text[destination] = symbol_of[values]
    return SymbolTable(text, chunk_bounds, np.asarray(counts, np.int64), symbols, symbol_class, symbol_script)


def _characters_per_chunk(data: np.ndarray, offsets: np.ndarray, blocks: list[tuple[int, int]]) -> np.ndarray:
    """int64 UTF-8 characters (bytes that are no continuation byte) of each packed chunk, a block at a time.
    Example: chunks [b"a\xc3\xa9", b""] -> [2, 0]."""
    characters = np.zeros(len(offsets) - 1, np.int64)
    for first, last in blocks:
        lead = (data[offsets[first]:offsets[last]] & 0xC0) != 0x80
        starts = offsets[first:last] - offsets[first]
        nonempty = starts < offsets[first + 1:last + 1] - offsets[first]
        characters[first:last][nonempty] = np.add.reduceat(lead, starts[nonempty], dtype=np.int64)
    return characters


def sorted_suffixes(text: np.ndarray, suffixes: np.ndarray, depth: int) -> np.ndarray:
    """``suffixes`` (int64 start positions in ``text``, integer symbols ending with 0) sorted by their first
    ``depth`` symbols (reading 0 past the end). Suffixes whose first ``depth`` symbols are equal may come in any
    order, which the seed step never looks at: it uses whole groups of equal prefixes, their summed weights and
    any member's string. Example: text [0, 2, 1, 2, 0], suffixes [1, 2, 3], depth 1 -> [2, 1, 3] or [2, 3, 1]."""
    alphabet = int(text.max()) + 1 if len(text) else 1
    bits = max(1, math.ceil(math.log2(alphabet)))
    per_key = max(1, 62 // bits)
    last = len(text) - 1
    keys = []
    for first in range(0, depth, per_key):
        key = np.zeros(len(suffixes), np.int64)
        for k in range(first, min(depth, first + per_key)):
            key <<= bits
            key |= text[np.minimum(suffixes + k, last)]
        keys.append(key)
    return suffixes[np.lexsort(keys[::-1])]


def _pack_groups(bounds: np.ndarray, size: int) -> list[tuple[int, int]]:
    """Consecutive groups (``bounds``: int64 group edges, first 0) gathered into spans of at most ``size`` items,
    whole groups only (a larger group alone). Example: bounds [0, 2, 3, 9, 10], size 4 -> [(0, 3), (3, 9), (9, 10)]."""
    spans, start = [], int(bounds[0])
    for previous, edge in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        if edge - start > size and previous > start:
            spans.append((start, previous))
            start = previous
    if bounds[-1] > start:
        spans.append((start, int(bounds[-1])))
    return spans


def _symbol_counts(values: np.ndarray, n_symbols: int) -> np.ndarray:
    """int64 occurrences of each symbol below ``n_symbols`` in ``values``, counted a block at a time
    (``np.bincount`` makes an int64 copy of what it counts). Example: [2, 0, 2], 3 -> [1, 0, 2]."""
    counts = np.zeros(n_symbols, np.int64)
    for first in range(0, len(values), SYMBOL_BLOCK):
        counts += np.bincount(values[first:first + SYMBOL_BLOCK], minlength=n_symbols)
    return counts


def _positions_of(values: np.ndarray, first_symbol: int, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(positions, group_starts)``: where the symbols ``first_symbol + g`` occur in ``values``, ordered by symbol
    then position (int32 below 2**31 values, else int64), the first ``sizes[g]`` of each; where each group starts
    (int64, ``len(sizes) + 1``). Example: [2, 0, 2, 1], 1, [1, 2] -> ([3, 0, 2], [0, 1, 3])."""
    starts = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=starts[1:])
    positions = np.empty(int(starts[-1]), np.int32 if len(values) < 2 ** 31 else np.int64)
    kt.positions_by_symbol(values, first_symbol, starts, positions)
    return positions, starts


def suffix_buckets(table: SymbolTable, size: int,
                   pass_suffixes: int | None = None) -> Iterator[np.ndarray]:
    """Buckets (int64 suffix start positions) of the suffixes that may start a seed (first symbol not forbidden):
    whole first-symbol groups up to ``size`` suffixes each; a larger group in buckets of whole second-symbol
    groups. Every bucket's suffixes share no two-symbol prefix with another bucket's. The positions are sorted by
    first symbol in passes over the text, each for the symbols of at most ``pass_suffixes`` suffixes (a more
    frequent symbol alone; default :data:`POSITION_PASS_SUFFIXES`)."""
    text = table.text
    n_symbols = len(table.symbol_class)
    sizes = _symbol_counts(text, n_symbols)
    sizes[table.symbol_class == 2] = 0  # separators, unknown and forbidden symbols start no seed
    edges = np.zeros(n_symbols + 1, np.int64)
    np.cumsum(sizes, out=edges[1:])
    for start, stop in _pack_groups(np.unique(edges), pass_suffixes or POSITION_PASS_SUFFIXES):
        first = int(np.searchsorted(edges, start, side="left"))
        last = int(np.searchsorted(edges, stop, side="right")) - 1
        positions, group_starts = _positions_of(text, first, sizes[first:last])
        for lo, hi in _pack_groups(np.unique(group_starts), size):
            suffixes = positions[lo:hi]
            if len(suffixes) <= size:
                yield suffixes.astype(np.int64)
                continue
            yield from _second_symbol_buckets(text, suffixes, n_symbols, size)


def _second_symbol_buckets(text: np.ndarray, suffixes: np.ndarray, n_symbols: int,
                           size: int) -> Iterator[np.ndarray]:
    """Buckets (int64) of whole second-symbol groups, at most ``size`` suffixes each (a larger group alone), of one
    first symbol's ``suffixes``. Each bucket is selected from them in position order (its suffixes are sorted
    later), so the group costs its second symbols (one byte or two each) and a mask per bucket, not a reordered
    copy. Example: text [0, 1, 2, 0, 1, 3, 0, 1, 2, 0], suffixes [1, 4, 7], size 2 -> [1, 7], [4]."""
    second = np.empty(len(suffixes), text.dtype)
    for first in range(0, len(suffixes), SYMBOL_BLOCK):
        second[first:first + SYMBOL_BLOCK] = text[suffixes[first:first + SYMBOL_BLOCK] + 1]
    edges = np.zeros(n_symbols + 1, np.int64)
    np.cumsum(_symbol_counts(second, n_symbols), out=edges[1:])
    for a, b in _pack_groups(np.unique(edges), size):
        low, high = np.searchsorted(edges, a, side="left"), np.searchsorted(edges, b, side="left")
        yield suffixes[(second >= low) & (second < high)].astype(np.int64)


def bucket_candidates(table: SymbolTable, suffixes: np.ndarray,
                      settings: UnigramSettings) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Candidate seeds ``(start, length, frequency)`` (int64) of one bucket: the suffix-tree nodes of 2..max
    symbols (substrings occurring at least twice) and the chunk-final substrings of one distinct chunk, valid
    pieces with a frequency of at least 2."""
    s = settings
    max_len = s.max_sentencepiece_length
    text = table.text
    sa = sorted_suffixes(text, suffixes, max_len + 1)
    lcp = np.empty(len(sa), np.int32)
    kt.clipped_lcp(text, sa, max_len + 1, lcp)
    chunk = np.searchsorted(table.chunk_bounds, sa, side="right") - 1
    weights = table.counts[chunk]
    remaining = table.chunk_bounds[chunk + 1] - 1 - sa  # symbols left in the chunk
    del chunk
    cumulative = np.concatenate([[0], np.cumsum(weights)])
    left, right, depth = (np.empty(len(sa), np.int64) for _ in range(3))
    n_nodes = kt.lcp_interval_nodes(lcp, 2, max_len, left, right, depth)
    left, right = left[:n_nodes], right[:n_nodes]
    node_freq = cumulative[right + 1] - cumulative[left]
    del cumulative
    # chunk-final substrings found in one distinct chunk only (a leaf): frequent when the chunk is
    neighbour = np.maximum(lcp, np.append(lcp[1:], 0))
    leaf = (remaining >= 2) & (remaining <= max_len) & (remaining > neighbour) & (weights >= 2)
    starts = np.concatenate([sa[left], sa[leaf]])
    lengths = np.concatenate([depth[:n_nodes], remaining[leaf]])
    freqs = np.concatenate([node_freq, weights[leaf]])
    valid = np.zeros(len(starts), np.uint8)
    kt.valid_pieces(text, starts, lengths, table.symbol_class, table.symbol_script, s.split_by_whitespace,
                    s.treat_whitespace_as_suffix, s.allow_whitespace_only_pieces, s.split_by_number,
                    s.split_by_unicode_script, s.split_digits, valid)
    keep = (valid == 1) & (freqs >= 2)
    return starts[keep], lengths[keep], freqs[keep]


def _at_least_best(candidates: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
                   limit: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The candidates joined, cut to those scoring (frequency x length) at least the ``limit``-th best score: a
    superset of the best ``limit`` of every larger set that holds them, ties at the cut included."""
    starts, lengths, freqs = (np.concatenate([c[k] for c in candidates]) if candidates else np.zeros(0, np.int64)
                              for k in range(3))
    if len(starts) > limit:
        scores = freqs * lengths
        keep = scores >= np.partition(scores, len(scores) - limit)[len(scores) - limit]
        starts, lengths, freqs = starts[keep], lengths[keep], freqs[keep]
    return starts, lengths, freqs


def seed_pieces(chunks: Sequence[bytes], counts: np.ndarray, settings: UnigramSettings,
                required: Sequence[tuple[str, int]], bucket_suffixes: int = SEED_BUCKET_SUFFIXES,
                threads: int = 1) -> tuple[list[bytes], np.ndarray]:
    """Seed vocabulary ``(pieces, log-probabilities float64)``: the characters (``required``, with counts) then
    the best ``seed_sentencepiece_size`` frequent substrings, scored frequency x length (ties by bytes), as
    SentencePiece. ``bucket_suffixes`` bounds the suffixes sorted at once, ``threads`` how many buckets are worked
    on at once (numpy's sorts and gathers release the GIL); neither changes the seeds."""
    s = settings
    table = symbol_table(chunks, counts, s, [c for c, _ in required])
    limit = s.seed_sentencepiece_size
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    held = 0
    for candidates in map_in_order(lambda suffixes: bucket_candidates(table, suffixes, s),
                                   suffix_buckets(table, bucket_suffixes), threads):
        found.append(candidates)
        held += len(found[-1][0])
        if held > 2 * limit:
            found = [_at_least_best(found, limit)]
            held = len(found[0][0])
    starts, lengths, freqs = _at_least_best(found, limit)
    scores = freqs * lengths
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
