"""``shardpiece evaluate``: compare models on the same text, in this process (no Spark).

    shardpiece evaluate --model bp-8k.model --model out/hf/ --input 'data/sample/*.txt.gz'
    shardpiece evaluate --model bpe.tiktoken:gpt2 --input docs.parquet --text-column body --json
    shardpiece evaluate --model models/*.model --input en.txt --input zh.txt --plot bpt.png

Every model is measured on every input (:func:`tokenizer.evaluation.measure`: bytes/token, tokens per word or
character, the share of the vocabulary used, the unknown and byte-fallback rate, the exact round trip, encode MB/s
on one thread). Prints one table per input, or with ``--json`` one JSON object a line per model and input;
``--plot`` draws bytes/token against vocabulary size, one line per algorithm (and format) and input (matplotlib:
``pip install 'shardpiece[plot]'``). Inputs are read as ``shardpiece train`` reads them in this process (text lines,
JSONL fields, Parquet columns; :mod:`pipelines.inprocess.read`).
"""

from __future__ import annotations

import argparse
import io
import json
import sys

#: the figures a --json record holds beside model, input, algorithm, format and vocab_size
FIGURES = ("bytes_per_token", "tokens_per_word", "word_unit", "vocab_used", "unknown_rate", "round_trip",
           "encode_mb_per_s", "documents", "bytes", "tokens", "words")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="shardpiece evaluate",
        description="Measure models on the same text: bytes/token, tokens per word (per character for text without "
                    "spaces), vocabulary used, unknown/byte-fallback rate, round trip, encode MB/s (one thread).")
    parser.add_argument("--model", action="extend", nargs="+", required=True, metavar="MODEL",
                        help="a shardpiece model, SentencePiece .model, BytePiece JSON, tokenizer.json, a Hugging "
                             "Face tokenizer folder, or FILE.tiktoken:PATTERN (PATTERN gpt2, cl100k, o200k, "
                             "superword or superbpe); "
                             "several after one --model, or --model repeated")
    parser.add_argument("--input", action="append", required=True, metavar="PATH",
                        help="a file, directory or quoted glob (text, JSONL or Parquet); repeat for more inputs, "
                             "each measured and shown on its own")
    parser.add_argument("--input-format", choices=("text", "jsonl", "parquet"),
                        help="default: guessed from the file names")
    parser.add_argument("--text-column", default="text", metavar="NAME",
                        help="JSONL field / Parquet column of the text (default text)")
    parser.add_argument("--tiktoken-pattern", metavar="PATTERN",
                        help="the pre-tokenizer pattern of .tiktoken models given without ':PATTERN' (gpt2, "
                             "cl100k, o200k, superword or superbpe)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object a line per model and input instead of the tables")
    parser.add_argument("--plot", metavar="PNG", help="draw bytes/token against vocabulary size into this PNG file")
    return parser


def check_inputs(paths: list[str]) -> None:
    """Raise the error of the first ``--input`` that matches no file or is not local (a URI, a ``{a,b}`` glob)."""
    from pipelines.inprocess.read import list_local_inputs
    from tokenizer.errors import ConfigError

    for path in paths:
        if list_local_inputs([path]) is None:
            raise ConfigError(f"--input {path}: evaluate reads local files, directories and globs of * and ? only; "
                              "copy the files here or give one --input per file")


def read_documents(path: str, input_format: str | None, text_column: str) -> list[bytes]:
    """The documents of one ``--input`` (non-empty lines, fields or column values, in input order) as bytes."""
    from pipelines.inprocess.read import read_local_corpus

    corpus = read_local_corpus([path], input_format, text_column)
    return [text for array in corpus.training for text in array.to_pylist()]


def evaluate(args: argparse.Namespace) -> list[dict]:
    """One record per model and input, inputs outermost, in the order given (the inputs are listed and the models
    read before any text is, so a missing input or a bad model fails before the work starts)."""
    from tokenizer.evaluation import describe_model, load_evaluated_model, measure

    if args.plot:
        matplotlib_pyplot()
    check_inputs(args.input)
    models = [(spec, load_evaluated_model(spec, args.tiktoken_pattern)) for spec in args.model]
    records = []
    for path in args.input:
        texts = read_documents(path, args.input_format, args.text_column)
        for spec, tokenizer in models:
            figures = measure(tokenizer, texts)
            records.append({"model": spec, "input": path, **describe_model(tokenizer.model),
                            **{name: figures[name] for name in FIGURES}})
    return records


# ---------------------------------------------------------------------------------------------- output
def _ratio(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}%"


