"""``shardpiece encode``, ``decode`` and ``inspect``: single-node commands (no Spark is started or imported).

    shardpiece encode --model bp.model < text.txt > ids.txt           # one line of ids per input line
    shardpiece encode --model bp.model --pieces --input text.txt      # the pieces, escaped
    shardpiece decode --model bp.model --input ids.txt --output text.txt
    shardpiece inspect bp.model
    shardpiece inspect tokens/                                          # a tokenize output directory

Lines are bytes: each input line without its ``\\n`` (a ``\\r`` before it stays part of the line) is encoded, and
each output line ends with ``\\n`` where its input line did (a last line without one gives a last line without
one), so ``decode(encode(file))`` gives the file back byte for byte. ``encode --add-bos --add-eos`` puts the
model's bos / eos id around each line's ids; decode drops them (control pieces decode to nothing). Pieces are
printed reversibly: bytes of printable, non-space UTF-8 characters as they are; ``\\`` as ``\\\\``; every other
byte (space, control, invalid UTF-8) as ``\\xHH``. ``decode --pieces`` reads that form back. ``inspect`` and
``--help`` load no Numba (``inspect`` reads the model file only).

Invalid UTF-8 follows the bad-row rule of every command (:mod:`tokenizer.bad_rows`): a byte-level model (BytePiece,
byte-level BPE) encodes the bytes as they are; a SentencePiece-style model stops at the first such line with exit 2
and ``INPUT:LINE: not valid UTF-8 ...`` (``--on-bad-row error``, the default), or drops it (``skip``) or encodes it
with U+FFFD replacements (``keep``), and one line on stderr at the end counts the lines skipped or changed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from contextlib import contextmanager
from typing import BinaryIO, Iterator

from jobs.exit_codes import run_command
from tokenizer.bad_rows import BAD_ROW_POLICIES, INVALID_UTF8, invalid_utf8_mask, keeps_invalid_utf8
from tokenizer.errors import InputError

BATCH_LINES = 4096
_ESCAPE = re.compile(rb"\\(\\|x[0-9a-fA-F]{2})")


def escape_piece(piece: bytes) -> str:
    """A piece's reversible, whitespace-free text form.

    >>> escape_piece(b"a b\\\\"), escape_piece("日本".encode()), escape_piece(b"\\xe6\\x97")
    ('a\\\\x20b\\\\\\\\', '日本', '\\\\xe6\\\\x97')
    """
    out, i, n = [], 0, len(piece)
    while i < n:
        b = piece[i]
        length = 1 if b < 0x80 else 2 if 0xC2 <= b < 0xE0 else 3 if 0xE0 <= b < 0xF0 else 4 if 0xF0 <= b < 0xF5 else 0
        char = None
        if length:
            try:
                char = piece[i:i + length].decode("utf-8")
            except UnicodeDecodeError:
                char = None
        if char is not None and len(char) == 1 and char.isprintable() and not char.isspace() and char != "\\":
            out.append(char)
            i += length
        elif char == "\\":
            out.append("\\\\")
            i += 1
        else:
            out.append(f"\\x{b:02x}")
            i += 1
    return "".join(out)


def unescape_piece(text: bytes) -> bytes:
    """Inverse of :func:`escape_piece` on its UTF-8 bytes: ``unescape_piece(b"a\\\\x20b") == b"a b"``."""
    stray = _ESCAPE.sub(b"", text)
    if b"\\" in stray:
        raise InputError(f"bad escape in piece {text!r}: only \\\\ and \\xHH are allowed")
    return _ESCAPE.sub(lambda m: b"\\" if m.group(1) == b"\\" else bytes([int(m.group(1)[1:], 16)]), text)


# ---------------------------------------------------------------------------------------------- I/O
@contextmanager
def open_input(path: str | None) -> Iterator[BinaryIO]:
    if path in (None, "-"):
        yield sys.stdin.buffer
        return
    try:
        handle = open(path, "rb")
    except OSError as exc:
        raise InputError(f"cannot read --input {path}: {exc.strerror}") from None
    with handle:
        yield handle


@contextmanager
def open_output(path: str | None) -> Iterator[BinaryIO]:
    if path in (None, "-"):
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    try:
        handle = open(path, "wb")
    except OSError as exc:
        raise InputError(f"cannot write --output {path}: {exc.strerror}") from None
    with handle:
        yield handle


def read_lines(handle: BinaryIO) -> Iterator[tuple[list[bytes], bytes]]:
    """Batches of lines (bytes, without the ``\\n``), each with what ends its last line: ``b"\\n"``, or ``b""``
    for a file's last line without one. ``b"a\\nb"`` -> ``([b"a", b"b"], b"")``."""
    batch, ending = [], b""
    for line in handle:
        ending = b"\n" if line.endswith(b"\n") else b""
        batch.append(line[:-1] if ending else line)
        if len(batch) >= BATCH_LINES:
            yield batch, ending
            batch = []
    if batch:
        yield batch, ending


