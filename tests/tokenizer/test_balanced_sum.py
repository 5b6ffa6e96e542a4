"""BalancedSum: the sum of a stream in order, as a balanced tree (each value in about log2(n) merges)."""

from __future__ import annotations

from hypothesis import given, strategies as st

from tokenizer.balanced_sum import BalancedSum


@given(st.lists(st.text(max_size=3), max_size=40))
def test_sum_keeps_order_and_merges_each_value_about_log2_times(values):
    merges_of = {i: 0 for i in range(len(values))}

    def merge(a, b):  # tuples of indices: concatenation is associative, not commutative
        for i in a + b:
            merges_of[i] += 1
        return a + b

    total = BalancedSum(merge)
    for i in range(len(values)):
        total.add((i,))
        assert len(total._partial) <= i.bit_length() + 1  # few partial sums held
    assert total.result(()) == tuple(range(len(values)))
    assert all(count <= 2 * max(1, len(values)).bit_length() for count in merges_of.values())
    assert total.result(()) == ()  # released
