"""All Numba-compiled code of shardpiece lives in this package, behind the one :func:`kernel` decorator.

Kernels take numpy arrays and scalars only (no Python objects), never allocate per call where a caller-provided
buffer will do, and each has a slow, obviously-correct Python twin in :mod:`tokenizer.kernels.reference` with a
hypothesis test that the two agree.

Set ``SHARDPIECE_DISABLE_JIT=1`` to run every kernel as plain Python (debugging, coverage).
"""

from __future__ import annotations

import os

import numba

_DISABLE_JIT = os.environ.get("SHARDPIECE_DISABLE_JIT") == "1"


def kernel(*args, parallel: bool = False, **kwargs):
    """The house ``@njit``: ``cache=True``, ``nogil=True``, ``fastmath`` off (results must be exact).

    Usage: ``@kernel`` or ``@kernel(parallel=True)``.
    """
    options = {"cache": True, "nogil": True, "parallel": parallel, **kwargs}

    def wrap(function):
        if _DISABLE_JIT:
            return function
        return numba.njit(**options)(function)

    if args and callable(args[0]):
        return wrap(args[0])
    return wrap


def direct_entry(dispatcher, args: tuple):
    """The machine code ``dispatcher`` compiled for the types of ``args`` (an earlier call with such arguments
    compiled it), to call like the dispatcher minus its per-call type resolution (tens of nanoseconds per
    argument: a microsecond for a kernel of 20 arrays, which a per-text call path notices). ``None`` when there
    is none: JIT disabled, or no compilation for exactly these types. Example: after ``add(1, 2)``,
    ``direct_entry(add, (1, 2))(3, 4) == 7``."""
    if _DISABLE_JIT:
        return None
    try:
        return dispatcher.overloads[tuple(numba.typeof(value) for value in args)].entry_point
    except (AttributeError, KeyError, ValueError, TypeError):
        return None