# ---------------------------------------------------------------------------------------------- commands
def load_tokenizer(path: str):
    from tokenizer.core import Tokenizer

    return Tokenizer.load(path)


class InvalidLines:
    """The ``--on-bad-row`` policy for lines that are not valid UTF-8, for a model that works on characters (a
    SentencePiece-style one); counts what it skipped or changed. ``source`` names the input in messages.
    Example: ``InvalidLines("skip", "in.txt").apply([b"a", b"\\xff", b"b"], b"")`` -> ``([b"a", b"b"], b"")``, then
    ``count`` 1 and ``first`` ``"in.txt:2"``."""

    def __init__(self, policy: str, source: str) -> None:
        self.policy, self.source = policy, source
        self.lines_before = 0   # lines of the batches already seen
        self.count = 0          # lines skipped or changed
        self.first = ""         # where the first of them is: "INPUT:LINE"

    def apply(self, batch: list[bytes], ending: bytes) -> tuple[list[bytes], bytes]:
        """``(batch, ending)`` as they are to be encoded and written (``ending``: what ends the batch's last line,
        :func:`read_lines`): without the invalid lines (skip; the kept lines keep their endings) or with each
        invalid byte sequence as U+FFFD (keep, Python's ``errors="replace"``, as ``tokenize`` does); raises
        :class:`InputError` naming the first invalid line (error)."""
        import numpy as np

        offsets = np.zeros(len(batch) + 1, dtype=np.int64)
        np.cumsum([len(line) for line in batch], out=offsets[1:])
        invalid = np.flatnonzero(invalid_utf8_mask(np.frombuffer(b"".join(batch), np.uint8), offsets)).tolist()
        first_line = self.lines_before + 1
        self.lines_before += len(batch)
        if not invalid:
            return batch, ending
        where = f"{self.source}:{first_line + invalid[0]}"
        if self.policy == "error":
            raise InputError(f"{where}: {INVALID_UTF8}; pass --on-bad-row skip to drop such lines or --on-bad-row "
                             "keep to encode them with U+FFFD replacements (either way they are counted on stderr)")
        self.count += len(invalid)
        self.first = self.first or where
        if self.policy == "skip":
            dropped = set(invalid)
            kept = [line for index, line in enumerate(batch) if index not in dropped]
            return kept, b"\n" if invalid[-1] == len(batch) - 1 else ending
        batch = list(batch)
        for index in invalid:
            batch[index] = batch[index].decode("utf-8", errors="replace").encode("utf-8")
        return batch, ending

    def summary(self) -> str | None:
        """The line that counts what was skipped or changed (``None``: nothing was)."""
        if not self.count:
            return None
        said = f"{self.count:,} of {self.lines_before:,} lines were not valid UTF-8 (the first: {self.first}): "
        if self.policy == "skip":
            return said + "skipped (--on-bad-row skip), so the output has no line for them"
        return said + ("encoded with U+FFFD replacements (--on-bad-row keep), so decode gives U+FFFD for their "
                       "invalid bytes")


def encode(args: argparse.Namespace) -> int:
    tokenizer = load_tokenizer(args.model)
    invalid = None if keeps_invalid_utf8(tokenizer.model.pretokenizer) else InvalidLines(
        args.on_bad_row, args.input if args.input not in (None, "-") else "<stdin>")
    with open_input(args.input) as source, open_output(args.output) as sink:
        for batch, ending in read_lines(source):
            if invalid is not None:
                batch, ending = invalid.apply(batch, ending)
                if not batch:
                    continue
            encoded = tokenizer.encode_batch(batch, num_threads=1, add_bos=args.add_bos, add_eos=args.add_eos)
            if args.pieces:
                rows = [" ".join(escape_piece(tokenizer.id_to_piece(i)) for i in ids).encode() for ids in encoded]
            else:
                rows = [" ".join(map(str, ids)).encode() for ids in encoded]
            sink.write(b"\n".join(rows) + ending)
    summary = invalid.summary() if invalid is not None else None
    if summary:
        print(f"shardpiece encode: {summary}", file=sys.stderr)
    return 0


