"""XXH64 as Spark's xxhash64 computes it: the kernel against its Python twin, the reference vectors, and Spark."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenizer.kernels.xxhash import SPARK_SEED, span_buckets, xxh64_range
from tokenizer.twins.xxhash import ref_xxh64


def test_reference_vectors():
    empty = np.zeros(0, np.uint8)
    assert int(xxh64_range(empty, 0, 0, np.uint64(0))) == ref_xxh64(b"", 0) == 0xEF46DB3751D8E999
    abc = np.frombuffer(b"abc", np.uint8)
    assert int(xxh64_range(abc, 0, 3, np.uint64(0))) == ref_xxh64(b"abc", 0) == 0x44BC2CF5AD770999


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=120), prefix=st.binary(max_size=9), seed=st.integers(0, 2**64 - 1))
def test_kernel_equals_twin_on_any_range(data, prefix, seed):
    buffer = np.frombuffer(prefix + data + b"tail", np.uint8)
    got = int(xxh64_range(buffer, len(prefix), len(prefix) + len(data), np.uint64(seed)))
    assert got == ref_xxh64(data, seed)


@pytest.mark.spark
def test_span_buckets_are_sparks_pmod_xxhash64(spark):
    """The documents ``pipelines.spark.train_engine.split_holdout`` holds out (``pmod(xxhash64(text), 1e6) < k``) are the ones
    whose bucket is below k, for documents of every length class (0, < 4, < 8, < 32, >= 32 bytes); the buckets are
    Spark's ``pmod(xxhash64(text), n)`` (the reduce's buckets of byte keys)."""
    from pyspark.sql import functions as F

    rng = np.random.default_rng(3)
    texts = [rng.integers(0, 256, rng.integers(0, 70), dtype=np.uint8).tobytes() for _ in range(400)]
    frame = spark.createDataFrame([(t,) for t in texts], "text binary")
    rows = frame.select(F.xxhash64("text").alias("h"), F.pmod(F.xxhash64("text"), F.lit(7)).alias("b"),
                        (F.pmod(F.xxhash64("text"), F.lit(1000)) < F.lit(300)).alias("held")).collect()
    data = np.frombuffer(b"".join(texts), np.uint8)
    offsets = np.zeros(len(texts) + 1, np.int64)
    np.cumsum([len(t) for t in texts], out=offsets[1:])
    mask = span_buckets(data, offsets, 1000) < 300
    assert mask.tolist() == [r["held"] for r in rows] and 0 < mask.sum() < len(texts)
    assert span_buckets(data, offsets, 7).tolist() == [r["b"] for r in rows]
    assert [ref_xxh64(t, SPARK_SEED) - (1 << 64) * (ref_xxh64(t, SPARK_SEED) >> 63) for t in texts] == \
        [r["h"] for r in rows]