def format_table(records: list[dict]) -> str:
    """The table of one input's records: a title line (the input, its documents and bytes, the word unit), then a
    row per model. Example title: ``en.txt: 3 documents, 120 bytes; tokens per whitespace word``."""
    first = records[0]
    per = "whitespace word" if first["word_unit"] == "word" else "character (text without spaces)"
    title = f"{first['input']}: {first['documents']:,} documents, {first['bytes']:,} bytes; tokens per {per}"
    header = ("model", "algorithm", "format", "vocab", "bytes/token",
              "tokens/word" if first["word_unit"] == "word" else "tokens/char", "vocab used", "unknown",
              "round trip", "MB/s")
    rows = [(r["model"], r["algorithm"], r["format"], f"{r['vocab_size']:,}", _ratio(r["bytes_per_token"], 3),
             _ratio(r["tokens_per_word"], 3), _share(r["vocab_used"]), _share(r["unknown_rate"]),
             "yes" if r["round_trip"] else "NO", _ratio(r["encode_mb_per_s"], 1)) for r in records]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [title]
    for row in [header, *rows]:
        cells = [cell.ljust(width) if i < 3 else cell.rjust(width) for i, (cell, width) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def matplotlib_pyplot():
    """``matplotlib.pyplot`` with the file-only Agg backend; a :class:`ConfigError` with the install command when
    matplotlib is missing."""
    try:
        import matplotlib
    except ImportError:
        from tokenizer.errors import ConfigError

        raise ConfigError("--plot needs matplotlib: pip install 'shardpiece[plot]' (or pip install matplotlib), or "
                          "leave out --plot") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot

    return pyplot


def plot_lines(records: list[dict]) -> dict[tuple[str, str], list[tuple[int, float]]]:
    """``{(kind, input): [(vocab_size, bytes_per_token), ...] by size}``: one line per kind of model (its algorithm,
    and its format when not shardpiece's) and input. Example: records of bytepiece models of 4,000 and 8,000 pieces
    on ``en.txt`` -> ``{("bytepiece", "en.txt"): [(4000, 3.1), (8000, 3.5)]}``."""
    lines: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for r in records:
        if r["bytes_per_token"] is None:
            continue
        kind = r["algorithm"] if r["format"] == "shardpiece" else f"{r['algorithm']} ({r['format']})"
        lines.setdefault((kind, r["input"]), []).append((r["vocab_size"], r["bytes_per_token"]))
    return {key: sorted(points) for key, points in lines.items()}


def write_plot(records: list[dict], path: str) -> None:
    """Draw :func:`plot_lines` into the PNG file ``path`` (written atomically): a colour per kind of model, a line
    style and marker per input, the legend beside the axes."""
    from tokenizer.files import write_atomic

    pyplot = matplotlib_pyplot()
    lines = plot_lines(records)
    kinds = list(dict.fromkeys(kind for kind, _ in lines))
    inputs = list(dict.fromkeys(name for _, name in lines))
    colours = pyplot.get_cmap("tab10").colors
    styles = [("-", "o"), ("--", "s"), (":", "^"), ("-.", "D")]
    figure, axes = pyplot.subplots(figsize=(8, 4.2), dpi=100)
    for (kind, name), points in lines.items():
        style, marker = styles[inputs.index(name) % len(styles)]
        axes.plot([x for x, _ in points], [y for _, y in points], linestyle=style, marker=marker,
                  color=colours[kinds.index(kind) % len(colours)], label=f"{kind}, {name}")
    axes.set_xlabel("vocabulary size")
    axes.set_ylabel("bytes per token")
    axes.grid(True, alpha=0.3)
    axes.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    image = io.BytesIO()
    figure.savefig(image, format="png", bbox_inches="tight")
    pyplot.close(figure)
    write_atomic(path, image.getvalue(), what="plot")


def run(args: argparse.Namespace) -> int:
    records = evaluate(args)
    if args.json:
        for record in records:
            print(json.dumps(record, ensure_ascii=False))
    else:
        by_input: dict[str, list[dict]] = {}
        for record in records:
            by_input.setdefault(record["input"], []).append(record)
        print("\n\n".join(format_table(rows) for rows in by_input.values()))
    if args.plot:
        write_plot(records, args.plot)
        print(f"wrote {args.plot}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "evaluate":
        argv = argv[1:]
    args = build_parser().parse_args(argv)
    from jobs.exit_codes import run_command

    return run_command("shardpiece evaluate", lambda: run(args))


if __name__ == "__main__":
    sys.exit(main())
