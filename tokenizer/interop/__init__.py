"""Reading and writing other tools' model formats (SentencePiece, BytePiece, Hugging Face, tiktoken, Megatron)."""

from __future__ import annotations

import json
import os
from typing import Any

from tokenizer.errors import ModelFileError


def read_json_file(path: str | os.PathLike, hint: str = "") -> tuple[Any, str]:
    """``(parsed JSON, source name)`` of the file at ``path``; :class:`ModelFileError` naming the file when it can't
    be read or is not UTF-8 JSON (``hint`` is appended to that message, e.g. ``": is this a BytePiece model?"``)."""
    source = os.fspath(path)
    try:
        with open(source, "rb") as handle:
            return json.loads(handle.read().decode("utf-8")), source
    except OSError as exc:
        raise ModelFileError(source, f"cannot read the file: {exc.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFileError(source, f"not valid JSON ({exc}){hint}") from None
