"""Double array (compact units): common-prefix search and exact match vs a dict twin and vs a Python reader of
the unit layout; the layout's invariants; build speed and size."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tokenizer.kernels.double_array as double_array
from tokenizer.kernels.double_array import (HAS_VALUE, IS_LEAF, NOT_A_TARGET, PAYLOAD_SHIFT, TAG_MASK, DoubleArray,
                                            common_prefix_search, exact_match, fill_two_byte_steps, step,
                                            unit_value)
from tokenizer.twins.double_array import ref_common_prefix_search, ref_units_prefixes

#: first slots placement may try per trie node (a first-fit search that never gave up on a hole would try the
#: holes near the front again for every node: a number that grows with the trie, not a constant)
PROBES_PER_NODE = 10

# Keys that stress the layout: the extreme labels 0x00 and 0xFF, single bytes, long keys sharing prefixes.
_edge_bytes = st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF])
_key = st.one_of(
    st.binary(min_size=1, max_size=6),
    st.lists(_edge_bytes, min_size=1, max_size=4).map(bytes),
    st.binary(min_size=1, max_size=1),
    st.tuples(st.binary(max_size=3), st.integers(20, 70)).map(lambda t: (t[0] + b"\xff\x00") * (t[1] // 2 + 1)),
)


def _check_lookups(da, table, text):
    data = np.frombuffer(text, np.uint8)
    longest = max((len(k) for k in table), default=1)
    ids, lengths = np.empty(longest + 1, np.int32), np.empty(longest + 1, np.int32)
    for start in range(len(text)):
        n = common_prefix_search(da.units, data, start, len(text), ids, lengths)
        expected = ref_common_prefix_search(table, text, start)
        assert list(zip(ids[:n].tolist(), lengths[:n].tolist())) == expected
        assert ref_units_prefixes(da.units, text, start) == expected
        for end in range(start, len(text) + 1):
            assert exact_match(da.units, data, start, end) == table.get(text[start:end], -1)


def _check_invariants(da, table):
    """Every base is used by one node, children and value slots are in bounds, and each key is reachable."""
    units = da.units.astype(np.int64)
    bases = []
    for u in units.tolist():
        if (u & TAG_MASK) != NOT_A_TARGET and not u & IS_LEAF:
            bases.append(u >> PAYLOAD_SHIFT)
    root_base = int(units[0]) >> PAYLOAD_SHIFT
    bases.append(root_base)
    assert len(bases) == len(set(bases)), "two nodes share a base"
    assert all(b + 257 <= len(units) for b in bases)
    assert all(b >= 1 for b in bases[:-1]) and (root_base >= 1 or not table)
    for key, value in table.items():
        node = int(da.units[0])
        for byte in key:
            node = step(da.units, node, byte)
            assert node >= 0
        assert node & HAS_VALUE and unit_value(da.units, node) == value


@settings(max_examples=150, deadline=None)
@given(keys=st.lists(_key, max_size=40, unique=True), text=st.binary(max_size=20), wide=st.booleans())
def test_search_matches_twins(keys, text, wide):
    da = DoubleArray.build(keys, np.arange(len(keys)) * 3, wide=wide)
    assert da.units.dtype == (np.int64 if wide else np.int32)
    table = {k: 3 * i for i, k in enumerate(keys)}
    _check_invariants(da, table)
    # the text plus every key (and a key with one byte more) exercises full matches, leaves and dead ends
    for probe in [text] + keys[:8] + [k + b"\x00" for k in keys[:4]]:
        _check_lookups(da, table, probe)


def test_empty_key_set_matches_nothing():
    da = DoubleArray.build([])
    data = np.frombuffer(bytes(range(256)), np.uint8)
    ids, lengths = np.empty(2, np.int32), np.empty(2, np.int32)
    for start in range(256):
        assert common_prefix_search(da.units, data, start, 256, ids, lengths) == 0
        assert exact_match(da.units, data, start, start + 1) == -1


def test_all_single_bytes_and_hand_checked_units():
    keys = [bytes([b]) for b in range(256)]
    da = DoubleArray.build(keys, np.arange(256) + 1000)
    _check_invariants(da, dict(zip(keys, range(1000, 1256))))
    # root base 1: byte c sits in slot 2 + c as a leaf holding its value
    assert int(da.units[0]) == NOT_A_TARGET | (1 << PAYLOAD_SHIFT)
    assert int(da.units[2 + 0xFF]) == 0xFF | HAS_VALUE | IS_LEAF | (1255 << PAYLOAD_SHIFT)
    # "a" is both a key and the parent of "ab": it gets a base, its value goes to the value slot at that base
    da = DoubleArray.build([b"a", b"ab"], [5, 6])
    a = int(da.units[(int(da.units[0]) >> PAYLOAD_SHIFT) + 1 + ord("a")])
    assert a & HAS_VALUE and not a & IS_LEAF and int(da.units[a >> PAYLOAD_SHIFT]) >> PAYLOAD_SHIFT == 5


def test_large_values_switch_to_int64_units():
    da = DoubleArray.build([b"x", b"xy"], [2**20, 2**30])
    assert da.units.dtype == np.int64
    data = np.frombuffer(b"xyz", np.uint8)
    ids, lengths = np.empty(4, np.int32), np.empty(4, np.int32)
    n = common_prefix_search(da.units, data, 0, 3, ids, lengths)
    assert ids[:n].tolist() == [2**20, 2**30] and lengths[:n].tolist() == [1, 2]


def test_rejects_empty_and_duplicate_keys():
    with pytest.raises(ValueError, match="non-empty and distinct"):
        DoubleArray.build([b"a", b""])
    with pytest.raises(ValueError, match="non-empty and distinct"):
        DoubleArray.build([b"a", b"b", b"a"])


def test_32k_multibyte_keys_build_in_linear_steps_and_compact(monkeypatch):
    """Placement tries a bounded number of first slots per node (counted, not timed), and the array is a few %
    larger than the trie."""
    rng = random.Random(0)
    alphabet = ["\u4e00\u4e8c\u4e09\u56db\u4e94\u516d\u4e03\u516b\u4e5d\u5341"[i] for i in range(10)] + list("abcdef")
    keys = set()
    while len(keys) < 32000:
        keys.add("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6))).encode())
    keys = sorted(keys)
    placements = []
    place = double_array._place

    def counted_place(*args):
        placed = place(*args)
        placements.append(int(placed[3]))
        return placed

    monkeypatch.setattr(double_array, "_place", counted_place)
    da = DoubleArray.build(keys)
    nodes = len({k[:i] for k in keys for i in range(1, len(k) + 1)})
    assert placements and placements[0] < PROBES_PER_NODE * nodes, (placements, nodes)
    # one slot per trie node plus one value slot per inner key end, a few % of holes, 4 bytes each
    assert da.units.dtype == np.int32 and len(da.units) < 1.25 * (nodes + len(keys)) + 512
    for i in range(0, len(keys), 97):
        data = np.frombuffer(keys[i], np.uint8)
        assert exact_match(da.units, data, 0, len(data)) == i


GROWTH_SCRIPT = r"""
import random, numpy as np
import tokenizer.kernels.double_array as double_array
from tokenizer.twins.double_array import ref_common_prefix_search, ref_units_prefixes
double_array.FIRST_SLACK = -10**9  # (pure Python here) start with 2 slots: the arrays must grow many times
rng = random.Random(3)
keys = sorted({bytes(rng.choice(b"\x00a\x80\xff") for _ in range(rng.randint(1, 5))) for _ in range(150)})
table = {k: i for i, k in enumerate(keys)}
da = double_array.DoubleArray.build(keys)
for probe in keys + [k + b"\x00" for k in keys]:
    for start in range(len(probe)):
        assert ref_units_prefixes(da.units, probe, start) == ref_common_prefix_search(
            table, probe, start), probe
print(len(da.units))
"""


def test_placement_growth_path_keeps_lookups_right():
    import os
    import subprocess
    import sys

    env = dict(os.environ, SHARDPIECE_DISABLE_JIT="1")
    done = subprocess.run([sys.executable, "-c", GROWTH_SCRIPT], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout.split()[-1]) > 0


@settings(max_examples=100, deadline=None)
@given(keys=st.lists(_key, min_size=1, max_size=40, unique=True))
def test_two_byte_steps_reach_the_node_of_every_two_byte_prefix(keys):
    da = DoubleArray.build(keys)
    table = np.empty(1 << 16, da.units.dtype)
    fill_two_byte_steps(da.units, table)
    prefixes = {key[:2] for key in keys if len(key) >= 2}
    reached = {bytes([i >> 8, i & 255]) for i in np.flatnonzero(table >= 0).tolist()}
    assert reached == prefixes
    for prefix in prefixes:
        unit = table[prefix[0] * 256 + prefix[1]]
        assert unit_value(da.units, unit) == (keys.index(prefix) if prefix in keys else -1)
