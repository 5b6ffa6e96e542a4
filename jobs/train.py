"""``shardpiece train``: learn a vocabulary from a corpus with Spark.

    shardpiece train --algorithm bytepiece --input 'corpus/*.txt.gz' --vocab-size 32000 --output bp.model
    shardpiece train --input data.parquet --text-column body --vocab-size 8000 16000 --output models/
    shardpiece train --config configs/demo.yaml --partitions 8          # flags win over the file

With one vocab size ``--output`` is the model file, the run manifest is ``OUTPUT.manifest.json`` and the resolved
config ``OUTPUT.config.yaml``; with several it is a directory holding ``bytepiece-SIZE.model`` per size,
``manifest.json`` and ``config.yaml``. The model files hold only what determines the result (settings, corpus
fingerprint); time, host, versions, input file hashes, per-stage timings and output checksums go to the manifest
(:mod:`jobs.manifest`).

Every stage's output is kept in a work directory (``--work-dir``, default ``.shardpiece-work`` beside the output)
keyed by the settings and the input's content fingerprint, so a killed run resumes from its last finished stage
when started again with the same options, and gives the same model bytes (:mod:`pipelines.workdir`).
"""

from __future__ import annotations

import argparse
import os
import platform
import socket
import sys
import time
from typing import Any, Callable

from jobs.training import evaluation_sample, exit_code_of, model_paths, requested_algorithm, split_holdout
from tokenizer.errors import ConfigError

DEFAULTS: dict[str, Any] = {
    "algorithm": "bytepiece",
    "order": 6,
    "min_count": 2,
    "max_piece_length": 36,
    "normalization": "identity",
    "isolate_digits": False,
    "ensure_unicode": True,
    "refine_em_rounds": 0,
    "refine_em_mode": "viterbi",
    "text_column": "text",
    "holdout_fraction": 0.001,
    "eval_documents": 2000,
}
_WORK_DIR_NAME = ".shardpiece-work"
_SETTINGS_KEYS = ("order", "min_count", "max_piece_length", "normalization", "isolate_digits", "ensure_unicode",
                  "special_tokens", "refine_em_rounds", "refine_em_mode")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="shardpiece train", description="Train a byte-level vocabulary with Spark.",
        epilog="Every option may also be given in --config FILE (YAML, keys as the option names with '_'); "
               "command-line options win.",
    )
    add = parser.add_argument
    add("--config", metavar="FILE", help="YAML file of options (see configs/demo.yaml)")
    add("--algorithm", choices=["bytepiece", "unigram", "bpe"], help="training algorithm (default bytepiece)")
    add("--input", nargs="+", metavar="PATH", help="files, globs or directories (any Spark filesystem URI)")
    add("--vocab-size", dest="vocab_size", nargs="+", type=int, metavar="N",
        help="vocabulary size(s), counting the 256 byte pieces and the special tokens")
    add("--output", metavar="MODEL", help="model file (one size) or directory (several sizes)")
    add("--order", type=int, help="longest byte n-gram of the language model, 1..7 (default 6)")
    add("--min-count", dest="min_count", type=int, help="prune n-grams and pieces rarer than this (default 2)")
    add("--max-piece-length", dest="max_piece_length", type=int, help="longest piece in bytes (default 36)")
    add("--normalization", choices=["identity", "nfc"], help="identity (lossless, default) or nfc")
    add("--isolate-digits", dest="isolate_digits", action="store_const", const=True,
        help="every decimal digit is a piece of its own")
    add("--refine-em-rounds", dest="refine_em_rounds", type=int, help="unigram EM rounds after pruning (default 0)")
    add("--input-format", dest="input_format", choices=["text", "jsonl", "parquet"],
        help="default: guessed from the file names")
    add("--text-column", dest="text_column", metavar="NAME", help="JSONL field / Parquet column (default text)")
    add("--partitions", type=int, metavar="N", help="repartition the documents into N partitions")
    add("--master", metavar="URL", help="Spark master (default local[*])")
    add("--driver-memory", dest="driver_memory", metavar="SIZE",
        help="Spark driver memory (default 512m on a local master, else 4g)")
    add("--holdout-fraction", dest="holdout_fraction", type=float, metavar="F",
        help="share of documents held out of training to measure bytes per token (default 0.001; 0: measure on "
             "a sample of the training documents)")
    add("--work-dir", dest="work_dir", metavar="DIR",
        help="where finished stages are kept for resuming (default: .shardpiece-work beside --output)")
    add("--no-resume", dest="resume", action="store_const", const=False,
        help="recompute every stage even if the work directory holds it")
    add("--set", dest="overrides", action="append", metavar="KEY=VALUE",
        help="override any config key (value read as YAML), e.g. --set min_count=8 --set spark.executor.memory=8g;"
             " repeatable; wins over --config, loses to the named options")
    add("--quiet", action="store_true", help="print only the summary")
    return parser