def decode(args: argparse.Namespace) -> int:
    tokenizer = load_tokenizer(args.model)
    vocab_size = tokenizer.vocab_size
    line_number = 0
    with open_input(args.input) as source, open_output(args.output) as sink:
        for batch, ending in read_lines(source):
            out = []
            for line in batch:
                line_number += 1
                fields = line.split()
                if args.pieces:
                    ids = []
                    for field in fields:
                        piece = unescape_piece(field)
                        piece_id = tokenizer.piece_to_id(piece)
                        if piece_id is None:
                            raise InputError(f"line {line_number}: piece {field.decode(errors='replace')!r} is not "
                                             "in the model's vocabulary: decode with the model that encoded it")
                        ids.append(piece_id)
                else:
                    try:
                        ids = [int(field) for field in fields]
                    except ValueError:
                        bad = next(f for f in fields if not f.lstrip(b"-").isdigit())
                        raise InputError(
                            f"line {line_number}: {bad.decode(errors='replace')!r} is not an integer id; decode "
                            "expects space-separated ids (use decode --pieces for pieces)"
                        ) from None
                    wrong = [i for i in ids if not 0 <= i < vocab_size]
                    if wrong:
                        raise InputError(f"line {line_number}: id {wrong[0]} is outside the vocabulary "
                                         f"(0..{vocab_size - 1}): decode with the model that encoded it")
                out.append(tokenizer.decode_bytes(ids))
            sink.write(b"\n".join(out) + ending)
    return 0


def describe(model_path: str) -> dict:
    """A JSON-able summary of a model file (what ``inspect`` prints)."""
    from tokenizer.loading import load_model_file
    from tokenizer.model import MAGIC, PieceType

    model = load_model_file(model_path)
    folder_file = os.path.join(model_path, "tokenizer.json")
    with open(folder_file if os.path.isdir(model_path) else model_path, "rb") as handle:
        head = handle.read(16)
    if head.startswith(MAGIC):
        file_format = f"shardpiece model, format version {int.from_bytes(head[8:12], 'little')}"
    elif model.provenance.get("imported_from") == "tokenizer.json":
        file_format = "Hugging Face tokenizer.json"
    elif head.lstrip().startswith(b"{"):
        file_format = "BytePiece JSON"
    else:
        file_format = "SentencePiece model (protobuf)"
    types = {t.name.lower(): int((model.types == t).sum()) for t in PieceType if (model.types == t).any()}
    lengths = [len(p) for p, t in zip(model.pieces, model.types.tolist()) if t == PieceType.NORMAL]
    specials = {name: {"id": getattr(model, f"{name}_id"), "piece": escape_piece(model.pieces[getattr(model, f"{name}_id")])}
                for name in ("unk", "bos", "eos", "pad") if getattr(model, f"{name}_id") >= 0}
    controls = [escape_piece(p) for p, t in zip(model.pieces, model.types.tolist()) if t == PieceType.CONTROL]
    longest = sorted((p for p, t in zip(model.pieces, model.types.tolist()) if t == PieceType.NORMAL),
                     key=lambda p: (-len(p), p))[:5]
    return {
        "file": model_path,
        "format": file_format,
        "algorithm": model.provenance.get("algorithm", model.algorithm),
        "segmentation": model.algorithm,
        "vocab_size": model.vocab_size,
        "piece_types": types,
        "normalizer": model.normalizer,
        "pretokenizer": model.pretokenizer,
        "byte_fallback": model.byte_fallback,
        "special_ids": specials,
        "control_pieces": controls,
        "longest_pieces": [escape_piece(p) for p in longest],
        "mean_piece_bytes": round(sum(lengths) / len(lengths), 3) if lengths else 0,
        "provenance": model.provenance,
    }


def describe_output(path: str) -> dict:
    """A JSON-able summary of a tokenize output directory: whether it is complete, its runs and the last run's
    summary (the full manifest with ``--json``)."""
    from pipelines.tokenize.commit import OutputDirectory

    out = OutputDirectory(path)
    manifest = out.manifest()
    if manifest is None:
        raise InputError(f"{path} is a directory without a tokenize manifest (_manifest.parquet): pass a model "
                         "file or a tokenize output directory")
    return {"directory": out.path, "complete": out.is_complete(), "output_format": manifest.get("output_format"),
            "documents": manifest.get("documents"), "tokens": manifest.get("tokens"),
            "runs": [{k: run[k] for k in ("run_id", "committed_at", "documents", "tokens")} | {
                "inputs": len(run["inputs"]), "shards": len(run["shards"])} for run in manifest["runs"]],
            "settings": manifest.get("settings"), "summary": out.summary(), "manifest": manifest}


