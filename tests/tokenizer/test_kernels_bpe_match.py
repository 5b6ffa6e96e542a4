"""Merge replay by matching pieces (long byte-level BPE pre-tokens) vs merge replay's twin, on random merge tables
and texts, and its work on long repetitive pre-tokens: linear in the candidates tried (counted by the kernel)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings

from tokenizer.kernels.bpe_match import MEMO_WORDS, NOT_USABLE, build_match_tables, compatible, matched_bpe_into
from tokenizer.kernels.double_array import DoubleArray
from tokenizer.twins.bpe_match import ref_compatible, ref_matched_bpe
from tests.tokenizer.test_kernels_bpe_ranked import (IDENTITY, WORST_CASES, doubling_merges, encode, merge_table,
                                                     merges_and_text)


def table_pieces(pairs: list[tuple[int, int]]) -> list[bytes]:
    """The bytes of every id: the 256 single bytes, then each merge's two parts joined."""
    pieces = [bytes([b]) for b in range(256)]
    for a, b in pairs:
        pieces.append(pieces[a] + pieces[b])
    return pieces


def match_tables(pairs: list[tuple[int, int]]):
    """``(units, pair_table, bits, tables)`` for merges in rank order (merge m makes id 256 + m), or ``None``
    tables when matching cannot stand for replay."""
    (pair_table, bits), _ = merge_table(pairs)
    pieces = table_pieces(pairs)
    distinct = {}
    for i, piece in enumerate(pieces):
        distinct.setdefault(piece, i)  # a piece made twice: the double array keeps its first id
    units = DoubleArray.build(list(distinct), list(distinct.values())).units
    merged = np.arange(256, 256 + len(pairs))
    left = np.array([a for a, _ in pairs], np.int64)
    right = np.array([b for _, b in pairs], np.int64)
    tables = build_match_tables(units, pieces, merged, left, right, IDENTITY, pair_table, bits)
    return units, pair_table, bits, tables


def matched(model, data: bytes, patience: int = 1 << 40) -> tuple[list[int] | None, int]:
    """``(ids, steps)`` of one pre-token matched (``ids`` None where matching gave way to replay)."""
    units, pair_table, bits, tables = model
    n = len(data) + 1
    stack, ends, dead = np.empty(n, np.int32), np.empty(n, np.int32), np.empty(n, np.int32)
    memo, steps, out = np.zeros(MEMO_WORDS, np.int64), np.zeros(1, np.int64), np.empty(n, np.int32)
    end = matched_bpe_into(units, pair_table, bits, *tables, np.frombuffer(data, np.uint8), 0, len(data), stack,
                           ends, dead, memo, patience, steps, out, 0)
    return (out[:end].tolist() if end >= 0 else None), int(steps[0])


@settings(max_examples=1500, deadline=None)
@given(merges_and_text(16, 60))
def test_matching_equals_merge_replay(case):
    pairs, text = case
    model = match_tables(pairs)
    _, twin = merge_table(pairs)
    expected = ref_matched_bpe(twin, IDENTITY, text)
    if model[3] is None:  # two merges make the same bytes (no model's pieces do): the encoder replays the merges
        pieces = table_pieces(pairs)
        assert len(set(pieces)) < len(pieces)
        return
    assert matched(model, text)[0] == expected


@settings(max_examples=300, deadline=None)
@given(merges_and_text(16, 60))
def test_compatible_equals_its_definition(case):
    """compatible() against replaying the two pieces' bytes, for every pair of usable pieces of the table."""
    pairs, _ = case
    model = match_tables(pairs)
    if model[3] is None:
        return
    _, pair_table, bits, tables = model
    created, split_left, split_right = tables[:3]
    _, twin = merge_table(pairs)
    pieces = table_pieces(pairs)
    usable = [i for i in sorted(set(sum(map(list, pairs), [])) | set(range(256, 256 + len(pairs))))
              if created[i] != NOT_USABLE]
    for a in usable:
        for b in usable:
            assert compatible(pair_table, bits, created, split_left, split_right, a, b) == \
                ref_compatible(twin, IDENTITY, pieces, a, b), (a, b)


def test_compatible_by_hand():
    # a=97, b=98, c=99; (a, b) -> 256 rank 0, (b, c) -> 257 rank 1
    units, pair_table, bits, tables = match_tables([(97, 98), (98, 99)])
    created, split_left, split_right = tables[:3]
    assert created[256] == 0 and split_left[256] == 97 and split_right[256] == 98
    assert tables[3][256] == 97  # prefix_of: "a" is the longest usable proper prefix of "ab"
    assert not compatible(pair_table, bits, created, split_left, split_right, 97, 98)  # a, b merge
    assert compatible(pair_table, bits, created, split_left, split_right, 256, 99)  # "abc" -> ab, c
    assert not compatible(pair_table, bits, created, split_left, split_right, 97, 257)  # "abc" is not a, bc
    assert matched((units, pair_table, bits, tables), b"abcabc")[0] == [256, 99, 256, 99]


