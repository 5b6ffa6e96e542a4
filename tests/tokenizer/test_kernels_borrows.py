"""``@kernel(borrows=True)``: the encoder's entry points compile without Numba's reference counting, and Numba keeps
such a kernel from allocating (what makes borrowing safe)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from numba.core.errors import TypingError

from tokenizer.kernels import _REFCOUNT_OPTION, kernel
from tokenizer.kernels.batch import ENTRIES
from tokenizer.kernels.normalize import normalize_batch_into

pytestmark = pytest.mark.skipif(not _REFCOUNT_OPTION, reason="this Numba has no _nrt option (or the JIT is off)")


def test_the_entry_points_borrow_their_arrays():
    for entry in [*ENTRIES.values(), normalize_batch_into]:
        assert entry.targetoptions.get("_nrt") is False, entry


def test_a_borrowing_caller_updates_no_reference_count_and_may_not_allocate():
    @kernel(cache=False)
    def weighted(a, b, n):  # a helper with array arguments (compiled the caller's way)
        total = 0
        for k in range(n):
            total += a[k] * b[k]
        return total

    def caller(a, b):
        total = 0
        for n in range(a.shape[0]):
            total += weighted(a, b, n)
        return total

    borrowing, counting = kernel(caller, borrows=True, cache=False), kernel(caller, cache=False)
    a = np.arange(10)
    assert borrowing(a, a) == counting(a, a) == sum(int(a[:n] @ a[:n]) for n in range(10))

    def refcount_calls(function) -> int:
        return sum(len(re.findall(r"call [^\n]*@\"?NRT_(incref|decref)", ir))
                   for ir in function.inspect_llvm().values())

    assert refcount_calls(borrowing) == 0 < refcount_calls(counting)

    @kernel(borrows=True, cache=False)
    def allocating(n):
        return np.zeros(n).sum()

    with pytest.raises(TypingError, match="zeros"):  # Numba refuses: no array may be made without its counts
        allocating(3)
