"""The ``shardpiece`` command: dispatches ``shardpiece SUBCOMMAND ...`` to the module that implements it.

Each subcommand module has ``main(argv: list[str]) -> int``; they are imported lazily so that single-node
commands (encode, decode, inspect) never start or import Spark.
"""

from __future__ import annotations

import importlib
import sys

SUBCOMMANDS = {
    "encode": ("jobs.encode", "encode text lines to ids (or pieces) with a model"),
    "decode": ("jobs.encode", "decode lines of ids back to text"),
    "inspect": ("jobs.encode", "print a summary of a model file"),
    "train": ("jobs.train", "train a vocabulary with Spark (bytepiece, unigram, bpe)"),
    "tokenize": ("jobs.tokenize", "tokenize a dataset with Spark into Parquet, Megatron or npy shards"),
    "evaluate": ("jobs.evaluate", "compare models on the same text: bytes/token, tokens/word, vocabulary use, MB/s"),
    "export": ("jobs.export", "export a model (--to huggingface, sentencepiece or tiktoken)"),
    "demo": ("jobs.demo", "train on the shipped sample corpus, then encode and decode a line"),
}


def usage() -> str:
    lines = ["usage: shardpiece SUBCOMMAND [options]   (shardpiece SUBCOMMAND --help for details)", ""]
    lines += [f"  {name:<10} {help_text}" for name, (_, help_text) in SUBCOMMANDS.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name in ("-V", "--version"):
        from tokenizer import __version__

        print(f"shardpiece {__version__}")
        return 0
    if name not in SUBCOMMANDS:
        print(f"shardpiece: unknown subcommand {name!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(SUBCOMMANDS[name][0])
    return int(module.main([name] + rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