def test_unusable_pieces_and_broken_order():
    # (b, c) -> 256 rank 0, (a, b) -> 257 rank 1, (257, c) -> 258 rank 2: "abc" replays to a, bc, so 258 ("abc")
    # is never its own replay and matching must not emit it
    model = match_tables([(98, 99), (97, 98), (257, 99)])
    assert model[3][0][258] == NOT_USABLE and model[3][0][257] == 1
    assert matched(model, b"abcabc")[0] == [97, 256, 97, 256]
    # a merge whose part is made by a later merge: no tables (the encoder replays the merges instead)
    (pair_table, bits), _ = merge_table([(97, 98), (98, 99)])
    pieces = table_pieces([(97, 98), (98, 99)])
    units = DoubleArray.build(pieces, list(range(258))).units
    assert build_match_tables(units, pieces, np.array([256, 257]), np.array([257, 98]), np.array([98, 99]),
                              IDENTITY, pair_table, bits) is None


def test_work_is_linear_on_long_repetitive_pretokens():
    for name, (unit, make) in WORST_CASES.items():
        model = match_tables(doubling_merges(unit))
        _, twin = merge_table(doubling_merges(unit))
        small, large = make(20_000), make(200_000)
        small_ids, small_steps = matched(model, small)
        large_ids, large_steps = matched(model, large)
        assert small_ids == encode(merge_table(doubling_merges(unit))[0], small)[0], name
        # each position is left by a dead end at most once, and tries at most its prefix pieces
        assert large_steps <= 1.5 * 10 * max(small_steps, 1), (name, small_steps, large_steps)
        assert ref_matched_bpe(twin, IDENTITY, small[:3000]) == matched(model, small[:3000])[0], name


def test_a_trained_model_gives_the_same_ids_matched_or_replayed():
    """The batch entry with matching on (pre-tokens of more than MATCH_ABOVE bytes) and off (every pre-token
    replayed), on the sample corpus's en/zh/ja lines (long CJK pre-tokens) and long repetitive texts."""
    import gzip
    import os

    from tokenizer import Tokenizer
    from tokenizer.kernels.tables import part
    from tokenizer.trainers import bpe

    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    lines = []
    for name in ("en", "zh", "ja"):
        with gzip.open(os.path.join(repo, "data", "sample", f"{name}.txt.gz"), "rb") as handle:
            lines.extend(line for line in handle.read().split(b"\n")[:400] if line)
    matching = Tokenizer(bpe.train_bpe_local(lines[::2], bpe.BpeSettings(vocab_sizes=(1500,)))[1500])
    replaying = Tokenizer(matching.model)
    longs = replaying.compiled.record[4]
    flags = part(longs, longs, 14)  # the ranked entry's flags: pattern, bits, ignore_merges, matching, ...
    assert flags[3] == 1
    flags[3] = 0
    texts = lines + [b"a" * 5000, "中".encode() * 3000, b"ab" * 2000, b" " * 3000, bytes(range(256)) * 8]
    assert matching.encode_batch(texts, num_threads=1) == replaying.encode_batch(texts, num_threads=1)
    assert [matching.encode(text) for text in texts[::7]] == [replaying.encode(text) for text in texts[::7]]


def test_matching_gives_way_where_replay_is_cheaper():
    """One-byte pieces (no merge applies): matching stops within its patience and the entry replays the merges;
    runs of doubling pieces (spaces, a CJK character) are matched to the end, with merge replay's ids."""
    from tokenizer.kernels.bpe_match import GIVE_WAY_AFTER

    no_merges = match_tables([(98, 99)])
    ids, steps = matched(no_merges, b"a" * 10_000, GIVE_WAY_AFTER)
    assert ids is None and steps <= GIVE_WAY_AFTER  # one-byte pieces: given way after a few
    spaces = match_tables(doubling_merges(b" ", 5))  # pieces of 1, 2, 4, ... 32 spaces: matched to the end
    ids, steps = matched(spaces, b" " * 10_000 + b"a", GIVE_WAY_AFTER)
    assert ids == encode(merge_table(doubling_merges(b" ", 5))[0], b" " * 10_000 + b"a")[0]
    cjk = match_tables(doubling_merges("中".encode()))
    ids, steps = matched(cjk, "中".encode() * 10_000, GIVE_WAY_AFTER)
    assert ids == encode(merge_table(doubling_merges("中".encode()))[0], "中".encode() * 10_000)[0]


def test_matching_that_gives_way_early_leaves_the_rest_of_its_marks_untouched():
    # the dead-end marks are cleared only as far as the candidates reach: matching that gives way after a few
    # bytes of a long pre-token (pieces of one byte: replay costs less) has done work of the order of those bytes
    units, pair_table, bits, tables = match_tables([(97, 98)])
    data = b"\xff\xfe" * 50_000
    n = len(data) + 1
    stack, ends, dead = np.empty(n, np.int32), np.empty(n, np.int32), np.full(n, 7, np.int32)
    memo, steps, out = np.zeros(MEMO_WORDS, np.int64), np.zeros(1, np.int64), np.empty(n, np.int32)
    end = matched_bpe_into(units, pair_table, bits, *tables, np.frombuffer(data, np.uint8), 0, len(data), stack,
                           ends, dead, memo, 64, steps, out, 0)
    assert end == -1 and steps[0] < 100
    assert (dead[1000:] == 7).all()
