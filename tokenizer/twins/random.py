"""Twins of :mod:`tokenizer.kernels.random`: SplitMix64 written with Python integers, the same stream.

    >>> state = [0]
    >>> hex(ref_next_uint64(state)), state == [0x9E3779B97F4A7C15]
    ('0xe220a8397b1dcdaf', True)
"""

from __future__ import annotations

MASK64 = 0xFFFFFFFFFFFFFFFF


def ref_next_uint64(state: list[int]) -> int:
    """Twin of :func:`tokenizer.kernels.random.next_uint64`; ``state`` is a one-element list of int."""
    state[0] = (state[0] + 0x9E3779B97F4A7C15) & MASK64
    z = state[0]
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def ref_next_float64(state: list[int]) -> float:
    """Twin of :func:`tokenizer.kernels.random.next_float64`: the top 53 bits of the next draw, over 2**53."""
    return (ref_next_uint64(state) >> 11) / float(1 << 53)

