"""Encoding speed of byte-level BPE per pre-tokenizer pattern, shardpiece against tiktoken on the same merges and
tiktoken's own regex of the pattern, side by side in one run.

    .venv/bin/python benchmarks/encode_patterns.py                              # en, zh, ja
    .venv/bin/python benchmarks/encode_patterns.py --corpus en --test-bytes 2000000 --repeats 5   # quick

For each corpus and pattern -- ``gpt2``, ``llama3`` (tiktoken's cl100k regex) and ``o200k`` (o200k_base's, letters
split by case) -- it trains (or reuses from ``--work``) a byte-level BPE model with shardpiece's trainer on the
first ``--train-bytes`` of NAME.train.txt, and builds a tiktoken ``Encoding`` with the model's merges
(``benchmarks.encode.tiktoken_encoding``) and tiktoken's pattern text
(``tokenizer.interop.tiktoken_files.TIKTOKEN_PATTERN_TEXT``; gpt2: ``benchmarks.encode.GPT2_PATTERN``). On the lines
of NAME.test400k.txt (each without its newline) it times, interleaved, best of ``--repeats``, each timed call right
after an untimed one of the same system: shardpiece ``encode_batch(list, num_threads=1)`` and
``encode_batch(pyarrow array, num_threads=1)``, tiktoken ``encode_ordinary`` per line and
``encode_ordinary_batch(list, num_threads=1)``; the ratios take tiktoken's faster one-thread call. It counts the
lines whose ids differ from tiktoken's (tiktoken merges a pair whenever its concatenation is a token, merge replay
only listed pairs: a count, not a failure). MB/s = UTF-8 bytes of the lines / seconds (1 MB = 10**6 bytes).
Results: a table on stdout and ``benchmarks/results/encode-patterns.json``.
"""

from __future__ import annotations

import argparse
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))

from benchmarks import common  # noqa: E402
from benchmarks.encode import GPT2_PATTERN, count_mismatches, tiktoken_encoding, train_byte_level_bpe  # noqa: E402

PATTERNS = ("gpt2", "llama3", "o200k")
#: tiktoken's name of each pattern
TIKTOKEN_NAMES = {"gpt2": "gpt2", "llama3": "cl100k", "o200k": "o200k"}


def pattern_text(pattern: str) -> str:
    from tokenizer.interop.tiktoken_files import TIKTOKEN_PATTERN_TEXT

    return GPT2_PATTERN if pattern == "gpt2" else TIKTOKEN_PATTERN_TEXT[TIKTOKEN_NAMES[pattern]]


