"""All Numba-compiled code of shardpiece lives in this package, behind the one :func:`kernel` decorator.

Kernels take numpy arrays and scalars only (no Python objects), never allocate per call where a caller-provided
buffer will do, and each has a slow, obviously-correct Python twin in :mod:`tokenizer.twins` (outside this package,
so that editing a twin recompiles nothing) with a hypothesis test that the two agree.

Set ``SHARDPIECE_DISABLE_JIT=1`` to run every kernel as plain Python (debugging, coverage).

Compiled kernels are cached on disk (``cache=True``). Numba checks a cached function against its own source file
only, but a kernel compiles in the kernels it calls from other files (the batch encoder inlines the Viterbi of
``unigram.py``): after a change to ``unigram.py`` alone it would go on running the old Viterbi. So every kernel's
cache entry is also stamped with :data:`SOURCES_FINGERPRINT`, a hash of all of this package's source files, and
any change to any of them recompiles every kernel (:class:`_PackageStampedLocator`).
"""

from __future__ import annotations

import hashlib
import os

import numba

_DISABLE_JIT = os.environ.get("SHARDPIECE_DISABLE_JIT") == "1"
KERNELS_DIRECTORY = os.path.dirname(os.path.abspath(__file__))


def sources_fingerprint(directory: str) -> str:
    """sha256 (hex) over the names and contents of the ``.py`` files in ``directory`` (sorted by name): changes
    when any of them does."""
    digest = hashlib.sha256()
    for name in sorted(os.listdir(directory)):
        if name.endswith(".py"):
            with open(os.path.join(directory, name), "rb") as handle:
                content = handle.read()
            digest.update(f"{name}\0{len(content)}\0".encode())
            digest.update(content)
    return digest.hexdigest()


SOURCES_FINGERPRINT = sources_fingerprint(KERNELS_DIRECTORY)


def _install_package_stamped_locators() -> bool:
    """Put, in front of each of Numba's cache locators, a subclass that takes only this package's files and
    stamps their cache entries with ``(the file's own stamp, SOURCES_FINGERPRINT)`` (see the module docstring).
    Functions of other files keep Numba's locators as they are. Returns False when this Numba keeps its locators
    elsewhere (they are internals: ``CacheImpl``, ``_CacheImpl`` before 0.61); kernels are then not cached."""
    from numba.core import caching

    implementation = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)
    if not isinstance(getattr(implementation, "_locator_classes", None), list):
        return False
    if any(getattr(c, "_shardpiece_kernels", False) for c in implementation._locator_classes):
        return True
    stamped = []
    for base in implementation._locator_classes:
        class _PackageStampedLocator(base):
            _shardpiece_kernels = True

            @classmethod
            def from_function(cls, py_func, py_file):
                if os.path.dirname(os.path.abspath(py_file)) != KERNELS_DIRECTORY:
                    return None
                return super().from_function(py_func, py_file)

            def get_source_stamp(self):
                return (super().get_source_stamp(), SOURCES_FINGERPRINT)

        _PackageStampedLocator.__name__ = f"PackageStamped{base.__name__.lstrip('_')}"
        stamped.append(_PackageStampedLocator)
    implementation._locator_classes = stamped + list(implementation._locator_classes)
    return True


_CACHE_IS_SAFE = not _DISABLE_JIT and _install_package_stamped_locators()


def _has_refcount_option() -> bool:
    """Whether this Numba compiles a function without reference counting on request (its ``_nrt`` option)."""
    from numba.core.cpu import CPUTargetOptions

    return hasattr(CPUTargetOptions, "_nrt")


_REFCOUNT_OPTION = not _DISABLE_JIT and _has_refcount_option()


def kernel(*args, parallel: bool = False, c_signature=None, borrows: bool = False, **kwargs):
    """The house ``@njit``: ``cache=True`` (see the module docstring), ``nogil=True``, ``fastmath`` off (results
    must be exact). With ``c_signature`` (a Numba signature of C types) the kernel is a C-callable ``cfunc``
    instead, compiled at once; its ``address`` is the function pointer (see :mod:`tokenizer.kernels.one_text`).

    ``borrows=True``: the kernel only borrows the arrays it is given, and is compiled without Numba's reference
    counting (its ``_nrt`` option, where this Numba has it). Otherwise every call of a kernel that is not compiled
    into its caller updates the count of each array argument twice, atomically, which costs more than the work of
    a small helper called per character or per token (the encoders' hot loops: ``benchmarks/encode.py``). Numba
    refuses to compile such a kernel when it allocates an array or returns one it was not given, and compiles the
    kernels it calls the same way, so they may not either. A small helper called per word, pre-token or token is
    also compiled into its callers (``@kernel(inline="always")``): it saves the call itself.

    Usage: ``@kernel``, ``@kernel(borrows=True)``, ``@kernel(parallel=True)`` or
    ``@kernel(c_signature=types.int64(types.int64))``.
    """
    options = {"cache": _CACHE_IS_SAFE, "nogil": True, "parallel": parallel, **kwargs}
    if borrows and _REFCOUNT_OPTION:
        options["_nrt"] = False

    def wrap(function):
        if _DISABLE_JIT:
            return function
        if c_signature is not None:
            return numba.cfunc(c_signature, cache=_CACHE_IS_SAFE, **kwargs)(function)
        return numba.njit(**options)(function)

    if args and callable(args[0]):
        return wrap(args[0])
    return wrap
