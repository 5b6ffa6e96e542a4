"""Double array: common-prefix search and exact match vs a dict twin; build speed."""

from __future__ import annotations

import random
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenizer.kernels import reference
from tokenizer.kernels.double_array import DoubleArray, common_prefix_search, exact_match


@settings(max_examples=150, deadline=None)
@given(keys=st.lists(st.binary(min_size=1, max_size=6), max_size=40, unique=True), text=st.binary(max_size=20))
def test_search_matches_twin(keys, text):
    da = DoubleArray.build(keys, np.arange(len(keys)) * 3)
    table = {k: 3 * i for i, k in enumerate(keys)}
    data = np.frombuffer(text, np.uint8)
    ids, lengths = np.empty(8, np.int32), np.empty(8, np.int32)
    for start in range(len(text)):
        n = common_prefix_search(da.base, da.check, da.value, data, start, len(text), ids, lengths)
        assert list(zip(ids[:n].tolist(), lengths[:n].tolist())) == reference.ref_common_prefix_search(
            table, text, start)
        for end in range(start, len(text) + 1):
            assert exact_match(da.base, da.check, da.value, data, start, end) == table.get(text[start:end], -1)


def test_rejects_empty_and_duplicate_keys():
    with pytest.raises(ValueError, match="non-empty and distinct"):
        DoubleArray.build([b"a", b""])
    with pytest.raises(ValueError, match="non-empty and distinct"):
        DoubleArray.build([b"a", b"b", b"a"])


def test_32k_multibyte_keys_build_fast():
    rng = random.Random(0)
    alphabet = ["\u4e00\u4e8c\u4e09\u56db\u4e94\u516d\u4e03\u516b\u4e5d\u5341"[i] for i in range(10)] + list("abcdef")
    keys = set()
    while len(keys) < 32000:
        keys.add("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6))).encode())
    keys = sorted(keys)
    DoubleArray.build(keys[:10])  # compile outside the timing
    began = time.perf_counter()
    da = DoubleArray.build(keys)
    elapsed = time.perf_counter() - began
    assert elapsed < 1.0, f"building 32k keys took {elapsed:.2f}s"
    for i in range(0, len(keys), 97):
        data = np.frombuffer(keys[i], np.uint8)
        assert exact_match(da.base, da.check, da.value, data, 0, len(data)) == i
