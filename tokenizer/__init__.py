"""shardpiece's single-node library: models, normalizers, Numba kernels, trainers' driver-side math, interop.

Never imports pyspark (``tests/test_import_hygiene.py`` checks). ``Model``, ``PieceType`` and ``Tokenizer`` are
imported on first use (``from tokenizer import Tokenizer`` works as usual), so a command that needs only the errors
or a trainer does not load the encoder's compiled kernels. Every error class is importable from here
(``from tokenizer import InvalidIdError``); :mod:`tokenizer.errors` imports nothing heavy.
"""

from tokenizer._version import __version__
from tokenizer.errors import (ConfigError, DisallowedSpecialError, ExportError, InputError, InvalidIdError,
                              ModelError, ModelFileError, OutputWriteError, ShardpieceError)

_LAZY = {"Model": "tokenizer.model", "PieceType": "tokenizer.model", "Tokenizer": "tokenizer.core"}

__all__ = [
    "__version__", "Model", "PieceType", "Tokenizer", "ShardpieceError", "ModelError", "ModelFileError", "InputError",
    "ConfigError", "InvalidIdError", "DisallowedSpecialError", "OutputWriteError", "ExportError",
]


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'tokenizer' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
