"""Explicit random state for kernels: SplitMix64 in a ``uint64[1]`` array passed to every sampling kernel.

Kernels never touch a global generator, so a seed gives the same output on any thread, in any process, and in the
pure-Python twins (:func:`tokenizer.twins.random.ref_next_uint64`), which produce the identical stream.

    >>> state = new_state(0)
    >>> hex(next_uint64(state))
    '0xe220a8397b1dcdaf'
    >>> 0.0 <= next_float64(state) < 1.0
    True
"""

from __future__ import annotations

import os

import numpy as np

from tokenizer.kernels import kernel

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S11 = np.uint64(11)
_INV_2_53 = 1.0 / 9007199254740992.0


def new_state(seed: int | None = None) -> np.ndarray:
    """A fresh state, ``uint64`` array of shape ``(1,)``. ``seed=None`` draws one from ``os.urandom``."""
    if seed is None:
        seed = int.from_bytes(os.urandom(8), "little")
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
        raise TypeError(f"seed must be an int or None, not {type(seed).__name__}")
    return np.array([int(seed) & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64)


@kernel
def next_uint64(state):
    """Advance ``state`` (uint64[1]) and return the next SplitMix64 output (uint64)."""
    z = state[0] + _GOLDEN
    state[0] = z
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    return z ^ (z >> _S31)


@kernel
def next_float64(state):
    """Uniform float64 in ``[0, 1)`` from the top 53 bits of :func:`next_uint64`."""
    return np.float64(next_uint64(state) >> _S11) * _INV_2_53