def resolve_options(args: argparse.Namespace) -> dict[str, Any]:
    """Defaults < config file < ``--set`` < named options; raises :class:`ConfigError` for missing or invalid
    options."""
    from jobs.config import load_config, merge_options, parse_overrides

    options = dict(DEFAULTS)
    source = "command line"
    if args.config:
        options.update(load_config(args.config))
        source = f"{args.config} or the command line"
    options = merge_options(options, parse_overrides(getattr(args, "overrides", None)))
    for key, value in vars(args).items():
        if key in ("config", "quiet", "overrides") or value is None:
            continue
        options[key] = value
    for key in ("input", "vocab_size", "output"):
        if options.get(key) in (None, [], ""):
            flag = "--" + key.replace("_", "-")
            raise ConfigError(f"{flag} is required: give it in {source}")
    if isinstance(options["input"], str):
        options["input"] = [options["input"]]
    if isinstance(options["vocab_size"], int):
        options["vocab_size"] = [options["vocab_size"]]
    if not 0.0 <= float(options["holdout_fraction"]) <= 0.5:
        raise ConfigError(f"holdout_fraction={options['holdout_fraction']} is outside 0..0.5")
    if options.get("partitions") is not None and options["partitions"] < 1:
        raise ConfigError(f"--partitions {options['partitions']}: use 1 or more")
    if options["algorithm"] != "bytepiece":
        raise ConfigError(
            f"--algorithm {options['algorithm']} is not available in the Spark train job yet: use --algorithm "
            "bytepiece"
        )
    return options


def train_settings(options: dict[str, Any]):
    from tokenizer.trainers.bytepiece import TrainSettings

    kwargs = {k: options[k] for k in _SETTINGS_KEYS if k in options}
    if "special_tokens" in kwargs:
        kwargs["special_tokens"] = tuple(kwargs["special_tokens"])
    return TrainSettings(vocab_sizes=tuple(int(v) for v in options["vocab_size"]), **kwargs).validate()


def config_path(output: str, vocab_sizes: list[int]) -> str:
    """Where the resolved config goes: ``OUTPUT.config.yaml`` (one size) or ``OUTPUT/config.yaml``."""
    return output + ".config.yaml" if len(vocab_sizes) == 1 else os.path.join(output, "config.yaml")


def default_work_dir(output: str) -> str:
    """``.shardpiece-work`` in the directory that holds ``output``."""
    return os.path.join(os.path.dirname(os.path.abspath(output.rstrip("/") or ".")), _WORK_DIR_NAME)


def resolved_config(options: dict[str, Any]) -> dict[str, Any]:
    """The options as they are run: local input paths, output and work dir made absolute."""
    from jobs.manifest import local_path

    resolved = dict(options)
    resolved["input"] = [os.path.abspath(p) if local_path(p) == p else p for p in options["input"]]
    resolved["output"] = os.path.abspath(options["output"])
    resolved["work_dir"] = os.path.abspath(options.get("work_dir") or default_work_dir(options["output"]))
    return resolved


