"""The tokens-per-document histogram of the tokenize job: exact buckets below 1024 tokens, 1%-wide geometric ones
above, and quantiles read from it."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

_EXACT_BUCKETS = 1024
_GROWTH = math.log(1.01)


def token_buckets(counts: np.ndarray) -> np.ndarray:
    """Histogram bucket of each token count: exact below 1024, then 1%-wide geometric buckets.

    >>> token_buckets(np.array([0, 5, 1023, 1024, 2048])).tolist()
    [0, 5, 1023, 1024, 1093]
    """
    counts = np.asarray(counts, dtype=np.int64)
    large = np.maximum(counts, _EXACT_BUCKETS).astype(np.float64)
    geometric = _EXACT_BUCKETS + np.floor(np.log(large / _EXACT_BUCKETS) / _GROWTH + 1e-9).astype(np.int64)
    return np.where(counts < _EXACT_BUCKETS, counts, geometric)


def bucket_floor(bucket: int) -> int:
    """Smallest token count in ``bucket`` (inverse of :func:`token_buckets`)."""
    if bucket < _EXACT_BUCKETS:
        return int(bucket)
    return int(math.ceil(_EXACT_BUCKETS * math.exp((bucket - _EXACT_BUCKETS) * _GROWTH) - 1e-6))


def histogram_quantiles(histogram: dict[int, int], quantiles: Sequence[float]) -> dict[str, int]:
    """Quantiles of tokens per document from a bucket histogram (exact below 1024 tokens, within 1% above).

    >>> histogram_quantiles({1: 2, 3: 1, 10: 1}, [0.5, 0.9])
    {'p50': 1, 'p90': 10}
    """
    total = sum(histogram.values())
    result = {}
    if not total:
        return {f"p{round(q * 100)}": 0 for q in quantiles}
    ordered = sorted(histogram.items())
    cumulative = np.cumsum([count for _, count in ordered])
    for q in quantiles:
        rank = max(1, math.ceil(q * total))
        index = int(np.searchsorted(cumulative, rank))
        result[f"p{round(q * 100)}"] = bucket_floor(ordered[index][0])
    return result
