"""Reading a model file of any supported format by its content: shardpiece's own, a Hugging Face tokenizer.json, a
BytePiece JSON or a SentencePiece ``.model``; by its name, a tiktoken file with its pattern (``FILE.tiktoken:gpt2``)
(``Tokenizer.load`` uses it).

    >>> from tokenizer.model import Model
    >>> load_model_bytes(Model.byte_level([b"ab"], [-1.0]).to_bytes()).vocab_size
    257
"""

from __future__ import annotations

import json
import os

from tokenizer.errors import ModelFileError
from tokenizer.interop.tiktoken_files import TIKTOKEN_SUFFIX, split_tiktoken_pattern
from tokenizer.model import MAGIC, Model


def load_model_file(path: str | os.PathLike) -> Model:
    """A :class:`Model` from a file of any supported format (:func:`load_model_bytes`), from a folder through the
    ``tokenizer.json`` in it (a Hugging Face tokenizer folder), or from a ``.tiktoken`` file named with its pattern
    (``"cl.tiktoken:cl100k"``, :mod:`tokenizer.interop.tiktoken_files`): ``load_model_file("out/hf")`` reads
    ``out/hf/tokenizer.json``."""
    source = os.fspath(path)
    named, pattern = split_tiktoken_pattern(source)
    if named.endswith(TIKTOKEN_SUFFIX):
        from tokenizer.interop.tiktoken_files import PATTERNS, load_tiktoken

        if pattern is None:
            raise ModelFileError(source, "a .tiktoken file holds no pre-tokenizer pattern: load it as "
                                 f"{source}:PATTERN, PATTERN one of {', '.join(PATTERNS)}")
        return load_tiktoken(named, pattern)
    if os.path.isdir(source):
        inside = os.path.join(source, "tokenizer.json")
        if not os.path.isfile(inside):
            found = sorted(os.listdir(source))[:6]
            raise ModelFileError(source, "a folder without a tokenizer.json: give a model file (shardpiece, "
                                 "SentencePiece .model, BytePiece JSON, tokenizer.json, FILE.tiktoken:PATTERN) or a "
                                 "Hugging Face tokenizer "
                                 f"folder; it holds {', '.join(found) if found else 'nothing'}")
        source = inside
    try:
        with open(source, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise ModelFileError(source, f"cannot read the file: {exc.strerror}") from None
    return load_model_bytes(data, source)


def load_model_bytes(data: bytes, source: str = "<bytes>") -> Model:
    """A :class:`Model` from a file's bytes: shardpiece, Hugging Face tokenizer.json, BytePiece JSON or
    SentencePiece ``.model``."""
    if data[:len(MAGIC)] == MAGIC:
        return Model.from_bytes(data, source)
    head = data[:64].lstrip()
    if head.startswith(b"{"):
        try:
            obj = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ModelFileError(source, f"looks like JSON but does not parse ({exc}); the file is corrupted") from None
        if isinstance(obj, dict) and str(obj.get("command", "")).startswith("shardpiece "):
            models = obj.get("models") if isinstance(obj.get("models"), dict) else {}
            paths = [str(info.get("path")) for info in models.values() if isinstance(info, dict)]
            raise ModelFileError(source, f"this is the manifest of a '{obj['command']}' run, not a model: give "
                                 + (f"the model file it names ({', '.join(paths[:3])})" if paths else
                                    "the model file beside it"))
        if isinstance(obj, dict) and "model" in obj and "normalizer" in obj:
            from tokenizer.interop.huggingface import model_from_tokenizer_json

            return model_from_tokenizer_json(obj, source)
        from tokenizer.interop.bytepiece import model_from_bytepiece_json

        return model_from_bytepiece_json(obj, source)
    if data[:1] == b"\x0a":
        try:
            from tokenizer.interop.sentencepiece import load_sentencepiece
        except ImportError as exc:
            raise ModelFileError(source, f"a SentencePiece .model, but its reader is unavailable ({exc})") from None
        return load_sentencepiece(data)
    raise ModelFileError(source, "unknown model format: expected a shardpiece model (magic SHRDPCE), a Hugging Face "
                         "tokenizer.json, a BytePiece JSON or a SentencePiece .model; check the path")
