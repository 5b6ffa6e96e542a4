"""``shardpiece export``: write a model in another tool's format.

    shardpiece export --model bpe.model --to huggingface out/      # out/tokenizer.json, tokenizer_config.json, ...
    shardpiece export --model bytepiece.model --to huggingface out/tokenizer.json     # the same three files
    shardpiece export --model unigram.model --to sentencepiece out/unigram-sp.model
    shardpiece export --model bpe.model --to tiktoken out/bpe.tiktoken     # byte-level BPE models only

Each ``--to`` target is one function in :data:`EXPORTERS` taking ``(model, output path)``.
"""

from __future__ import annotations

import argparse
import os
import sys



def export_huggingface(model, output: str) -> str:
    """Write a Hugging Face tokenizer folder (``tokenizer.json``, ``tokenizer_config.json``,
    ``special_tokens_map.json``) into the directory ``output``, or beside ``output`` when it names a
    ``tokenizer.json``; returns what was written."""
    from tokenizer.interop.huggingface import save_huggingface

    directory = os.path.dirname(output) if output.endswith(".json") else output
    return ", ".join(save_huggingface(model, directory or "."))


def export_sentencepiece(model, output: str) -> str:
    """Write a SentencePiece ``.model`` (``output`` may be a directory: ``OUT/sentencepiece.model``)."""
    from tokenizer.interop.sentencepiece_export import save_sentencepiece

    if output.endswith(("/", os.sep)) or os.path.isdir(output):
        output = os.path.join(output, "sentencepiece.model")
    save_sentencepiece(model, output)
    return output


def export_tiktoken(model, output: str) -> str:
    """Write a byte-level BPE model's vocabulary as a tiktoken ``.tiktoken`` file (ranks in merge order, pieces
    merge replay never makes left out) and, beside it as ``OUT.pat_str``, the pattern text to give
    ``tiktoken.Encoding(pat_str=...)``; returns what was written, the pattern's name and text (the name reads the
    file back: ``OUT:superword``). See :mod:`tokenizer.interop.tiktoken_files`."""
    from tokenizer.files import write_atomic
    from tokenizer.interop.tiktoken_files import (PATTERNS, TIKTOKEN_PATTERN_TEXT, tiktoken_file_text,
                                                  tiktoken_ranked_ids)

    ranked, left_out = tiktoken_ranked_ids(model)
    write_atomic(output, tiktoken_file_text(model, ranked), what=".tiktoken file")
    written = output + (f" ({len(left_out)} pieces that replaying the merges never makes are left out: the ranks "
                        "are not the model's ids)" if left_out else "")
    pattern = {ours: name for name, ours in PATTERNS.items()}.get(model.pretokenizer.get("pattern"))
    if pattern is None:
        return written
    write_atomic(output + ".pat_str", TIKTOKEN_PATTERN_TEXT[pattern].encode(), what="tiktoken pattern file")
    return (f"{written} and {output}.pat_str (its pre-tokenizer pattern is {pattern}: read it as {output}:{pattern}; "
            f"tiktoken.Encoding(pat_str=...) takes the file's text: {TIKTOKEN_PATTERN_TEXT[pattern]})")


EXPORTERS = {"huggingface": export_huggingface, "sentencepiece": export_sentencepiece, "tiktoken": export_tiktoken}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="shardpiece export", description="Export a model to another format.")
    parser.add_argument("--model", required=True, metavar="MODEL",
                        help="a shardpiece model (or anything Tokenizer.load reads)")
    parser.add_argument("--to", required=True, choices=sorted(EXPORTERS), help="target format")
    parser.add_argument("--control-tokens-in-text", action="store_true",
                        help="huggingface: control tokens spelled in the text (e.g. '<s>') become their ids, as "
                             "'tokenize --control-tokens-in-text' does; by default such text is ordinary text")
    parser.add_argument("output", metavar="OUT",
                        help="output file (huggingface: a directory, or its tokenizer.json; tiktoken: FILE.tiktoken)")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "export":
        argv = argv[1:]
    args = build_parser().parse_args(argv)
    from jobs.exit_codes import run_command
    from tokenizer.core import Tokenizer

    def body() -> int:
        model = Tokenizer.load(args.model).model
        if args.control_tokens_in_text:
            if args.to != "huggingface":
                from tokenizer.errors import ConfigError

                raise ConfigError("--control-tokens-in-text applies to --to huggingface only: SentencePiece never "
                                  "matches control symbols in text")
            from tokenizer.added_tokens import with_control_tokens_in_text

            model = with_control_tokens_in_text(model)
        written = EXPORTERS[args.to](model, args.output)
        print(f"wrote {written}")
        return 0

    return run_command("shardpiece export", body)


if __name__ == "__main__":
    sys.exit(main())
