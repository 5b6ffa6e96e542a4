"""Work memory of the encoder: a document too large for the memory its buffers would need is refused with an
error that says so, instead of being killed by the operating system halfway through. And
:func:`release_freed_memory`, which the training driver calls after each stage, and :func:`resident_peak_bytes`,
the peak of each stage it reports.

The encoder's buffers are sized by the longest segment a call encodes on its own (a document, or a pre-token, word
or line of one: :meth:`tokenizer.compiled.CompiledModel.encode_range`; a dozen to a few dozen bytes per byte, by
model type: :func:`tokenizer.kernels.batch.work_sizes`, allocated by
:meth:`tokenizer.compiled.CompiledModel.work_arrays`).
Before allocating more than :data:`CHECK_ABOVE` bytes they ask :func:`check_work_memory`, which compares the size
with the memory the system has available (``MemAvailable`` of ``/proc/meminfo``; no check where it cannot be
read). A buffer too large to keep from call to call comes fresh from the system each time: :func:`fresh_array`
asks for it in huge pages.

    >>> check_work_memory(1 << 20, 50_000)      # small buffers are never checked
"""

from __future__ import annotations

import numpy as np

from tokenizer.errors import InputError
from tokenizer.files import proc_field

CHECK_ABOVE = 64 << 20  # buffers smaller than this are allocated without asking
USABLE_SHARE = 0.8  # of the available memory one call may take


def available_bytes() -> int | None:
    """The memory the system can give without swapping (``MemAvailable``), or ``None`` where unknown."""
    return _kib_field("/proc/meminfo", "MemAvailable")


def _kib_field(path: str, key: str) -> int | None:
    """Bytes of a ``Key: N kB`` line of a ``/proc`` file, or ``None`` where it cannot be read."""
    field = proc_field(path, key)
    try:
        return None if field is None else int(field) * 1024
    except ValueError:
        return None


def check_work_memory(nbytes: int, longest: int) -> None:
    """Raise :class:`InputError` when buffers of ``nbytes`` bytes, for a document of ``longest`` bytes, would take
    more than :data:`USABLE_SHARE` of the available memory."""
    if nbytes < CHECK_ABOVE:
        return
    available = available_bytes()
    if available is not None and nbytes > USABLE_SHARE * available:
        raise InputError(
            f"a document of {longest:,} bytes needs about {nbytes / (1 << 30):.1f} GiB of work memory with this "
            f"model, but only {available / (1 << 30):.1f} GiB is available: split it into smaller documents "
            "(shardpiece tokenize: --max-document-bytes), or encode it where more memory is free")


def fresh_array(count: int, dtype) -> np.ndarray:
    """``np.empty(count, dtype)``, whose whole 2 MB pages are advised to be huge pages when it takes
    :data:`~tokenizer.kernels.python_lists.ADVISE_ABOVE` bytes or more (Linux; a hint the system may ignore), before
    anything writes to it: an array that large comes fresh from the system, whose first touch of each 4 KB page
    otherwise faults, at a cost of the order of the work on it (a long pre-token's work arrays:
    ``benchmarks/encode_worst_case.py``). Example: ``fresh_array(3, np.int32)`` -> an int32 array of 3 (contents
    undefined)."""
    from tokenizer.kernels.python_lists import ADVISE_ABOVE, advise_huge_pages
    from tokenizer.shared_ids import huge_page_advice

    array = np.empty(count, dtype)
    if array.nbytes >= ADVISE_ABOVE:
        advise_huge_pages(huge_page_advice(), array.ctypes.data, array.nbytes)
    return array


def release_freed_memory() -> None:
    """Collect garbage and hand freed memory back to the system: glibc's free heap pages (``malloc_trim``; a no-op
    elsewhere) and pyarrow's pool when pyarrow is loaded. Memory a stage freed (a collected table's Arrow copy, sort
    temporaries) otherwise stays resident through the next stages, which then add their own on top.

    What survives the collection is frozen (``gc.freeze``): the modules, Numba dispatchers and types loaded so far
    (most of a driver's tracked objects) are then not walked again by the next call, which scans only what was
    allocated since. Frozen objects are still freed by reference counting; only a reference cycle among them that
    becomes garbage later would stay (the job's data are arrays and flat lists, not cycles)."""
    import ctypes
    import ctypes.util
    import gc
    import sys

    gc.collect()
    gc.freeze()
    if "pyarrow" in sys.modules:
        sys.modules["pyarrow"].default_memory_pool().release_unused()
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim(0)
    except (OSError, AttributeError):
        pass


def resident_peak_bytes(reset: bool = False) -> int | None:
    """This process's peak resident memory (``VmHWM`` of ``/proc/self/status``) in bytes, or ``None`` where it
    cannot be read. ``reset``: then start the peak again from the current resident memory (``5`` written to
    ``/proc/self/clear_refs``), so the next call gives the peak since this one (where the reset is refused, the
    peak since the process started)."""
    peak = _kib_field("/proc/self/status", "VmHWM")
    if peak is not None and reset:
        try:
            with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
                handle.write("5")
        except OSError:
            pass
    return peak
