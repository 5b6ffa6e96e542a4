"""``shardpiece train --algorithm bpe``: BPE over a Spark-computed chunk count table, merges on the driver.

    shardpiece train --algorithm bpe --input corpus.txt --vocab-size 32000 --output bpe.model
    shardpiece train --algorithm bpe --pretokenizer byte_level --pattern llama3 --input 'shards/*.txt.gz' \\
        --vocab-size 32000 64000 --output models/                         # nested vocabularies
    shardpiece train --algorithm bpe --pretokenizer sentencepiece ...     # "▁" words, SentencePiece's BPE rule

``jobs/train.py`` hands every ``--algorithm bpe`` run to :func:`main`. ``byte_level`` models export to a Hugging Face
``tokenizer.json`` (``shardpiece export --to huggingface``). The model file holds only what determines the result;
the manifest (``OUTPUT.manifest.json``, or ``OUTPUT/manifest.json`` for several sizes) the run's details.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import sys
import time
from typing import Any, Callable

from jobs.training import algorithm_job_main, evaluation_sample, model_paths, split_holdout
from tokenizer.errors import ConfigError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="shardpiece train --algorithm bpe",
                                     description="Train a BPE model with Spark (chunk counts) and Numba (merges).")
    add = parser.add_argument
    add("--algorithm", choices=["bpe"], default="bpe")
    add("--input", nargs="+", required=True, metavar="PATH")
    add("--vocab-size", dest="vocab_size", nargs="+", type=int, required=True, metavar="N",
        help="vocabulary size(s), the 256 byte pieces and the special tokens included")
    add("--output", required=True, metavar="MODEL", help="model file (one size) or directory (several)")
    add("--pretokenizer", choices=["byte_level", "sentencepiece"], default="byte_level",
        help="byte_level: regex pre-split, tokenizers/tiktoken-compatible (default); sentencepiece: '▁' words")
    add("--pattern", choices=["gpt2", "llama3"], default="gpt2", help="the byte_level regex (default gpt2)")
    add("--min-count", dest="min_count", type=int, default=2, help="stop when the best pair is rarer (default 2)")
    add("--max-piece-length", dest="max_piece_length", type=int, default=32, help="longest piece in bytes (32)")
    add("--special-tokens", dest="special_tokens", nargs="*", default=["<pad>", "<s>", "</s>"])
    add("--input-format", dest="input_format", choices=["text", "jsonl", "parquet"])
    add("--text-column", dest="text_column", default="text")
    add("--partitions", type=int, metavar="N", help="repartition the documents into N partitions")
    add("--master", metavar="URL", help="Spark master (default local[*])")
    add("--driver-memory", dest="driver_memory", metavar="SIZE")
    add("--holdout-fraction", dest="holdout_fraction", type=float, default=0.001)
    add("--eval-documents", dest="eval_documents", type=int, default=2000)
    add("--quiet", action="store_true")
    return parser


def settings_from(args: argparse.Namespace):
    from tokenizer.trainers.bpe import BpeSettings

    return BpeSettings(vocab_sizes=tuple(int(v) for v in args.vocab_size), pretokenizer=args.pretokenizer,
                       pattern=args.pattern, min_count=args.min_count, max_piece_length=args.max_piece_length,
                       special_tokens=tuple(args.special_tokens)).validate()


def run(args: argparse.Namespace, progress: Callable[[str], None] = print) -> dict[str, Any]:
    from jobs.evaluate import bytes_per_token
    from pipelines.bpe import train_bpe_spark
    from pipelines.readers import read_corpus
    from pipelines.session import build_session
    from tokenizer.model import write_atomic

    settings = settings_from(args)  # fail before Spark starts
    sizes = sorted(settings.vocab_sizes)
    paths, manifest_path = model_paths(args.output, sizes, "bpe")
    if args.partitions is not None and args.partitions < 1:
        raise ConfigError(f"--partitions {args.partitions}: use 1 or more")
    wall = time.perf_counter()
    spark = build_session(args.master, app_name="shardpiece-train-bpe", driver_memory=args.driver_memory,
                          shuffle_partitions=args.partitions)
    progress(f"[spark] session on {spark.sparkContext.master} in {time.perf_counter() - wall:.1f} s")
    corpus = read_corpus(spark, args.input, input_format=args.input_format, text_column=args.text_column,
                         partitions=args.partitions)
    documents = corpus.documents
    training, held_out = split_holdout(documents, args.holdout_fraction)
    result = train_bpe_spark(training, settings, provenance={"holdout_fraction": args.holdout_fraction},
                             progress=progress)
    for size in sizes:
        write_atomic(paths[size], result.models[size].to_bytes())
    texts, sample_kind = evaluation_sample(training, held_out, args.eval_documents)
    manifest = {
        "command": "shardpiece train --algorithm bpe",
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": socket.gethostname(), "python": platform.python_version(), "spark_version": spark.version,
        "spark_master": spark.sparkContext.master, "partitions": args.partitions, "input": list(args.input),
        "holdout_fraction": args.holdout_fraction, "settings": settings.to_dict(),
        "chunk_table_fingerprint": result.fingerprint, "training_documents": result.documents,
        "stages": [s.to_dict() for s in result.stages],
        "models": {
            str(size): {"path": os.path.abspath(paths[size]), "vocab_size": result.models[size].vocab_size,
                        "evaluation": {"sample": sample_kind, **bytes_per_token(paths[size], texts)}}
            for size in sizes},
        "seconds_total": round(time.perf_counter() - wall, 3),
    }
    write_atomic(manifest_path, (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode())
    manifest["manifest_path"] = manifest_path
    return manifest


def main(argv: list[str] | None = None) -> int:
    return algorithm_job_main(argv, build_parser, run)


if __name__ == "__main__":
    sys.exit(main())
