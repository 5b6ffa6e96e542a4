"""Errors raised by shardpiece. Every message says what went wrong and how to fix it."""


class ShardpieceError(Exception):
    """Base class of every shardpiece error."""


class ModelError(ShardpieceError, ValueError):
    """A model's contents are inconsistent (lengths, types, special ids)."""


class ModelFileError(ShardpieceError, ValueError):
    """A model file cannot be read: truncated, corrupted, of an unknown format or of a newer format version."""

    def __init__(self, path: str, problem: str):
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


class InputError(ShardpieceError, ValueError):
    """Input text, ids or corpus data that cannot be processed as given."""


class InvalidIdError(InputError, IndexError):
    """An id outside ``0 .. vocab_size - 1`` (or not an integer) was passed to decode / id_to_piece / id_to_bytes."""


class DisallowedSpecialError(InputError):
    """The text spells a special token that ``disallowed_special`` names (tiktoken's check, a ``ValueError``)."""

    def __init__(self, token: str):
        self.token = token
        super().__init__(f"the text contains the special token {token!r}, which disallowed_special names: pass "
                         f"allowed_special={{{token!r}}} to encode it as that token, or leave it out of "
                         "disallowed_special to encode it as text")


class ExportError(ShardpieceError, ValueError):
    """The model cannot be written in the target format without changing its results."""


class ConfigError(ShardpieceError, ValueError):
    """A configuration file or command-line option is invalid."""


class OutputWriteError(ShardpieceError, OSError):
    """An output (model, manifest, stage file) could not be written: a full disk, a read-only or missing place."""


def unrepresentable_error(failed: int) -> InputError:
    """The error for document ``failed`` holding text the model can represent neither by an unk piece nor by byte
    fallback."""
    return InputError(
        f"text {failed} contains characters the model cannot represent: it has no <unk> piece and no byte "
        "fallback. Use a model with byte_fallback (or a byte-level model), or remove those characters"
    )
