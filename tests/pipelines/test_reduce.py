"""The one reduce of count tables: cutting each table into buckets, merging each bucket on its own (optionally
cutting it down) and merging the buckets on the driver gives what one plain dict sum gives, for both key kinds;
statistics add up; tables round-trip through their bytes."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from pipelines.spark import reduce
from pipelines.train import tables as T

int_keys = st.dictionaries(st.integers(0, 1 << 40), st.integers(1, 50), max_size=40)
byte_keys = st.dictionaries(st.binary(max_size=6), st.integers(1, 50), max_size=40)


def as_table(kind: str, counts: dict) -> tuple:
    if kind == "int64":
        keys = np.array(sorted(counts), np.int64)
        return keys, np.array([counts[k] for k in keys.tolist()], np.int64)
    keys = list(counts)
    offsets = np.zeros(len(keys) + 1, np.int64)
    np.cumsum([len(k) for k in keys], out=offsets[1:])
    return np.frombuffer(b"".join(keys), np.uint8).copy(), offsets, np.array([counts[k] for k in keys], np.int64)


def as_dict(kind: str, table: tuple) -> dict:
    if kind == "int64":
        return dict(zip(table[0].tolist(), table[1].tolist()))
    data, offsets, counts = table
    blob = data.tobytes()
    return {blob[a:b]: c for a, b, c in zip(offsets[:-1].tolist(), offsets[1:].tolist(), counts.tolist())}


def frequent(table: tuple) -> np.ndarray:
    return table[-1] >= 5


@hypothesis_settings(max_examples=60, deadline=None)
@given(data=st.data(), buckets=st.integers(1, 7), kind=st.sampled_from(T.KINDS),
       keep=st.sampled_from(["all", "frequent", "frequent, rest set aside"]), threads=st.integers(1, 3))
def test_bucketed_reduce_equals_a_plain_dict_sum(data, buckets, kind, keep, threads):
    tables = data.draw(st.lists(int_keys if kind == "int64" else byte_keys, max_size=5))
    expected: dict = {}
    for table in tables:
        for key, count in table.items():
            expected[key] = expected.get(key, 0) + count
    shuffled: dict[int, list] = {}
    for number, table in enumerate(tables):
        counter = (lambda batches, threads, table=table, number=number:
                   (as_table(kind, table), {"documents": number + 1}))
        for batch in reduce.count_partition(counter, kind, buckets, 1)(iter([])):
            for bucket, blob in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist()):
                assert bucket == reduce.STATS_BUCKET or 0 <= bucket < buckets
                shuffled.setdefault(bucket % buckets, []).append((bucket, blob))  # the stats row goes somewhere
    rows = []
    for bucket in sorted(shuffled):
        batch = pa.RecordBatch.from_arrays([pa.array([b for b, _ in shuffled[bucket]], pa.int32()),
                                            pa.array([blob for _, blob in shuffled[bucket]], pa.binary())],
                                           names=["bucket", "blob"])
        step = reduce.reduce_partition(kind, None if keep == "all" else frequent, set_aside="aside" in keep,
                                       threads=threads)
        for out in step(iter([batch])):
            rows += zip(out.column(0).to_pylist(), out.column(1).to_pylist())
    tables_out = [T.decode(kind, blob) for bucket, blob in rows if bucket >= 0]
    histogram = {}
    for bucket, blob in rows:
        if bucket == reduce.HISTOGRAM_BUCKET:
            for count, (entries, _) in json.loads(blob):
                histogram[count] = histogram.get(count, 0) + entries
    stats = [json.loads(blob) for bucket, blob in rows if bucket == reduce.STATS_BUCKET]
    merged = T.merge(kind, tables_out)
    want = {k: v for k, v in expected.items() if v >= 5 or keep == "all"}
    assert as_dict(kind, merged) == want
    aside = T.merge(kind, [T.decode(kind, blob) for bucket, blob in rows
                                if bucket == reduce.SET_ASIDE_BUCKET])
    assert as_dict(kind, aside) == ({k: v for k, v in expected.items() if v < 5} if "aside" in keep else {})
    assert histogram == {c: list(want.values()).count(c) for c in set(want.values())}  # of what was kept
    if kind == "int64":
        assert np.all(np.diff(merged[0]) > 0)  # sorted, distinct
    total = {}
    for part in stats:
        for key, value in part.items():
            total[key] = total.get(key, 0) + value
    assert total.get("distinct_keys", 0) == len(expected)
    assert total.get("documents", 0) == sum(range(1, len(tables) + 1))


def test_tables_round_trip_and_empty_merges():
    for kind, counts in (("int64", {3: 1, 9: 4}), ("bytes", {b"": 2, b"\x00\xff": 1})):
        table = as_table(kind, counts)
        assert as_dict(kind, T.decode(kind, T.encode(kind, table))) == counts
        assert T.size(kind, T.merge(kind, [])) == 0


@hypothesis_settings(max_examples=60, deadline=None)
@given(data=st.data(), kind=st.sampled_from(T.KINDS), row_bytes=st.integers(1, 80))
def test_rows_cut_a_table_into_small_rows_that_add_up_to_it(data, kind, row_bytes):
    table = as_table(kind, data.draw(int_keys if kind == "int64" else byte_keys))
    rows = list(reduce._rows(kind, table, 3, row_bytes))
    assert all(bucket == 3 for bucket, _ in rows)
    parts = [T.decode(kind, blob) for _, blob in rows]
    overhead = 8 * len(parts[0]) + (8 if kind == "bytes" else 0) if parts else 0  # length prefixes, last offset
    assert all(T.size(kind, part) == 1 or len(blob) - overhead <= row_bytes for part, (_, blob) in zip(parts, rows))
    assert sum(T.size(kind, part) for part in parts) == T.size(kind, table)
    assert as_dict(kind, T.merge(kind, parts)) == as_dict(kind, table)

