"""``shardpiece train --algorithm bpe``: BPE over a Spark-computed chunk count table, merges on the driver.

    shardpiece train --algorithm bpe --input corpus.txt --vocab-size 32000 --output bpe.model
    shardpiece train --algorithm bpe --pretokenizer byte_level --pattern llama3 --input 'shards/*.txt.gz' \\
        --vocab-size 32000 64000 --output models/                         # nested vocabularies
    shardpiece train --algorithm bpe --pretokenizer sentencepiece ...     # "▁" words, SentencePiece's BPE rules
    shardpiece train --algorithm bpe --master none --threads 2 --input corpus.txt ...
                                                                          # no Spark: one process, two threads

``--master none`` trains without Spark, for text that fits one machine's memory: local text files (plain, .gz,
.zst; one document per line, as Spark's text source reads them) are counted by the same chunk-count monoid with
``--threads`` threads, the same documents are held out (Spark's ``xxhash64`` rule, :func:`split_held_out`) and
the same driver step runs, so the model is byte-identical to the Spark job's.

On a local master, local text files (plain, .gz, .zst) and Parquet files are read by pyarrow inside the Spark
tasks and counted there (:func:`pipelines.bpe.count_chunks_direct`: no JVM reading, no shuffle; same table and
model bytes); ``--reader spark``, ``--partitions``, JSONL input and cluster masters use Spark's reader.

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

import numpy as np

from jobs.training import algorithm_job_main, check_holdout_fraction, evaluation_sample, evaluation_texts, \
    model_paths, split_holdout
from tokenizer.errors import ConfigError, InputError


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
    add("--max-piece-length", dest="max_piece_length", type=int,
        help="longest piece: bytes for byte_level (default 32), characters for sentencepiece (default 16)")
    add("--character-coverage", dest="character_coverage", type=float, default=0.9995,
        help="sentencepiece: share of character occurrences whose characters are merged (default 0.9995)")
    add("--special-tokens", dest="special_tokens", nargs="*", default=["<pad>", "<s>", "</s>"])
    add("--input-format", dest="input_format", choices=["text", "jsonl", "parquet"])
    add("--text-column", dest="text_column", default="text")
    add("--partitions", type=int, metavar="N", help="repartition the documents into N partitions")
    add("--reader", choices=["auto", "spark"], default="auto",
        help="auto: local text and Parquet files on a local master are read and counted by pyarrow in the "
             "tasks (same model bytes); spark: always Spark's reader")
    add("--master", metavar="URL", help="Spark master (default local[*]); 'none': no Spark, one process")
    add("--threads", type=int, default=os.cpu_count() or 1, metavar="N",
        help="--master none: counting threads (default: the CPU count)")
    add("--driver-memory", dest="driver_memory", metavar="SIZE")
    add("--holdout-fraction", dest="holdout_fraction", type=float, default=0.001)
    add("--eval-documents", dest="eval_documents", type=int, default=2000)
    add("--quiet", action="store_true")
    return parser


def settings_from(args: argparse.Namespace):
    from tokenizer.trainers.bpe import BpeSettings

    return BpeSettings(vocab_sizes=tuple(int(v) for v in args.vocab_size), pretokenizer=args.pretokenizer,
                       pattern=args.pattern, min_count=args.min_count, max_piece_length=args.max_piece_length,
                       special_tokens=tuple(args.special_tokens),
                       character_coverage=args.character_coverage).validate()


def read_text_lines(inputs: list[str]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """``(data uint8, offsets int64, files)``: every line of local text files (plain, ``.gz``, ``.zst``; globs and
    directories expanded, sorted), split at ``\\n`` as Spark's text source does, without the newlines."""
    import glob

    from pipelines.readers import read_local_text_file

    files: list[str] = []
    for pattern in inputs:
        if "://" in pattern and not pattern.startswith("file://"):
            raise ConfigError(f"--input {pattern}: --master none reads local files only; run with Spark "
                              "(--master local[*] or a cluster URL) for other filesystems")
        path = pattern[len("file://"):] if pattern.startswith("file://") else pattern
        found = sorted(glob.glob(path)) if glob.has_magic(path) else [path] if os.path.exists(path) else []
        for item in found:
            if os.path.isdir(item):
                files.extend(sorted(os.path.join(item, f) for f in os.listdir(item)
                                    if not f.startswith((".", "_")) and os.path.isfile(os.path.join(item, f))))
            elif os.path.isfile(item):
                files.append(item)
        if not found:
            raise InputError(f"--input {pattern}: no such file; check the path")
    for path in files:
        if path.endswith((".jsonl", ".json", ".parquet")):
            raise ConfigError(f"--input {path}: --master none reads text files only (one document per line); "
                              "run with Spark for JSONL or Parquet")
    parts = [read_local_text_file(path) for path in files]
    datas, offset_parts, base = [], [np.zeros(1, np.int64)], 0
    for blob in parts:
        raw = np.frombuffer(blob, np.uint8)
        newlines = np.flatnonzero(raw == 0x0A)
        starts = np.concatenate([[0], newlines + 1])
        ends = np.concatenate([newlines, [len(raw)]])
        if len(raw) and raw[-1] == 0x0A:  # no empty last line after a final newline
            starts, ends = starts[:-1], ends[:-1]
        keep = np.ones(len(raw), bool)
        keep[newlines] = False
        datas.append(raw[keep])
        offset_parts.append(base + np.cumsum(ends - starts))
        base += int(len(raw) - len(newlines))
    data = np.concatenate(datas) if datas else np.zeros(0, np.uint8)
    return data, np.concatenate(offset_parts).astype(np.int64), files