def bench_corpus(name: str, args) -> dict:
    import pyarrow as pa

    from tokenizer import Tokenizer

    os.makedirs(args.work, exist_ok=True)
    train, train_bytes = common.capped_train_file(args.corpora, name, args.work, args.train_bytes)
    lines = common.read_lines(common.corpus_path(args.corpora, name, "test400k"))
    lines = common.lines_within(lines, args.test_bytes)
    nbytes = sum(len(line.encode("utf-8")) for line in lines)
    arrow = pa.array(lines, type=pa.string())
    record: dict = {"corpus": name, "train_bytes": train_bytes, "test_lines": len(lines), "test_bytes": nbytes,
                    "models": {}}
    systems, rows = {}, []
    for pattern in args.patterns:
        path = os.path.join(args.work, f"byte-level-bpe-{pattern}-{name}-{train_bytes}b-{args.vocab_size}.model")
        seconds = train_byte_level_bpe(train, path, args.vocab_size, pattern)
        if seconds:
            print(f"[{name}] trained shardpiece byte-level BPE ({pattern}) in {seconds:.1f} s", flush=True)
        tok = Tokenizer.load(path)
        encoding, to_ours = tiktoken_encoding(tok, pattern_text(pattern))
        tok.encode_batch(lines[:50], num_threads=1)  # compile / load the Numba cache, build arrays
        ours = tok.encode_batch(lines, num_threads=1)
        theirs = [to_ours[ids].tolist() for ids in encoding.encode_ordinary_batch(lines, num_threads=1)]
        mismatches, _ = count_mismatches(ours, theirs)
        tokens = sum(map(len, ours))
        record["models"][pattern] = {"path": path, "tokens": tokens, "tiktoken_tokens": sum(map(len, theirs)),
                                     "id_mismatches": mismatches}
        rows.append((pattern, TIKTOKEN_NAMES[pattern], tok.vocab_size, tokens, round(nbytes / max(1, tokens), 3),
                     mismatches))
        systems[f"shardpiece[{pattern}] batch 1t"] = lambda tok=tok: tok.encode_batch(lines, num_threads=1)
        systems[f"shardpiece[{pattern}] arrow 1t"] = lambda tok=tok: tok.encode_batch(arrow, num_threads=1)
        systems[f"tiktoken[{pattern}] per-line"] = lambda e=encoding: [e.encode_ordinary(line) for line in lines]
        systems[f"tiktoken[{pattern}] batch 1t"] = lambda e=encoding: e.encode_ordinary_batch(lines, num_threads=1)
    record["load_before"] = common.load_average()
    best = common.interleaved_best(systems, args.repeats, warm_up=True)
    record["load_after"] = common.load_average()
    mbps = {k: nbytes / v / 1e6 for k, v in best.items()}
    record["mb_per_s"] = {k: round(v, 3) for k, v in mbps.items()}
    ratios = {}
    for pattern in args.patterns:
        peer = max(mbps[f"tiktoken[{pattern}] per-line"], mbps[f"tiktoken[{pattern}] batch 1t"])
        ratios[f"{pattern}: shardpiece batch 1t / tiktoken 1t"] = common.ratio(
            mbps[f"shardpiece[{pattern}] batch 1t"], peer)
        ratios[f"{pattern}: shardpiece arrow 1t / tiktoken 1t"] = common.ratio(
            mbps[f"shardpiece[{pattern}] arrow 1t"], peer)
    record["ratios"] = {k: round(v, 3) for k, v in ratios.items()}
    print(f"\n## {name}: {len(lines):,} lines, {nbytes:,} bytes; {common.load_text()}\n")
    print(common.markdown_table(["system", "MB/s", "best s"], [(k, mbps[k], best[k]) for k in systems]))
    print()
    print(common.markdown_table(["ratio", "value"], list(ratios.items())))
    print()
    print(common.markdown_table(["pattern", "tiktoken's", "vocab", "tokens", "bytes/token", "lines with other ids"],
                                rows))
    sys.stdout.flush()
    return record


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", nargs="+", default=list(common.CORPORA), choices=common.CORPORA)
    parser.add_argument("--patterns", nargs="+", default=list(PATTERNS), choices=PATTERNS)
    parser.add_argument("--corpora", default=common.DEFAULT_CORPORA,
                        help=f"directory of NAME.train/.test400k.txt (default {common.DEFAULT_CORPORA})")
    parser.add_argument("--work", default=common.DEFAULT_WORK, help="model cache (default %(default)s)")
    parser.add_argument("--vocab-size", type=int, default=32000, help="of every model (default %(default)s)")
    parser.add_argument("--train-bytes", type=int, default=4_000_000,
                        help="train on this many bytes of NAME.train.txt (default %(default)s)")
    parser.add_argument("--test-bytes", type=int, default=0, help="use only the first N bytes of the test lines")
    parser.add_argument("--repeats", type=int, default=7, help="timings per system; the best counts")
    args = parser.parse_args(argv)
    print(f"# encode per pattern; {common.load_text()}", flush=True)
    results = {"settings": vars(args), "corpora": [bench_corpus(name, args) for name in args.corpus]}
    path = common.write_results("encode-patterns", results)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