def run(options: dict[str, Any], *, progress: Callable[[str], None] = print) -> dict[str, Any]:
    """Train with resolved options; returns the manifest (also written beside the model)."""

    from jobs.config import dump_config
    from jobs.evaluate import bytes_per_token
    from jobs.manifest import file_checksums, input_fingerprint, versions, write_manifest
    from pipelines.bytepiece import train_bytepiece
    from pipelines.readers import ReadStats, read_corpus
    from pipelines.session import build_session
    from pipelines.workdir import WorkDir
    from tokenizer.files import write_atomic
    from tokenizer.errors import InputError

    settings = train_settings(options)
    options = resolved_config(options)
    paths, manifest_path = model_paths(options["output"], list(settings.vocab_sizes))
    resolved_path = config_path(options["output"], list(settings.vocab_sizes))
    wall = time.perf_counter()
    started = time.perf_counter()
    spark = build_session(options.get("master"), app_name="shardpiece-train",
                          driver_memory=options.get("driver_memory"), extra=options.get("spark"),
                          shuffle_partitions=options.get("partitions"), small_driver=True,
                          single_worker=True)
    master = spark.sparkContext.master
    progress(f"[spark] session on {master} in {time.perf_counter() - started:.1f} s")

    started = time.perf_counter()
    work_root = options["work_dir"]
    fingerprint = input_fingerprint(spark, options["input"], hash_cache=os.path.join(work_root, "input-hashes.json"))
    fingerprint_seconds = time.perf_counter() - started
    fingerprint["seconds"] = round(fingerprint_seconds, 3)
    progress(f"[fingerprint] {fingerprint_seconds:.1f} s: {len(fingerprint['files'])} files, "
             f"{fingerprint['total_bytes']:,} bytes, {fingerprint['digest']}")
    work = WorkDir(work_root, {
        "algorithm": options["algorithm"], "settings": settings.to_dict(), "input": fingerprint["digest"],
        "input_format": options.get("input_format"), "text_column": options["text_column"],
        "holdout_fraction": float(options["holdout_fraction"]),
    }, resume=options.get("resume", True) is not False, progress=progress)

    started = time.perf_counter()
    corpus = read_corpus(spark, options["input"], input_format=options.get("input_format"),
                         text_column=options["text_column"], partitions=options.get("partitions"))
    read_counts, read_resumed = work.run("read", lambda: corpus.compute_stats().to_dict(), "json")
    read_stats = ReadStats(**read_counts)
    read_seconds = time.perf_counter() - started
    progress(
        f"[read] {read_seconds:.1f} s{' (resumed)' if read_resumed else ''}: {read_stats.files} files "
        f"({read_stats.empty_files} empty), "
        f"{read_stats.rows:,} rows, {read_stats.documents:,} documents, {read_stats.document_bytes:,} bytes; "
        f"skipped {read_stats.null_rows:,} null, {read_stats.empty_rows:,} empty, "
        f"{read_stats.malformed_rows:,} malformed rows; {read_stats.invalid_utf8_rows:,} rows not valid UTF-8 "
        "(kept as bytes)"
    )
    if settings.normalization == "nfc" and read_stats.invalid_utf8_rows:
        raise InputError(
            f"{read_stats.invalid_utf8_rows} documents are not valid UTF-8, which NFC normalization cannot take: "
            "fix the input encoding, or train with --normalization identity (it keeps any bytes)"
        )
    documents = corpus.documents
    holdout = float(options["holdout_fraction"])
    training, held_out = split_holdout(documents, holdout)

    result = train_bytepiece(training, settings, progress=progress,
                             provenance={"holdout_fraction": holdout} if holdout > 0 else None, workdir=work)
    started = time.perf_counter()
    for vocab_size, model in result.models.items():
        write_atomic(paths[vocab_size], model.to_bytes(), what="model file")
    write_atomic(resolved_path, dump_config(options).encode(), what="resolved config")
    write_seconds = time.perf_counter() - started

    started = time.perf_counter()
    texts, sample_kind = evaluation_sample(training, held_out, int(options["eval_documents"]))
    evaluation = {size: bytes_per_token(paths[size], texts) for size in paths}
    eval_seconds = time.perf_counter() - started
    corpus.raw.unpersist()

    manifest = {
        "command": "shardpiece train",
        "created_unix": round(time.time(), 3),
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": socket.gethostname(),
        "python": platform.python_version(),
        "spark_version": spark.version,
        "spark_master": master,
        "default_parallelism": spark.sparkContext.defaultParallelism,
        "partitions": options.get("partitions"),
        "input": list(options["input"]),
        "input_format": corpus.input_format,
        "text_column": options["text_column"],
        "read": read_stats.to_dict(),
        "holdout_fraction": holdout,
        "corpus_fingerprint": result.fingerprint,
        "training_documents": result.documents,
        "settings": settings.to_dict(),
        "config": {k: v for k, v in sorted(options.items()) if v is not None},
        "config_path": os.path.abspath(resolved_path),
        "input_fingerprint": fingerprint,
        "versions": versions(spark),
        "work_dir": work.describe(),
        "stages": [{"name": "read", "seconds": round(read_seconds, 3), "counts": read_stats.to_dict(),
                    "resumed": read_resumed}]
        + [s.to_dict() for s in result.stages]
        + [{"name": "write", "seconds": round(write_seconds, 3), "counts": {"models": len(paths)}, "resumed": False},
           {"name": "evaluate", "seconds": round(eval_seconds, 3), "counts": {"documents": len(texts)},
            "resumed": False}],
        "models": {
            str(size): {
                "path": os.path.abspath(paths[size]),
                "vocab_size": result.models[size].vocab_size,
                "evaluation": {"sample": sample_kind, **evaluation[size]},
            }
            for size in sorted(paths)
        },
        "outputs": file_checksums([paths[size] for size in sorted(paths)] + [resolved_path]),
        "seconds_total": round(time.perf_counter() - wall, 3),
    }
    write_manifest(manifest_path, manifest)
    manifest["manifest_path"] = manifest_path
    return manifest


