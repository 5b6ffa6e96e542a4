"""Helpers of the one ``shardpiece train`` job (:mod:`jobs.train`): output paths, the held-out split (Spark's and
its twin for documents read in this process), the evaluation sample, and reading local text files without Spark
(``--master none``).
"""

from __future__ import annotations

import os

import numpy as np

from tokenizer.errors import ConfigError, InputError

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


def read_text_lines(inputs: list[str]) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """``(data uint8, offsets int64, files)``: every line of local text files (plain, ``.gz``, ``.zst``; globs and
    directories expanded, sorted), split at ``\\n`` as Spark's text source does, without the newlines."""
    import glob

    from pipelines.read.readers import read_local_text_file

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


def first_documents(data: np.ndarray, offsets: np.ndarray, limit: int) -> list[bytes]:
    """The first ``limit`` non-empty documents of packed ``(data uint8, offsets int64)`` as bytes (the evaluation
    sample of documents read in this process). ``first_documents(b"abc", [0, 2, 2, 3], 5)`` -> ``[b"ab", b"c"]``."""
    packed = np.asarray(data, np.uint8)
    return [packed[offsets[k]:offsets[k + 1]].tobytes() for k in np.flatnonzero(np.diff(offsets))[:limit].tolist()]
