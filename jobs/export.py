"""``shardpiece export``: write a model in another tool's format.

    shardpiece export --model bpe.model --to huggingface out/tokenizer.json
    shardpiece export --model bytepiece.model --to huggingface out/            # writes out/tokenizer.json
    shardpiece export --model unigram.model --to sentencepiece out/unigram-sp.model

Each ``--to`` target is one function in :data:`EXPORTERS` taking ``(model, output path)``.
"""

from __future__ import annotations

import argparse
import os
import sys



def export_huggingface(model, output: str) -> str:
    """Write ``tokenizer.json`` (``output`` may be a directory, or end with ``/``); returns the path written."""
    from tokenizer.interop.huggingface import save_tokenizer_json

    if output.endswith(("/", os.sep)) or os.path.isdir(output):
        output = os.path.join(output, "tokenizer.json")
    save_tokenizer_json(model, output)
    return output


def export_sentencepiece(model, output: str) -> str:
    """Write a SentencePiece ``.model`` (``output`` may be a directory: ``OUT/sentencepiece.model``)."""
    from tokenizer.interop.sentencepiece_export import save_sentencepiece

    if output.endswith(("/", os.sep)) or os.path.isdir(output):
        output = os.path.join(output, "sentencepiece.model")
    save_sentencepiece(model, output)
    return output


EXPORTERS = {"huggingface": export_huggingface, "sentencepiece": export_sentencepiece}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="shardpiece export", description="Export a model to another format.")
    parser.add_argument("--model", required=True, metavar="MODEL",
                        help="a shardpiece model (or anything Tokenizer.load reads)")
    parser.add_argument("--to", required=True, choices=sorted(EXPORTERS), help="target format")
    parser.add_argument("output", metavar="OUT", help="output file (huggingface: tokenizer.json or a directory)")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "export":
        argv = argv[1:]
    args = build_parser().parse_args(argv)
    from jobs.exit_codes import run_command
    from tokenizer.core import Tokenizer

    def body() -> int:
        written = EXPORTERS[args.to](Tokenizer.load(args.model).model, args.output)
        print(f"wrote {written}")
        return 0

    return run_command("shardpiece export", body)


if __name__ == "__main__":
    sys.exit(main())