def split_held_out(data: np.ndarray, offsets: np.ndarray, fraction: float):
    """``((training data, offsets), (held-out data, offsets))`` of packed documents (uint8 data, int64 offsets):
    the documents ``jobs.training.split_holdout`` holds out on Spark (its ``xxhash64`` rule, reproduced by
    :mod:`tokenizer.kernels.xxhash`) go to the second part, both in input order. ``fraction`` 0 holds out
    nothing."""
    from tokenizer.kernels.xxhash import held_out_documents

    held = held_out_documents(data, offsets, fraction)
    if not held.any():
        return (data, offsets), (data[:0], np.zeros(1, np.int64))
    lengths = np.diff(offsets)
    byte_held = np.repeat(held, lengths)
    base = data[offsets[0]:offsets[-1]]
    parts = []
    for keep, byte_keep in ((~held, ~byte_held), (held, byte_held)):
        bounds = np.zeros(int(keep.sum()) + 1, np.int64)
        np.cumsum(lengths[keep], out=bounds[1:])
        parts.append((base[byte_keep], bounds))
    return parts[0], parts[1]


def run_local(args: argparse.Namespace, settings, progress: Callable[[str], None]) -> dict[str, Any]:
    """``--master none``: the Spark job's steps in one process (see the module docstring)."""
    from jobs.evaluate import bytes_per_token
    from jobs.training import EVAL_BYTES
    from tokenizer.files import write_atomic
    from tokenizer.trainers import bpe

    check_holdout_fraction(args.holdout_fraction)
    if args.partitions is not None:
        raise ConfigError("--partitions needs Spark; with --master none use --threads")
    if args.threads < 1:
        raise ConfigError(f"--threads {args.threads}: use 1 or more")
    sizes = sorted(settings.vocab_sizes)
    paths, manifest_path = model_paths(args.output, sizes, "bpe")
    wall = time.perf_counter()
    stages = []

    def stage(name: str, started: float, **counts) -> None:
        seconds = time.perf_counter() - started
        stages.append({"name": name, "seconds": round(seconds, 3), **counts})
        shown = ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in counts.items())
        progress(f"[{name}] {seconds:.1f} s" + (f": {shown}" if shown else ""))

    started = time.perf_counter()
    data, offsets, files = read_text_lines(args.input)
    (data, offsets), (held_data, held_offsets) = split_held_out(data, offsets, args.holdout_fraction)
    lengths = np.diff(offsets)
    documents = int(np.count_nonzero(lengths))
    stage("read", started, files=len(files), documents=documents, bytes=int(offsets[-1]),
          held_out_documents=int(np.count_nonzero(np.diff(held_offsets))))
    started = time.perf_counter()
    progress(f"[chunks] pre-tokenizing ({settings.pretokenizer}) and counting chunks with {args.threads} threads")
    chunks, counts = bpe.sort_chunks(*bpe.count_chunks_threaded(data, offsets, settings, args.threads))
    stage("chunks", started, documents=documents, distinct_chunks=len(chunks), chunks=int(counts.sum()))
    started = time.perf_counter()
    merges, models, fingerprint = bpe.train_from_table(chunks, counts, settings,
                                                       {"holdout_fraction": args.holdout_fraction})
    stage("merges", started, merges=len(merges.left))
    for size in sizes:
        write_atomic(paths[size], models[size].to_bytes())
    def first_documents(packed, bounds):
        return [packed[bounds[k]:bounds[k + 1]].tobytes()
                for k in np.flatnonzero(np.diff(bounds))[:args.eval_documents].tolist()]

    texts, sample_kind = evaluation_texts(first_documents(held_data, held_offsets),
                                          first_documents(data, offsets), args.eval_documents)
    manifest = {
        "command": "shardpiece train --algorithm bpe",
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": socket.gethostname(), "python": platform.python_version(), "spark_version": None,
        "spark_master": "none", "threads": args.threads, "input": list(args.input), "input_files": files,
        "holdout_fraction": args.holdout_fraction, "settings": settings.to_dict(),
        "chunk_table_fingerprint": fingerprint, "training_documents": documents, "stages": stages,
        "models": {
            str(size): {"path": os.path.abspath(paths[size]), "vocab_size": models[size].vocab_size,
                        "evaluation": {"sample": sample_kind, **bytes_per_token(paths[size], texts)}}
            for size in sizes},
        "seconds_total": round(time.perf_counter() - wall, 3),
    }
    write_atomic(manifest_path, (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode())
    manifest["manifest_path"] = manifest_path
    return manifest


def run(args: argparse.Namespace, progress: Callable[[str], None] = print) -> dict[str, Any]:
    if (args.master or "").lower() == "none":
        return run_local(args, settings_from(args), progress)
    from jobs.evaluate import bytes_per_token
    from pipelines.bpe import count_chunks_direct, train_bpe_spark
    from pipelines.direct_count import direct_units
    from pipelines.readers import read_corpus
    from pipelines.session import build_session
    from pipelines.unigram import counting_session_options
    from tokenizer.files import write_atomic

    settings = settings_from(args)  # fail before Spark starts
    sizes = sorted(settings.vocab_sizes)
    paths, manifest_path = model_paths(args.output, sizes, "bpe")
    if args.partitions is not None and args.partitions < 1:
        raise ConfigError(f"--partitions {args.partitions}: use 1 or more")
    wall = time.perf_counter()
    # a lean local driver JVM and one Python worker at a time counting its shards on every local core (threads,
    # pipelines.session.task_threads), kept for all tasks; coalesced reduce partitions (counting_session_options)
    spark = build_session(args.master, app_name="shardpiece-train-bpe", driver_memory=args.driver_memory,
                          shuffle_partitions=args.partitions, small_driver=True, single_worker=True,
                          extra=counting_session_options(args.master))
    progress(f"[spark] session on {spark.sparkContext.master} in {time.perf_counter() - wall:.1f} s")
    units = None
    if args.reader == "auto" and not args.partitions:
        units = direct_units(spark, args.input, args.input_format, args.text_column)
    counted = training = held_out = None
    if units is not None:  # local text or Parquet files: read and counted in the Python tasks
        check_holdout_fraction(args.holdout_fraction)
        progress(f"[chunks] pre-tokenizing ({settings.pretokenizer}) and counting chunks of {len(units):,} "
                 "units read by pyarrow in the tasks")
        counted = count_chunks_direct(spark, units, settings, args.holdout_fraction,
                                      keep_documents=args.eval_documents, text_column=args.text_column)
    else:
        corpus = read_corpus(spark, args.input, input_format=args.input_format, text_column=args.text_column,
                             partitions=args.partitions)
        training, held_out = split_holdout(corpus.documents, args.holdout_fraction)
    result = train_bpe_spark(training, settings, provenance={"holdout_fraction": args.holdout_fraction},
                             progress=progress, counted=counted)
    for size in sizes:
        write_atomic(paths[size], result.models[size].to_bytes())
    if counted is not None:
        texts, sample_kind = evaluation_texts(counted.held_out, counted.training, args.eval_documents)
    else:
        texts, sample_kind = evaluation_sample(training, held_out, args.eval_documents)
    manifest = {
        "command": "shardpiece train --algorithm bpe",
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": socket.gethostname(), "python": platform.python_version(), "spark_version": spark.version,
        "spark_master": spark.sparkContext.master, "partitions": args.partitions, "input": list(args.input),
        "reader": "pyarrow in the tasks" if counted is not None else "spark",
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