def inspect(args: argparse.Namespace) -> int:
    if os.path.isdir(args.model) and not os.path.isfile(os.path.join(args.model, "tokenizer.json")):
        info = describe_output(args.model)
        if args.json:
            print(json.dumps(info, indent=2, ensure_ascii=False))
            return 0
        for key, value in info.items():
            if key != "manifest":
                print(f"{key:<17} {bounded_json(value, 400)}")
        return 0
    info = describe(args.model)
    if args.json:
        print(json.dumps(info, indent=2, ensure_ascii=False))
        return 0
    for key, value in info.items():
        if key == "provenance":
            continue
        shown = json.dumps(value, ensure_ascii=False) if isinstance(value, (dict, list)) else value
        print(f"{key:<17} {shown}")
    print("provenance        (bounded; --json prints all of it)")
    for key, value in sorted(info["provenance"].items()):
        print(f"  {key:<22} {bounded_json(value)}")
    return 0


def bounded_json(value, limit: int = 200) -> str:
    """``value`` as JSON, cut to about ``limit`` characters (long lists, such as a BPE model's merges, say how many
    items they hold). ``bounded_json(list(range(100)), 20)`` -> ``'[0, 1, 2, 3, 4, 5, ... (100 items)]'``."""
    text = json.dumps(value, ensure_ascii=False)
    if len(text) <= limit:
        return text
    if isinstance(value, dict):
        inner = ", ".join(f"{json.dumps(k, ensure_ascii=False)}: {bounded_json(v, limit // 2)}"
                          for k, v in value.items())
        return "{" + (inner if len(inner) <= limit else inner[:limit] + " ...") + "}"
    if isinstance(value, list):
        shown = text[:limit].rsplit(",", 1)[0]
        return f"{shown}, ... ({len(value)} items)]"
    return text[:limit] + " ..."


# ---------------------------------------------------------------------------------------------- argv
def build_parser(command: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"shardpiece {command}")
    if command == "inspect":
        parser.description = ("Print a summary of a model file (format, algorithm, vocab, normalizer, provenance) or "
                              "of a tokenize output directory (its manifest and last summary).")
        parser.add_argument("model", metavar="MODEL",
                            help="shardpiece model, SentencePiece .model, BytePiece JSON, Hugging Face tokenizer.json "
                            "(or its folder) or tokenize output directory")
        parser.add_argument("--json", action="store_true", help="print JSON")
        return parser
    parser.description = ("Encode each input line to a line of space-separated ids (or pieces)." if command == "encode"
                          else "Decode each line of space-separated ids (or pieces) back to a line of text.")
    parser.add_argument("--model", required=True, metavar="MODEL", help="model file")
    parser.add_argument("--input", metavar="FILE", help="input file (default: standard input)")
    parser.add_argument("--output", metavar="FILE", help="output file (default: standard output)")
    parser.add_argument("--pieces", action="store_true",
                        help="pieces in escaped form instead of ids" if command == "encode"
                        else "the input holds escaped pieces (encode --pieces output) instead of ids")
    if command == "encode":
        parser.add_argument("--add-bos", action="store_true", help="put the model's bos id before each line's ids")
        parser.add_argument("--add-eos", action="store_true", help="put the model's eos id after each line's ids")
        parser.add_argument("--on-bad-row", choices=BAD_ROW_POLICIES, default="error",
                            help="a line that is not valid UTF-8, for a SentencePiece-style model: error (stop, "
                            "naming the line), skip (drop it) or keep (encode it with U+FFFD replacements); "
                            "byte-level models encode any bytes as they are (default: error)")
    return parser


COMMANDS = {"encode": encode, "decode": decode, "inspect": inspect}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        print("usage: shardpiece {encode,decode,inspect} ...", file=sys.stderr)
        return 2
    command, rest = argv[0], argv[1:]
    args = build_parser(command).parse_args(rest)
    try:
        return run_command(f"shardpiece {command}", lambda: COMMANDS[command](args))
    except BrokenPipeError:  # e.g. `shardpiece encode ... | head`
        return 0


if __name__ == "__main__":
    sys.exit(main())
