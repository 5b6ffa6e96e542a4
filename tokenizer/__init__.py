"""shardpiece's single-node library: models, normalizers, Numba kernels, trainers' driver-side math, interop.

Never imports pyspark (``tests/test_import_hygiene.py`` checks).
"""

from tokenizer._version import __version__
from tokenizer.errors import ConfigError, InputError, ModelError, ModelFileError, ShardpieceError
from tokenizer.model import Model, PieceType
from tokenizer.core import Tokenizer

__all__ = [
    "__version__", "Model", "PieceType", "Tokenizer", "ShardpieceError", "ModelError", "ModelFileError", "InputError",
    "ConfigError",
]
