"""Pieces every ``shardpiece train`` algorithm shares: output paths, the held-out split, the evaluation sample and
the exit-code convention. The jobs themselves (``jobs/train.py`` for BytePiece, ``jobs/train_unigram.py``,
``jobs/train_bpe.py``) stay thin: options, a session, the pipeline, the manifest.
"""

from __future__ import annotations

import os
import sys
from typing import Callable

from tokenizer.errors import ConfigError, ShardpieceError

EVAL_BYTES = 8 << 20  # text the driver encodes to measure bytes per token (document prefixes beyond it are cut)


def model_paths(output: str, vocab_sizes: list[int], prefix: str = "bytepiece") -> tuple[dict[int, str], str]:
    """``({vocab_size: model path}, manifest path)`` for an ``--output``: the file itself for one size, else
    ``OUTPUT/PREFIX-SIZE.model`` files and ``OUTPUT/manifest.json``.

    >>> model_paths("m.model", [300])
    ({300: 'm.model'}, 'm.model.manifest.json')
    """
    if len(vocab_sizes) == 1:
        return {int(vocab_sizes[0]): output}, output + ".manifest.json"
    if os.path.isfile(output):
        raise ConfigError(f"--output {output} is a file, but several vocab sizes need a directory")
    return ({int(v): os.path.join(output, f"{prefix}-{int(v)}.model") for v in vocab_sizes},
            os.path.join(output, "manifest.json"))


def check_holdout_fraction(fraction: float) -> None:
    if not 0.0 <= fraction <= 0.5:
        raise ConfigError(f"--holdout-fraction {fraction} is outside 0..0.5")


def split_holdout(documents, fraction: float):
    """``(training, held_out or None)``: documents whose content hash falls in ``fraction`` are held out (the same
    documents on every run and for any partitioning)."""
    from pyspark.sql import functions as F

    check_holdout_fraction(fraction)
    if fraction <= 0:
        return documents, None
    from tokenizer.kernels.xxhash import HOLDOUT_BUCKETS, held_out_buckets

    bucket = F.pmod(F.xxhash64("text"), F.lit(HOLDOUT_BUCKETS)) < F.lit(held_out_buckets(fraction))
    return documents.where(~bucket), documents.where(bucket)


def evaluation_sample(training, held_out, limit: int) -> tuple[list[bytes], str]:
    """Up to ``limit`` documents (at most :data:`EVAL_BYTES` of text in all, so one huge line cannot flood the
    driver) to measure bytes per token on: held-out ones, or training ones when nothing is held out."""
    from pyspark.sql import functions as F

    capped = F.expr(f"substring(text, 1, {EVAL_BYTES})").alias("text")
    sample = held_out.select(capped).limit(limit).collect() if held_out is not None else []
    if sample:
        return evaluation_texts([bytes(row["text"]) for row in sample], [], limit)
    return evaluation_texts([], [bytes(row["text"]) for row in training.select(capped).limit(limit).collect()],
                            limit)


def evaluation_texts(held_out: list[bytes], training: list[bytes], limit: int) -> tuple[list[bytes], str]:
    """The evaluation sample from documents already read (in input order): up to ``limit`` held-out ones, or
    training ones when none is held out, cut to :data:`EVAL_BYTES` in all. ``evaluation_texts([b"ab"], [], 5)`` ->
    ``([b"ab"], "held-out documents")``."""
    documents, kind = (held_out, "held-out documents") if held_out else \
        (training, "training documents (nothing held out)")
    texts, budget = [], EVAL_BYTES
    for document in documents[:limit]:
        if budget <= 0:
            break
        texts.append(document[:min(budget, EVAL_BYTES)])
        budget -= len(texts[-1])
    return texts, kind


def exit_code_of(run: Callable[[], int], command: str = "shardpiece train") -> int:
    """Run a job body: 2 for a :class:`ShardpieceError` (bad input or settings), 1 for an error inside a Spark task
    (its useful line printed, not the JVM trace); anything else propagates."""
    try:
        return run()
    except ShardpieceError as exc:
        print(f"{command}: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # an error inside a Spark task arrives wrapped in JVM/Python tracebacks
        from pipelines.session import task_error_message

        message = task_error_message(exc)
        if message is None:
            raise
        print(f"{command}: error in a Spark task: {message}", file=sys.stderr)
        return 1


def requested_algorithm(argv: list[str]) -> str | None:
    """The ``--algorithm`` a ``shardpiece train`` command line asks for, on the line or in its ``--config`` file
    (``None`` when neither says; an unreadable config is left for the job's own loader to report)."""
    import argparse

    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--algorithm")
    pre.add_argument("--config")
    known, _ = pre.parse_known_args(argv)
    if known.algorithm is not None:
        return known.algorithm
    if known.config:
        try:
            import yaml

            with open(known.config, encoding="utf-8") as handle:
                data = yaml.safe_load(handle) or {}
        except (OSError, ValueError):
            return None
        if isinstance(data, dict) and isinstance(data.get("algorithm"), str):
            return data["algorithm"]
    return None


def algorithm_job_main(argv: list[str] | None, build_parser, run) -> int:
    """``main`` of a per-algorithm training job (unigram, BPE): parse, run (exit codes as :func:`exit_code_of`),
    print one line per model and the total."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "train":
        argv = argv[1:]
    args = build_parser().parse_args(argv)
    progress = (lambda message: None) if args.quiet else (lambda message: print(message, flush=True))
    outcome = {}

    def body() -> int:
        outcome["manifest"] = run(args, progress)
        return 0

    code = exit_code_of(body)
    if code:
        return code
    manifest = outcome["manifest"]
    for size, info in manifest["models"].items():
        evaluation = info["evaluation"]
        print(f"model {size}: vocab size {info['vocab_size']:,}, {evaluation.get('bytes_per_token')} bytes/token "
              f"on {evaluation['documents']:,} {evaluation['sample']}; {info['path']}")
    print(f"total {manifest['seconds_total']:.1f} s; manifest {manifest['manifest_path']}", flush=True)
    return 0
