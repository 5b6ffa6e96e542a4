"""The tokenize job's per-task step, shared by both read paths: load the broadcast model once per worker, apply
the bad-row policy to each batch, encode, write the task's shard under the run's temporary directory, optionally
decode it again to verify, and return one row of counts."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipelines.read.table_units import read_planned_units
from pipelines.tokenize.commit import OutputDirectory
from pipelines.tokenize.options import BAD_ROW_KINDS, MALFORMED, RESULT_SCHEMA, TEXT
from pipelines.tokenize.stats import token_buckets
from pipelines.spark.worker_heap import freeze_worker_heap
from pipelines.tokenize.writers import open_shard_writer, read_shard
from tokenizer.added_tokens import with_control_tokens_in_text
from tokenizer.bad_rows import BAD_ROW_CHOICES, INVALID_UTF8, invalid_utf8_mask, keeps_invalid_utf8
from tokenizer.core import Tokenizer
from tokenizer.errors import ConfigError, InputError
from tokenizer.loading import load_model_bytes
from tokenizer.packed import from_arrow

_TOKENIZERS: dict[tuple[str, bool], Any] = {}


def load_tokenizer_bytes(model_bytes: bytes | Any, sha256: str, source: str = "<broadcast model>",
                         control_tokens_in_text: bool = False):
    """The Tokenizer for a model file's bytes (any format ``Tokenizer.load`` reads), built once per Python process
    (a worker, or the driver that checks the model) and cached by checksum, so every batch, task and run that
    process handles reuses the parsed and compiled model. ``model_bytes`` may be a broadcast of the bytes: its
    value is fetched only when the model is not cached yet. ``control_tokens_in_text``: the tokenizer also matches
    control tokens spelled in the text (:func:`tokenizer.added_tokens.with_control_tokens_in_text`)."""
    key = (sha256, control_tokens_in_text)
    tokenizer = _TOKENIZERS.get(key)
    if tokenizer is None:
        data = model_bytes.value if hasattr(model_bytes, "value") else model_bytes
        model = load_model_bytes(data, source)
        tokenizer = Tokenizer(with_control_tokens_in_text(model) if control_tokens_in_text else model)
        _TOKENIZERS[key] = tokenizer
    return tokenizer


@dataclass
class _BatchOutcome:
    keep: np.ndarray            # bool mask of rows written
    texts: pa.Array             # string (or, for a byte-level model, binary) array of the rows written
    bad: dict[str, int]
    kept_bad: int
    altered: int


class BadRowError(InputError):
    """A bad row under ``--on-bad-row error``: one line naming where it is, what is wrong and the fix."""


def partition_rows(partition: int, first_row: int) -> Callable[[int], str]:
    """Names a row of a Spark-read batch by its place in the task's partition (the driver then finds the file
    and line, :mod:`pipelines.tokenize.locate`): ``partition_rows(3, 100)(5)`` -> ``'partition 3, row 105'``."""
    return lambda row: f"partition {partition}, row {first_row + row}"


def bad_row_masks(batch: pa.RecordBatch, max_bytes: int, keeps_invalid_utf8: bool):
    """``(masks, texts, lengths)`` of one batch of ``__text`` and ``__malformed``: ``masks`` maps each bad-row kind
    (:data:`tokenizer.bad_rows.BAD_ROW_KINDS`) to a bool array (a malformed line is not also null), ``texts`` is
    the text column as strings with invalid UTF-8 replaced by U+FFFD, or as binary (as read) when
    ``keeps_invalid_utf8`` (a byte-level model: invalid UTF-8 is no bad row), ``lengths`` the int64 byte lengths.

    Example: texts ``[b"ok", None, b"\\xff"]``, nothing malformed, ``max_bytes`` 10, not keeping invalid UTF-8 ->
    null ``[F, T, F]``, invalid_utf8 ``[F, F, T]``, texts ``["ok", None, "\\ufffd"]``.
    """
    column = batch.column(TEXT)
    large = pa.types.is_large_binary(column.type) or pa.types.is_large_string(column.type)
    column = column.cast(pa.large_binary() if large else pa.binary())
    malformed = np.asarray(batch.column(MALFORMED).fill_null(False), dtype=bool)
    null = np.asarray(column.is_null(), dtype=bool) & ~malformed
    lengths = np.asarray(pc.binary_length(column).fill_null(0), dtype=np.int64)
    invalid = np.zeros(len(column), dtype=bool)
    if keeps_invalid_utf8:
        texts = column
    else:
        string_type = pa.large_string() if large else pa.string()
        try:
            texts = column.cast(string_type)  # validates: the common case costs one pass over the bytes
        except pa.ArrowInvalid:
            invalid = invalid_utf8_mask(*from_arrow(column)) & ~np.asarray(column.is_null(), dtype=bool)
            values = column.to_pylist()
            texts = pa.array([None if value is None else value.decode("utf-8", errors="replace")
                              for value in values], string_type)
    masks = {"null": null, "malformed": malformed, "invalid_utf8": invalid, "too_large": lengths > max_bytes}
    return masks, texts, lengths


def bad_row_detail(kind: str, length: int, max_bytes: int) -> str:
    """What is wrong with a bad row of ``kind``, for the error line: ``bad_row_detail("malformed", 0, 9)`` ->
    ``'not a JSON object'``."""
    return {
        "null": "no text (null, or no field/column named as --text-column)",
        "malformed": "not a JSON object",
        "invalid_utf8": INVALID_UTF8,
        "too_large": f"{length:,} bytes, over max_document_bytes={max_bytes:,}",
    }[kind]


def classify_rows(batch: pa.RecordBatch, policy: str, max_bytes: int, where: Callable[[int], str],
                  keeps_invalid_utf8: bool = False) -> _BatchOutcome:
    """Apply the bad-row policy to one batch: which rows to write, as what text, and the counts by kind.

    ``where(row)`` names the batch's row ``row`` for the ``error`` policy's one line, e.g. ``in.jsonl, line 3:
    not a JSON object; pass --on-bad-row skip ...`` (:class:`BadRowError`). ``keeps_invalid_utf8``: the model is
    byte-level (:func:`tokenizer.bad_rows.keeps_invalid_utf8`), so the texts stay binary, byte for byte."""
    masks, texts, lengths = bad_row_masks(batch, max_bytes, keeps_invalid_utf8)
    bad = {kind: int(mask.sum()) for kind, mask in masks.items()}
    null, malformed = masks["null"], masks["malformed"]
    any_bad = null | malformed | masks["invalid_utf8"] | masks["too_large"]
    if policy == "error" and any_bad.any():
        row = int(np.argmax(any_bad))
        kind = next(k for k, mask in masks.items() if mask[row])
        raise BadRowError(f"{where(row)}: {bad_row_detail(kind, int(lengths[row]), max_bytes)}; {BAD_ROW_CHOICES}")
    if policy == "skip":
        keep = ~any_bad
        return _BatchOutcome(keep, texts.filter(pa.array(keep)), bad, 0, 0)
    keep = np.ones(len(texts), dtype=bool)
    if (null | malformed).any():
        texts = pc.if_else(pa.array(null | malformed), pa.scalar(b"" if keeps_invalid_utf8 else "", texts.type),
                           texts)
    return _BatchOutcome(keep, texts, bad, int(any_bad.sum()), bad["invalid_utf8"])


def encode_partition(
    batches: Iterator[pa.RecordBatch], *, model: Any, model_sha256: str, output: str,
    run_id: str, config: dict[str, Any], empty_schema: pa.Schema | None,
) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` step: encode and write one partition's shard; yields one row of counts (``RESULT_SCHEMA``)."""
    partition, attempt = _task_identity()
    result = encode_task(batches, partition=partition, attempt=attempt, model=model, model_sha256=model_sha256,
                         output=output, run_id=run_id, config=config, empty_schema=empty_schema)
    yield pa.RecordBatch.from_pylist([result], schema=RESULT_SCHEMA)


