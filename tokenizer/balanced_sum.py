"""Summing a stream of count tables as a balanced tree: each table takes part in about ``log2(n)`` merges, not in
``n`` (what adding every table to one growing total costs), and only about ``log2(n)`` partial sums are held.

    >>> total = BalancedSum(lambda a, b: a + b)
    >>> for part in ([1], [2], [3]):
    ...     total.add(part)
    >>> total.result([])
    [1, 2, 3]
"""

from __future__ import annotations

from typing import Callable, Generic, TypeVar

_Value = TypeVar("_Value")


class BalancedSum(Generic[_Value]):
    """Adds values with an associative ``merge`` (left operand the earlier values), like a binary counter: a new
    value is merged with the last partial sum while that one holds as many values, so partial sums hold 1, 2, 4, ...
    values. :meth:`result` merges what is left, earlier values on the left."""

    def __init__(self, merge: Callable[[_Value, _Value], _Value]) -> None:
        self.merge = merge
        self._partial: list[tuple[int, _Value]] = []  # (values summed, sum), sizes strictly decreasing

    def add(self, value: _Value) -> None:
        size = 1
        while self._partial and self._partial[-1][0] == size:
            value = self.merge(self._partial.pop()[1], value)
            size *= 2
        self._partial.append((size, value))

    def result(self, empty: _Value) -> _Value:
        """The sum of every value added (``empty`` when none was); the partial sums are released."""
        if not self._partial:
            return empty
        _, total = self._partial.pop()
        while self._partial:
            total = self.merge(self._partial.pop()[1], total)
        return total
