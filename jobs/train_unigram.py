"""``shardpiece train --algorithm unigram``: SentencePiece's unigram trainer on Spark.

    shardpiece train --algorithm unigram --input corpus.txt --vocab-size 32000 --output unigram.model
    shardpiece train --algorithm unigram --unigram-variant byte --input 'shards/*.txt.gz' --vocab-size 32000 \\
        --output byte-unigram.model                       # lossless: raw bytes, no "▁"
    shardpiece train --algorithm unigram --normalizer-model m.model ...   # take a SentencePiece model's charsmap

``jobs/train.py`` hands every ``--algorithm unigram`` run to :func:`main`. Options and defaults are
SentencePiece's; the model file holds only what determines the result, the manifest (``OUTPUT.manifest.json``)
the run's details (time, host, Spark master, partitions, stage timings, evaluation).
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

from jobs.training import algorithm_job_main, check_holdout_fraction, evaluation_sample, evaluation_texts, \
    model_paths, split_holdout
from tokenizer.errors import ConfigError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="shardpiece train --algorithm unigram",
                                     description="Train a SentencePiece-style unigram model with Spark.")
    add = parser.add_argument
    add("--algorithm", choices=["unigram"], default="unigram")
    add("--input", nargs="+", required=True, metavar="PATH")
    add("--vocab-size", dest="vocab_size", nargs="+", type=int, required=True, metavar="N",
        help="vocabulary size(s), special, control, user-defined and byte pieces included")
    add("--output", required=True, metavar="MODEL", help="model file (one size) or directory (several)")
    add("--unigram-variant", dest="variant", choices=["sentencepiece", "byte"], default="sentencepiece",
        help="sentencepiece (normalizer, '▁', SentencePiece-compatible) or byte (raw bytes, lossless)")
    add("--character-coverage", dest="character_coverage", type=float, default=0.9995)
    add("--seed-sentencepiece-size", dest="seed_sentencepiece_size", type=int, default=1_000_000)
    add("--shrinking-factor", dest="shrinking_factor", type=float, default=0.75)
    add("--num-sub-iterations", dest="num_sub_iterations", type=int, default=2)
    add("--max-sentencepiece-length", dest="max_sentencepiece_length", type=int, default=16)
    add("--max-sentence-length", dest="max_sentence_length", type=int, default=4192,
        help="skip longer sentences (bytes), as SentencePiece; 0: no limit")
    add("--byte-fallback", dest="byte_fallback", action="store_true")
    add("--split-digits", dest="split_digits", action="store_true")
    add("--no-split-by-whitespace", dest="split_by_whitespace", action="store_false")
    add("--no-split-by-number", dest="split_by_number", action="store_false")
    add("--no-split-by-unicode-script", dest="split_by_unicode_script", action="store_false")
    add("--treat-whitespace-as-suffix", dest="treat_whitespace_as_suffix", action="store_true")
    add("--allow-whitespace-only-pieces", dest="allow_whitespace_only_pieces", action="store_true")
    add("--no-dummy-prefix", dest="add_dummy_prefix", action="store_false")
    add("--keep-extra-whitespaces", dest="remove_extra_whitespaces", action="store_false")
    add("--normalizer-model", dest="normalizer_model", metavar="SP_MODEL",
        help="use this SentencePiece .model's normalizer (charsmap and whitespace flags); default identity")
    add("--user-defined-symbols", dest="user_defined_symbols", nargs="*", default=[])
    add("--control-symbols", dest="control_symbols", nargs="*", default=[])
    add("--pad-id", dest="pad_id", type=int, default=-1)
    add("--estep", choices=["auto", "driver", "spark"], default="auto",
        help="where E-steps run: driver (collected chunk table), spark, auto (driver up to 512 MiB of chunks)")
    add("--threads", type=int, metavar="N",
        help="threads of driver E-steps (default: the local master's cores, 1 on a cluster); same model bytes")
    add("--reader", choices=["auto", "spark"], default="auto",
        help="auto: local text and Parquet files on a local master are read and counted by pyarrow in the "
             "tasks (same model bytes); spark: always Spark's reader")
    add("--input-format", dest="input_format", choices=["text", "jsonl", "parquet"])
    add("--text-column", dest="text_column", default="text")
    add("--partitions", type=int)
    add("--master")
    add("--driver-memory", dest="driver_memory")
    add("--holdout-fraction", dest="holdout_fraction", type=float, default=0.001)
    add("--eval-documents", dest="eval_documents", type=int, default=2000)
    add("--config", help="not read by the unigram job: pass options on the command line")
    add("--quiet", action="store_true")
    return parser


def settings_from(args: argparse.Namespace, vocab_size: int):
    from tokenizer.trainers.unigram import UnigramSettings

    extra: dict[str, Any] = {}
    if args.normalizer_model:
        from tokenizer.interop.sentencepiece import load_sentencepiece

        reference = load_sentencepiece(args.normalizer_model)
        spec = reference.pretokenizer
        extra = {"charsmap": reference.charsmap,
                 "normalizer_name": reference.provenance.get("sentencepiece_normalizer", "custom"),
                 "add_dummy_prefix": spec.get("add_dummy_prefix", True),
                 "remove_extra_whitespaces": spec.get("remove_extra_whitespaces", True)}
    fields = ("variant", "character_coverage", "seed_sentencepiece_size", "shrinking_factor", "num_sub_iterations",
              "max_sentencepiece_length", "max_sentence_length", "byte_fallback", "split_digits",
              "split_by_whitespace", "split_by_number", "split_by_unicode_script", "treat_whitespace_as_suffix",
              "allow_whitespace_only_pieces", "add_dummy_prefix", "remove_extra_whitespaces", "pad_id")
    kwargs = {name: getattr(args, name) for name in fields}
    kwargs.update(extra)
    return UnigramSettings(vocab_size=vocab_size, user_defined_symbols=tuple(args.user_defined_symbols),
                           control_symbols=tuple(args.control_symbols), **kwargs).validate()


def run(args: argparse.Namespace, progress: Callable[[str], None] = print) -> dict[str, Any]:
    from jobs.evaluate import bytes_per_token
    from pipelines.readers import read_corpus
    from pipelines.session import build_session
    from pipelines.unigram import count_chunks_direct, counting_session_options, driver_threads, train_unigram
    from tokenizer.files import write_atomic

    if args.threads is not None and args.threads < 1:
        raise ConfigError(f"--threads {args.threads}: use 1 or more")
    sizes = [int(v) for v in args.vocab_size]
    all_settings = {size: settings_from(args, size) for size in sizes}  # fail before Spark starts
    paths, manifest_path = model_paths(args.output, sizes, "unigram")
    wall = time.perf_counter()
    # a lean local driver JVM and one Python worker at a time counting its shards on every local core (threads,
    # pipelines.session.task_threads), kept for all tasks; coalesced reduce partitions (counting_session_options)
    spark = build_session(args.master, app_name="shardpiece-train-unigram", driver_memory=args.driver_memory,
                          shuffle_partitions=args.partitions, small_driver=True, single_worker=True,
                          extra=counting_session_options(args.master))
    progress(f"[spark] session on {spark.sparkContext.master} in {time.perf_counter() - wall:.1f} s")
    units = direct_count_units(spark, args)
    counted = None
    if units is not None:  # local text or Parquet files: read and counted in the Python tasks, once for every size
        check_holdout_fraction(args.holdout_fraction)
        progress(f"[chunks] counting {len(units):,} units read by pyarrow in the tasks")
        counted = count_chunks_direct(spark, units, all_settings[sizes[0]], args.holdout_fraction,
                                      keep_documents=args.eval_documents, text_column=args.text_column)
        training = held_out = None
    else:
        corpus = read_corpus(spark, args.input, input_format=args.input_format, text_column=args.text_column,
                             partitions=args.partitions)
        training, held_out = split_holdout(corpus.documents, args.holdout_fraction)
    results = {}
    for size in sizes:
        result = train_unigram(training, all_settings[size], estep=args.estep, partitions=args.partitions,
                               provenance={"vocab_size_requested": size,
                                           "holdout_fraction": args.holdout_fraction},
                               threads=args.threads if counted is None else
                               args.threads or driver_threads(spark.sparkContext.master),
                               counted=counted, progress=progress)
        started = time.perf_counter()
        write_atomic(paths[size], result.model.to_bytes())
        progress(f"[write] {paths[size]} in {time.perf_counter() - started:.1f} s")
        results[size] = result
    started = time.perf_counter()
    if counted is not None:
        texts, sample_kind = evaluation_texts(counted.held_out, counted.training, args.eval_documents)
    else:
        texts, sample_kind = evaluation_sample(training, held_out, args.eval_documents)
    progress(f"[eval] {len(texts):,} evaluation documents sampled in {time.perf_counter() - started:.1f} s")
    manifest = {
        "command": "shardpiece train --algorithm unigram",
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": socket.gethostname(), "python": platform.python_version(), "spark_version": spark.version,
        "spark_master": spark.sparkContext.master, "partitions": args.partitions, "input": list(args.input),
        "reader": "pyarrow in the tasks" if counted is not None else "spark",
        "holdout_fraction": args.holdout_fraction,
        "models": {
            str(size): {
                "path": os.path.abspath(paths[size]), "vocab_size": results[size].model.vocab_size,
                "settings": all_settings[size].to_dict(), "estep": results[size].estep_mode,
                "chunks": results[size].chunks, "sentences": results[size].sentences,
                "skipped_sentences": results[size].skipped_sentences,
                "stages": [s.to_dict() for s in results[size].stages],
                "evaluation": {"sample": sample_kind, **bytes_per_token(paths[size], texts)},
            } for size in sizes},
        "seconds_total": round(time.perf_counter() - wall, 3),
    }
    write_atomic(manifest_path, (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode())
    manifest["manifest_path"] = manifest_path
    return manifest


def direct_count_units(spark, args: argparse.Namespace):
    """Work units when the unigram job can count its input in the tasks (``--reader auto``, E-steps that may run
    on the driver, no ``--partitions``, and :func:`pipelines.direct_count.direct_units`'s conditions); else
    ``None`` (the Spark path, same model bytes)."""
    from pipelines.direct_count import direct_units

    if args.reader != "auto" or args.estep == "spark" or args.partitions:
        return None
    return direct_units(spark, args.input, args.input_format, args.text_column)


def main(argv: list[str] | None = None) -> int:
    return algorithm_job_main(argv, build_parser, run)


if __name__ == "__main__":
    sys.exit(main())