def encode_units(
    groups: Iterator[list], *, text_column: str, keep_schema: pa.Schema, model: Any, model_sha256: str,
    output: str, run_id: str, config: dict[str, Any], identity: tuple[int, int] | None = None,
) -> Iterator[dict]:
    """RDD step of the direct read path: this partition's work units (one list per partition, see
    :mod:`pipelines.read.arrow_read` and :mod:`pipelines.read.table_units`) are read with pyarrow in this Python
    task, encoded and written as its shard; yields one dict of counts (the ``RESULT_SCHEMA`` fields).
    ``identity``: ``(partition, attempt)`` where the task is not a Spark task (a Beam task gives its own)."""
    partition, attempt = identity if identity is not None else _task_identity()
    for units in groups:
        batches = read_planned_units(units, text_column, keep_schema, TEXT, MALFORMED, located=True)
        yield encode_task(batches, partition=partition, attempt=attempt, model=model, model_sha256=model_sha256,
                          output=output, run_id=run_id, config=config,
                          empty_schema=keep_schema if len(keep_schema) else None)


def _task_identity() -> tuple[int, int]:
    """(partition, attempt id) of the running Spark task; (0, 0) outside Spark."""
    from pyspark import TaskContext

    context = TaskContext.get()
    return (context.partitionId(), context.taskAttemptId()) if context else (0, 0)