def format_summary(manifest: dict[str, Any]) -> str:
    lines = ["", "summary", f"  spark master      {manifest['spark_master']}  (partitions: "
             f"{manifest['partitions'] or 'as read'})"]
    for stage in manifest["stages"]:
        counts = ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in stage["counts"].items()
                           if isinstance(v, int) and (v or k in ("documents", "rows")))
        lines.append(f"  {stage['name']:<17} {stage['seconds']:8.1f} s   {counts}")
    lines.append(f"  total             {manifest['seconds_total']:8.1f} s")
    for size, info in manifest["models"].items():
        evaluation = info["evaluation"]
        bpt = evaluation.get("bytes_per_token")
        lines.append(
            f"  model {size:>7}     vocab size {info['vocab_size']:,}; "
            + (f"{bpt:.3f} bytes/token on {evaluation['documents']:,} {evaluation['sample']} "
               f"(round trip {'ok' if evaluation.get('lossless') else 'FAILED'})" if bpt else "no evaluation text")
            + f"\n                    {info['path']}"
        )
    lines.append(f"  manifest          {manifest['manifest_path']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "train":
        argv = argv[1:]
    algorithm = requested_algorithm(argv)
    if algorithm == "unigram":  # SentencePiece's unigram trainer has its own options (jobs/train_unigram.py)
        from jobs.train_unigram import main as unigram_main

        return unigram_main(argv)
    if algorithm == "bpe":  # BPE has its own options (jobs/train_bpe.py)
        from jobs.train_bpe import main as bpe_main

        return bpe_main(argv)
    args = build_parser().parse_args(argv)
    progress = (lambda message: None) if args.quiet else (lambda message: print(message, flush=True))
    outcome = {}

    def body() -> int:
        options = resolve_options(args)
        train_settings(options)  # fail on bad settings before starting Spark
        outcome["manifest"] = run(options, progress=progress)
        return 0

    code = exit_code_of(body)
    if code:
        return code
    manifest = outcome["manifest"]
    print(format_summary(manifest), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