def encode_task(
    batches: Iterator[pa.RecordBatch], *, partition: int, attempt: int, model: Any, model_sha256: str, output: str,
    run_id: str, config: dict[str, Any], empty_schema: pa.Schema | None,
) -> dict[str, Any]:
    """Encode and write one task's shard from batches of ``__text``, ``__malformed`` and the kept columns; returns
    the task's counts (``RESULT_SCHEMA``'s fields). Shared by the Spark-read and the direct-read paths.

    ``batches`` holds record batches, or ``(batch, place)`` pairs from a direct read (``place.describe(row)``
    names a row by file and line or row group, :class:`pipelines.read.arrow_read.BatchPlace`); a plain batch's
    rows are named by partition and row (:func:`partition_rows`). For a byte-level model the texts are encoded as
    the bytes they are (invalid UTF-8 included); for a SentencePiece-style one invalid UTF-8 is a bad row."""
    started = time.perf_counter()
    tokenizer = load_tokenizer_bytes(model, model_sha256, control_tokens_in_text=config["control_tokens_in_text"])
    byte_level = keeps_invalid_utf8(tokenizer.model.pretokenizer)
    vocab_size = int(tokenizer.vocab_size)
    bos = _special_id(tokenizer, "bos") if config["add_bos"] else None
    eos = _special_id(tokenizer, "eos") if config["add_eos"] else None
    out = OutputDirectory(output)
    stem = out.task_stem(run_id, partition, attempt)
    writer = open_shard_writer(config["output_format"], stem, vocab_size=vocab_size,
                               ids_dtype=config["parquet_ids_dtype"],
                               compression=config["parquet_compression"])
    if empty_schema is not None and hasattr(writer, "set_empty_schema"):
        writer.set_empty_schema(empty_schema)
    keep_columns = list(config["keep_columns"])
    rng = np.random.default_rng([partition, 20240229])
    samples: dict[int, bytes] = {}
    counts = {"rows": 0, "bytes": 0, "kept_bad_rows": 0, "altered_rows": 0, "min_tokens": 2**62, "max_tokens": 0,
              **{k: 0 for k in BAD_ROW_KINDS}}
    histogram: dict[int, int] = {}
    encode_seconds = 0.0
    fault = config.get("fault_injection") or None
    try:
        for item in batches:
            batch, place = item if isinstance(item, tuple) else (item, None)
            where = place.describe if place is not None else partition_rows(partition, counts["rows"])
            counts["rows"] += batch.num_rows
            outcome = classify_rows(batch, config["on_bad_row"], config["max_document_bytes"], where, byte_level)
            for kind, number in outcome.bad.items():
                counts[kind] += number
            counts["kept_bad_rows"] += outcome.kept_bad
            counts["altered_rows"] += outcome.altered
            tick = time.perf_counter()
            ids = tokenizer.encode_batch(outcome.texts, num_threads=1, add_bos=bos is not None,
                                         add_eos=eos is not None)
            encode_seconds += time.perf_counter() - tick
            freeze_worker_heap()  # set-up done: PySpark's collection after each task then skips its objects
            table = pa.Table.from_batches([batch.select(keep_columns)]) if keep_columns else \
                pa.table({"_": pa.nulls(batch.num_rows)}).select([])
            if not outcome.keep.all():
                table = table.filter(pa.array(outcome.keep))
            first_index = writer.documents
            writer.write(table, ids)
            text_bytes = np.asarray(pc.binary_length(outcome.texts).fill_null(0))
            counts["bytes"] += int(text_bytes.sum())
            lengths = np.diff(np.asarray(ids.offsets, dtype=np.int64))
            if len(lengths):
                counts["min_tokens"] = min(counts["min_tokens"], int(lengths.min()))
                counts["max_tokens"] = max(counts["max_tokens"], int(lengths.max()))
            buckets, numbers = np.unique(token_buckets(lengths), return_counts=True)
            for bucket, number in zip(buckets.tolist(), numbers.tolist()):
                histogram[bucket] = histogram.get(bucket, 0) + number
            if config["verify"]:
                chosen = np.flatnonzero(rng.random(len(ids)) < config["verify_rate"])
                if len(chosen):
                    chosen_texts = outcome.texts.take(pa.array(chosen)).cast(pa.large_binary()).to_pylist()
                    for index, text in zip(chosen.tolist(), chosen_texts):
                        samples[first_index + index] = text
            if fault and fault.get("partition") == partition and not os.path.exists(fault["marker"]):
                with open(fault["marker"], "w") as handle:
                    handle.write(f"attempt {attempt}\n")
                if fault.get("action") == "hang":
                    time.sleep(3600)
                raise RuntimeError(f"injected failure in partition {partition}, attempt {attempt}")
        names = writer.close()
    except BaseException:
        writer.abort()
        raise
    verified, mismatches = 0, []
    if config["verify"] and samples:
        for index, ids in enumerate(read_shard(config["output_format"], stem)):
            expected = samples.get(index)
            if expected is None:
                continue
            verified += 1
            ids = np.asarray(ids, dtype=np.int64)
            body = ids[1 if bos is not None else 0: len(ids) - (1 if eos is not None else 0)]
            ends_ok = (bos is None or (len(ids) and ids[0] == bos)) and (eos is None or (len(ids) and ids[-1] == eos))
            decoded = tokenizer.decode_bytes(body.tolist())
            if decoded != expected or not ends_ok:
                mismatches.append({"index": index, "expected": expected[:80].decode("utf-8", "replace"),
                                   "decoded": decoded[:80].decode("utf-8", "replace")})
    directory = os.path.dirname(stem)
    file_sizes = {name: os.path.getsize(os.path.join(directory, name)) for name in names}
    stats = {**counts, "histogram": {str(k): v for k, v in histogram.items()}, "verified": verified,
             "verify_mismatches": len(mismatches), "mismatch_examples": mismatches[:3],
             "seconds": time.perf_counter() - started, "encode_seconds": encode_seconds}
    return {"partition": partition, "attempt": attempt, "stem": stem, "documents": writer.documents,
            "tokens": writer.tokens, "bytes": counts["bytes"], "file_sizes": json.dumps(file_sizes),
            "stats": json.dumps(stats)}


def _special_id(tokenizer, name: str) -> int:
    value = getattr(tokenizer, f"{name}_id", -1)
    if value is None or value < 0:
        flag = "--add-bos" if name == "bos" else "--add-eos"
        raise ConfigError(f"{flag}: the model has no {'<s>' if name == 'bos' else '</s>'} piece; train it with "
                          "that special token or drop the flag")
    return int(value)
