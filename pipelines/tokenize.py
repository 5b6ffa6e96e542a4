"""The tokenize job: a dataset (text, JSONL or Parquet files) -> token ids in Parquet, Megatron or npy shards.

Steps (:func:`run_tokenize`):

1. Prepare the output directory for the run mode (:mod:`pipelines.commit`): ``error`` refuses a non-empty one,
   ``skip`` returns at once when it is complete, ``incremental`` keeps the committed runs, ``overwrite`` clears it.
2. List the input files (Hadoop filesystems, via :func:`pipelines.readers.list_input_files`) with their size and
   modification time; in incremental mode keep only files the manifest does not list (a listed file whose size or
   time changed is an error: its old tokens are in the output).
3. Read only those files, as batches of one text column, a malformed-row flag and the kept columns; nulls and empty
   documents are kept (they are documents too, or bad rows to account for). Two readers give the same batches:

   * Parquet (``reader: auto``, the default): the driver reads the footers and plans row-group work units
     (:mod:`pipelines.arrow_read`); Spark distributes only the unit lists (``parallelize`` + ``mapPartitions``,
     :func:`encode_units`) and each Python task reads its row groups with pyarrow. The JVM never touches the data.
     Units are cut in input order (sorted files, row groups, rows), so the shards in manifest order hold the
     documents in input order. ``--partitions N`` gives N tasks (row groups are split by rows when there are fewer);
     by default two tasks per task slot.
   * Text files (``reader: auto``): the same way, with byte-range units (a plain file over 32 MB is read by
     several tasks, each taking the lines that start in its range; a ``.gz`` or ``.zst`` file is one unit,
     decompressed as a stream). Lines end at ``\n``, as Spark's text source reads them with ``lineSep='\n'``.
   * Spark's reader (:func:`read_documents`, then ``mapInArrow``, :func:`encode_partition`): JSONL input,
     ``reader: spark``, text with ``--verify`` (Spark counts the input lines) or in a codec other than gzip and
     zstd, and Parquet or text that pyarrow cannot take (a filesystem it cannot open, such as ``s3a://``, an
     unreadable footer, kept columns of types Spark converts, such as unsigned integers or timestamps).
4. Per task (:func:`encode_task`): classify bad rows, encode with the Numba batch encoder (the model file is
   broadcast once as bytes and loaded once per Python worker), add BOS/EOS, stream the shard to
   ``_temporary/RUN/part-P-attempt-A``, optionally decode the written shard and compare it with the input, and
   return one row of counts.
5. The driver checks the results (one per partition, verify mismatches, document counts from the shards' metadata
   and, with ``verify``, an independent count of the input rows: Spark's ``count()``, or the Parquet footers' row
   counts on the direct path), then commits: rename the winners, then the manifest with the summary (pipelines.commit).

Every input row is accounted for: ``rows_read == documents + skipped_bad_rows`` for each run (checked before the
commit); bad rows (null text, malformed JSON lines, invalid UTF-8, documents over ``max_document_bytes``) follow
``on_bad_row`` (``error`` | ``skip`` | ``keep``) and are counted by kind in the summary.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipelines.commit import InputFile, OutputDirectory, TaskResult
from pipelines.worker_heap import freeze_worker_heap
from pipelines.writers import OUTPUT_FORMATS, check_format, check_parquet_codec, open_shard_writer, read_shard, \
    shard_document_count, shard_files
from tokenizer.errors import ConfigError, InputError

TEXT = "__text"
MALFORMED = "__malformed"
BAD_ROW_POLICIES = ("error", "skip", "keep")
BAD_ROW_KINDS = ("null", "malformed", "invalid_utf8", "too_large")
READERS = ("auto", "arrow", "spark")
#: One row of counts per task (both read paths); the Spark path's ``mapInArrow`` gets it as a Spark schema.
RESULT_SCHEMA = pa.schema([("partition", pa.int32()), ("attempt", pa.int64()), ("stem", pa.string()),
                           ("documents", pa.int64()), ("tokens", pa.int64()), ("bytes", pa.int64()),
                           ("file_sizes", pa.string()), ("stats", pa.string())])


@dataclass
class TokenizeConfig:
    """Everything a tokenize run needs; the CLI flags and the YAML keys have these names (``-`` for ``_``)."""

    model: str
    inputs: list[str]
    output: str
    input_format: str | None = None          # text | jsonl | parquet; guessed from file names when None
    text_column: str = "text"
    keep_columns: list[str] = field(default_factory=list)
    output_format: str = "parquet"            # parquet | megatron | npy
    parquet_ids_dtype: str = "int32"          # int32 | uint16 (Parquet's input_ids element type)
    parquet_compression: str = "zstd"         # one of pipelines.writers.PARQUET_CODECS
    add_bos: bool = False
    add_eos: bool = False
    #: Match control tokens spelled in the text (``<s>``) as their ids; default: such text is ordinary text.
    control_tokens_in_text: bool = False
    partitions: int | None = None             # repartition the documents (default: as read)
    mode: str = "error"                       # error | overwrite | skip | incremental
    verify: bool = False
    verify_rate: float = 1.0                  # share of documents decoded and compared when verify is on
    on_bad_row: str = "error"                 # error | skip | keep
    max_document_bytes: int = 64 << 20
    progress_seconds: float = 10.0
    #: How Parquet and text inputs are read: ``auto`` (pyarrow in the Python tasks where it can open the files, else
    #: Spark's reader), ``arrow`` (pyarrow or an error saying why not), ``spark`` (Spark's reader). JSONL inputs
    #: always go through Spark's reader.
    reader: str = "auto"
    #: Testing aid for the commit protocol: {"partition": P, "marker": PATH, "action": "fail" | "hang"}. The first
    #: attempt of partition P that finds no file at PATH creates it after writing one batch, then dies or hangs.
    fault_injection: dict | None = None

    def validate(self) -> None:
        check_format(self.output_format)
        check_parquet_codec(self.parquet_compression)
        if self.on_bad_row not in BAD_ROW_POLICIES:
            raise ConfigError(f"--on-bad-row {self.on_bad_row!r}: use one of {', '.join(BAD_ROW_POLICIES)}")
        if not 0 < self.verify_rate <= 1:
            raise ConfigError(f"verify_rate {self.verify_rate} must be in (0, 1]")
        if self.partitions is not None and self.partitions < 1:
            raise ConfigError(f"--partitions must be at least 1, got {self.partitions}")
        if self.reader not in READERS:
            raise ConfigError(f"reader {self.reader!r}: use one of {', '.join(READERS)}")
        if self.max_document_bytes < 1:
            raise ConfigError("max_document_bytes must be positive")
        if not self.inputs:
            raise ConfigError("no input given: pass --input PATH [PATH ...]")
        if self.text_column in self.keep_columns:
            raise ConfigError(f"--keep-columns names the text column {self.text_column!r}; its tokens are "
                              "input_ids already (keep a copy under another name in the input if you need it)")
        if self.keep_columns and self.output_format != "parquet":
            raise ConfigError("--keep-columns needs --output-format parquet (Megatron and npy shards hold ids only)")

    def settings(self, model_sha256: str) -> dict[str, Any]:
        """What must not change between runs appending to one output (checked in incremental and skip modes).

        The bad-row policy may change from run to run (each run's summary records it)."""
        return {
            "model_sha256": model_sha256, "output_format": self.output_format, "text_column": self.text_column,
            "keep_columns": list(self.keep_columns), "parquet_ids_dtype": self.parquet_ids_dtype,
            "add_bos": self.add_bos, "add_eos": self.add_eos,
            # only when on, so that outputs written before the option existed keep their settings
            **({"control_tokens_in_text": True} if self.control_tokens_in_text else {}),
        }


# ---------------------------------------------------------------------------------------------- statistics
_EXACT_BUCKETS = 1024
_GROWTH = math.log(1.01)


def token_buckets(counts: np.ndarray) -> np.ndarray:
    """Histogram bucket of each token count: exact below 1024, then 1%-wide geometric buckets.

    >>> token_buckets(np.array([0, 5, 1023, 1024, 2048])).tolist()
    [0, 5, 1023, 1024, 1093]
    """
    counts = np.asarray(counts, dtype=np.int64)
    large = np.maximum(counts, _EXACT_BUCKETS).astype(np.float64)
    geometric = _EXACT_BUCKETS + np.floor(np.log(large / _EXACT_BUCKETS) / _GROWTH + 1e-9).astype(np.int64)
    return np.where(counts < _EXACT_BUCKETS, counts, geometric)


def bucket_floor(bucket: int) -> int:
    """Smallest token count in ``bucket`` (inverse of :func:`token_buckets`)."""
    if bucket < _EXACT_BUCKETS:
        return int(bucket)
    return int(math.ceil(_EXACT_BUCKETS * math.exp((bucket - _EXACT_BUCKETS) * _GROWTH) - 1e-6))


def histogram_quantiles(histogram: dict[int, int], quantiles: Sequence[float]) -> dict[str, int]:
    """Quantiles of tokens per document from a bucket histogram (exact below 1024 tokens, within 1% above).

    >>> histogram_quantiles({1: 2, 3: 1, 10: 1}, [0.5, 0.9])
    {'p50': 1, 'p90': 10}
    """
    total = sum(histogram.values())
    result = {}
    if not total:
        return {f"p{round(q * 100)}": 0 for q in quantiles}
    ordered = sorted(histogram.items())
    cumulative = np.cumsum([count for _, count in ordered])
    for q in quantiles:
        rank = max(1, math.ceil(q * total))
        index = int(np.searchsorted(cumulative, rank))
        result[f"p{round(q * 100)}"] = bucket_floor(ordered[index][0])
    return result


# ---------------------------------------------------------------------------------------------- executors
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
        from tokenizer.added_tokens import with_control_tokens_in_text
        from tokenizer.core import Tokenizer
        from tokenizer.loading import load_model_bytes

        data = model_bytes.value if hasattr(model_bytes, "value") else model_bytes
        model = load_model_bytes(data, source)
        tokenizer = Tokenizer(with_control_tokens_in_text(model) if control_tokens_in_text else model)
        _TOKENIZERS[key] = tokenizer
    return tokenizer


@dataclass
class _BatchOutcome:
    keep: np.ndarray            # bool mask of rows written
    texts: pa.Array             # string array of the rows written
    bad: dict[str, int]
    kept_bad: int
    altered: int


def classify_rows(batch: pa.RecordBatch, policy: str, max_bytes: int, where: str) -> _BatchOutcome:
    """Apply the bad-row policy to one batch: which rows to write, as what text, and the counts by kind."""
    column = batch.column(TEXT)
    if pa.types.is_large_binary(column.type) or pa.types.is_large_string(column.type):
        column = column.cast(pa.large_binary())
    else:
        column = column.cast(pa.binary())
    malformed = np.asarray(batch.column(MALFORMED).fill_null(False), dtype=bool)
    null = np.asarray(column.is_null(), dtype=bool) & ~malformed
    lengths = np.asarray(pc.binary_length(column).fill_null(0), dtype=np.int64)
    too_large = lengths > max_bytes
    string_type = pa.large_string() if pa.types.is_large_binary(column.type) else pa.string()
    invalid = np.zeros(len(column), dtype=bool)
    try:
        texts = column.cast(string_type)
    except pa.ArrowInvalid:
        values = column.to_pylist()
        decoded = []
        for i, value in enumerate(values):
            if value is None:
                decoded.append(None)
                continue
            try:
                decoded.append(value.decode("utf-8"))
            except UnicodeDecodeError:
                invalid[i] = True
                decoded.append(value.decode("utf-8", errors="replace"))
        texts = pa.array(decoded, string_type)
    bad_masks = {"null": null, "malformed": malformed, "invalid_utf8": invalid, "too_large": too_large}
    bad = {kind: int(mask.sum()) for kind, mask in bad_masks.items()}
    any_bad = null | malformed | invalid | too_large
    if any_bad.any() and policy == "error":
        row = int(np.argmax(any_bad))
        kind = next(k for k, mask in bad_masks.items() if mask[row])
        detail = {
            "null": "has no text (null, or no field/column named as --text-column)",
            "malformed": "is not a JSON object",
            "invalid_utf8": "is not valid UTF-8",
            "too_large": f"is {lengths[row]:,} bytes, over max_document_bytes={max_bytes:,}",
        }[kind]
        raise InputError(
            f"{where}: a row {detail}. Pass --on-bad-row skip to drop such rows or --on-bad-row keep to keep them "
            "(null -> empty document, invalid UTF-8 -> U+FFFD replacements, huge -> encoded whole); "
            "either way they are counted in the summary"
        )
    if policy == "skip":
        keep = ~any_bad
        texts = texts.filter(pa.array(keep))
        return _BatchOutcome(keep, texts, bad, 0, 0)
    keep = np.ones(len(column), dtype=bool)
    if (null | malformed).any():
        texts = pc.if_else(pa.array(null | malformed), pa.scalar("", string_type), texts)
    return _BatchOutcome(keep, texts, bad, int(any_bad.sum()), int(invalid.sum()))


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
    output: str, run_id: str, config: dict[str, Any],
) -> Iterator[dict]:
    """RDD step of the direct read path: this partition's Parquet work units (one list per partition, see
    :mod:`pipelines.arrow_read`) are read with pyarrow in this Python task, encoded and written as its shard;
    yields one dict of counts (the ``RESULT_SCHEMA`` fields)."""
    from pipelines.arrow_read import read_work_units

    partition, attempt = _task_identity()
    for units in groups:
        batches = read_work_units(units, text_column, keep_schema, TEXT, MALFORMED)
        yield encode_task(batches, partition=partition, attempt=attempt, model=model, model_sha256=model_sha256,
                          output=output, run_id=run_id, config=config,
                          empty_schema=keep_schema if len(keep_schema) else None)


#: The :class:`TokenizeConfig` fields a task reads (:func:`encode_task`'s ``config``).
TASK_OPTIONS = ("add_bos", "add_eos", "control_tokens_in_text", "output_format", "parquet_ids_dtype",
                "parquet_compression", "keep_columns",
                "verify", "verify_rate", "on_bad_row", "max_document_bytes", "fault_injection")


def task_options(config: TokenizeConfig) -> dict[str, Any]:
    """The settings :func:`encode_task` takes as ``config``: the fields of ``TASK_OPTIONS``, as a plain dict (it is
    pickled into every task)."""
    return {name: value for name, value in asdict(config).items() if name in TASK_OPTIONS}


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
    the task's counts (``RESULT_SCHEMA``'s fields). Shared by the Spark-read and the direct-read paths."""
    started = time.perf_counter()
    tokenizer = load_tokenizer_bytes(model, model_sha256, control_tokens_in_text=config["control_tokens_in_text"])
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
        for batch in batches:
            counts["rows"] += batch.num_rows
            outcome = classify_rows(batch, config["on_bad_row"], config["max_document_bytes"],
                                    f"partition {partition}")
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


# ---------------------------------------------------------------------------------------------- driver
def list_inputs(spark, inputs: Sequence[str]) -> tuple[list[InputFile], list[InputFile], str | None]:
    """(non-empty files, empty files, guessed format) with sizes and modification times (ms, as ns)."""
    from pipelines.readers import detect_format, list_input_files

    listed = list_input_files(spark, list(inputs))

    def status(path: str) -> InputFile:
        return InputFile(path, listed.sizes[path], listed.modified_ms[path] * 1_000_000)

    guessed = detect_format(listed.files + listed.empty_files)
    return [status(p) for p in listed.files], [status(p) for p in listed.empty_files], guessed


def read_documents(spark, files: Sequence[str], input_format: str, text_column: str, keep_columns: Sequence[str]):
    """DataFrame of ``__text`` (binary, nulls kept), ``__malformed`` (bool) and the kept columns of ``files``.

    Unlike :func:`pipelines.readers.read_corpus`, rows with null or empty text stay (they are documents or bad rows
    to account for) and extra columns come along. JSONL fields are kept as strings (JSON text for non-strings).
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType, StringType

    from pipelines.readers import InputFiles, _read_lines, missing_column_error

    files = list(files)
    if input_format == "parquet":
        frame = spark.read.parquet(*files)
        fields = {f.name: f for f in frame.schema.fields}
        for name in [text_column, *keep_columns]:
            if name not in fields:
                error = missing_column_error(name, list(fields), "column", files[:3])
                if name != text_column:
                    error = InputError(str(error).replace("--text-column NAME (text_column: in a config file)",
                                                          "--keep-columns a,b"))
                raise error
        if not isinstance(fields[text_column].dataType, (StringType, BinaryType)):
            raise InputError(f"column {text_column!r} has type {fields[text_column].dataType.simpleString()}, not "
                             "string or binary: pass the column that holds the text with --text-column NAME")
        return frame.select(F.col(text_column).cast("binary").alias(TEXT), F.lit(False).alias(MALFORMED),
                            *[F.col(c) for c in keep_columns])
    lines = _read_lines(spark, InputFiles(files=files, empty_files=[], total_bytes=0))
    if input_format == "text":  # (--keep-columns with text input was refused by _direct_plan)
        return lines.select(F.col("line").alias(TEXT), F.lit(False).alias(MALFORMED))
    if input_format != "jsonl":
        raise ConfigError(f"unknown input format {input_format!r}: use text, jsonl or parquet")
    for name in [text_column, *keep_columns]:
        if "'" in name or "\\" in name:
            raise ConfigError(f"field name {name!r}: names with quotes or backslashes are not supported")
    line = F.col("line").cast("string")
    frame = lines.select(line.alias("line")).where(F.length(F.trim(F.col("line"))) > 0)
    return frame.select(
        F.expr(f"get_json_object(line, '$[\\'{text_column}\\']')").cast("binary").alias(TEXT),
        F.expr("json_object_keys(line)").isNull().alias(MALFORMED),
        *[F.expr(f"get_json_object(line, '$[\\'{c}\\']')").alias(c) for c in keep_columns],
    )


class _Progress(threading.Thread):
    """Prints ``tokenize: N/M tasks done`` to stderr every ``seconds`` while the job runs."""

    def __init__(self, spark, seconds: float, started: float):
        super().__init__(daemon=True)
        self.tracker = spark.sparkContext.statusTracker()
        self.seconds, self.started = seconds, started
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(self.seconds):
            done = total = 0
            for stage_id in self.tracker.getActiveStageIds():
                info = self.tracker.getStageInfo(stage_id)
                if info is not None:
                    done += info.numCompletedTasks
                    total += info.numTasks
            if total:
                print(f"tokenize: {done}/{total} tasks done, {time.perf_counter() - self.started:.0f} s",
                      file=sys.stderr, flush=True)


def run_tokenize(spark, config: TokenizeConfig, versions: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run the tokenize job; returns the summary (also kept in ``OUTPUT/_manifest.parquet``: pipelines.commit.read_summary).

    The summary records the resolved options (``config``: every field of ``config`` after the config file and the
    command line were merged, defaults included, and the session's Spark master) and ``versions`` as given (the
    ``shardpiece tokenize`` job passes :func:`jobs.manifest.versions`; ``None`` records none)."""
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

    config.validate()
    started = time.perf_counter()
    try:
        with open(config.model, "rb") as handle:
            model_bytes = handle.read()
    except OSError as exc:
        raise ConfigError(f"--model {config.model}: cannot read it ({exc.strerror})") from None
    sha256 = hashlib.sha256(model_bytes).hexdigest()
    tokenizer = load_tokenizer_bytes(model_bytes, sha256, config.model,  # refuses a corrupt model up front
                                     control_tokens_in_text=config.control_tokens_in_text)
    if config.add_bos:
        _special_id(tokenizer, "bos")
    if config.add_eos:
        _special_id(tokenizer, "eos")
    out = OutputDirectory(config.output)
    settings = config.settings(sha256)
    state = out.prepare(config.mode, settings)
    if state == "complete":
        print(f"tokenize: {out.path} is complete; --mode skip: nothing to do", file=sys.stderr)
        return {"status": "skipped", "output": out.path}
    files, empty_files, guessed = list_inputs(spark, config.inputs)
    input_format = config.input_format or guessed
    recorded = out.recorded_inputs()
    for item in files + empty_files:
        old = recorded.get(item.path)
        if old is not None and (old.size, old.mtime_ns) != (item.size, item.mtime_ns):
            raise InputError(
                f"input {item.path} changed since it was tokenized into {out.path} (size {old.size} -> {item.size}): "
                "its old tokens are in the output; rerun with --mode overwrite to rebuild, or write new data to new "
                "files"
            )
    new_files = [f for f in files if f.path not in recorded]
    new_empty = [f for f in empty_files if f.path not in recorded]
    run_id = out.next_run_id()
    results: list[TaskResult] = []
    reader = None
    if new_files:
        plan, keep_schema = _direct_plan(config, input_format, new_files)
        if plan is None:
            frame = read_documents(spark, [f.path for f in new_files], input_format, config.text_column,
                                   config.keep_columns)
            if config.partitions is not None:
                frame = frame.repartition(int(config.partitions))
            keep_schema = to_arrow_schema(frame.select(*config.keep_columns).schema)
        empty_schema = keep_schema if config.keep_columns else None
        reader = "spark" if plan is None else "arrow"
        model_broadcast = spark.sparkContext.broadcast(model_bytes)
        options = task_options(config)

        def step(batches):
            return encode_partition(batches, model=model_broadcast, model_sha256=sha256,
                                    output=out.path, run_id=run_id, config=options, empty_schema=empty_schema)

        def direct_step(groups):
            return encode_units(groups, text_column=config.text_column, keep_schema=keep_schema,
                                model=model_broadcast, model_sha256=sha256, output=out.path, run_id=run_id,
                                config=options)

        progress = _Progress(spark, config.progress_seconds, started)
        progress.start()
        try:
            if plan is None:
                rows = frame.mapInArrow(step, from_arrow_schema(RESULT_SCHEMA)).collect()
            else:
                from pipelines.arrow_read import assign_units, default_tasks
                from pipelines.session import default_parallelism

                tasks = config.partitions or default_tasks(plan.units, default_parallelism(spark))
                groups = assign_units(plan.units, tasks) if plan.units or config.partitions else []
                rows = spark.sparkContext.parallelize(groups, len(groups)).mapPartitions(direct_step).collect() \
                    if groups else []
        except Exception as exc:  # noqa: BLE001 - re-raised; a task's own error becomes a plain shardpiece error
            out.discard_run(run_id)
            raise _task_error(exc) from None
        finally:
            progress.stop.set()
            model_broadcast.destroy()
        try:
            results = [TaskResult(r["partition"], r["attempt"], r["stem"], r["documents"], r["tokens"], r["bytes"],
                                  json.loads(r["file_sizes"]), json.loads(r["stats"])) for r in rows]
            expected_rows = None
            if config.verify:  # an independent count of the input rows: Spark's, or the Parquet footers'
                expected_rows = frame.count() if plan is None else plan.rows
            _check_results(results, config, expected_rows)
        except BaseException:
            out.discard_run(run_id)
            raise
    summary = _summary(config, out, run_id, results, new_files, new_empty, input_format, sha256,
                       time.perf_counter() - started)
    summary["config"] = resolved_options(config, spark.sparkContext.master)
    summary["versions"] = dict(versions) if versions is not None else None
    summary["reader"] = reader
    if not new_files and not new_empty and state == "continue":
        summary["status"] = "up to date: no new input files"
        out.mark_complete_without_run(summary)
    else:
        out.commit(run_id, config.output_format, settings, new_files + new_empty, results, summary)
    print(f"tokenize: {summary['documents']:,} documents, {summary['tokens']:,} tokens, "
          f"{summary['bytes_per_token']:.2f} bytes/token, {summary['seconds']:.1f} s -> {out.path}", file=sys.stderr)
    return summary


_TASK_ERROR = re.compile(r"(?:tokenizer\.errors\.)?(InputError|ConfigError|ModelError|ModelFileError): (.+)")


def _task_error(exc: BaseException) -> BaseException:
    """The shardpiece error a task raised (its message, without the Java and Python stack traces), or ``exc``."""
    match = _TASK_ERROR.search(str(exc))
    if match is None:
        return exc
    kind = ConfigError if match.group(1) == "ConfigError" else InputError
    return kind(match.group(2).strip() + " (nothing was committed; the output directory keeps its previous state)")


def _direct_plan(config: TokenizeConfig, input_format: str, files: Sequence[InputFile]):
    """``(work units, kept columns' Arrow schema)`` for reading Parquet in the Python tasks
    (:mod:`pipelines.arrow_read`), or ``(None, None)`` for Spark's reader (text/JSONL input, ``reader: spark``, or
    files pyarrow cannot take, said on stderr). A missing column raises the Spark path's error."""
    from pipelines.arrow_read import TextPlan, plan_parquet, plan_text

    if input_format == "text" and config.keep_columns:  # for either reader
        raise ConfigError("--keep-columns: text input has no columns; use JSONL or Parquet input")
    if config.reader == "spark":
        return None, None
    if input_format == "text":
        units, reason = plan_text([(f.path, f.size) for f in files], config.partitions)
        if units is not None and config.verify:
            units, reason = None, "--verify counts the input rows with Spark's reader"
        if units is None:
            return _spark_reader_instead(config, reason)
        return TextPlan(units), pa.schema([])
    if input_format != "parquet":
        if config.reader == "arrow":
            raise ConfigError(f"reader: arrow reads Parquet and text input, not {input_format}; use reader: auto")
        return None, None
    plan, keep_schema, reason = plan_parquet([(f.path, f.size) for f in files], config.text_column,
                                             config.keep_columns, config.partitions)
    if plan is None:
        return _spark_reader_instead(config, reason)
    return plan, keep_schema


def _spark_reader_instead(config: TokenizeConfig, reason: str):
    """``(None, None)``: Spark's reader takes the input the direct path cannot (said on stderr); with
    ``reader: arrow`` an error instead."""
    if config.reader == "arrow":
        raise InputError(f"reader: arrow cannot read the input: {reason}; use reader: auto or spark")
    print(f"tokenize: reading the input with Spark ({reason})", file=sys.stderr)
    return None, None


def _check_results(results: list[TaskResult], config: TokenizeConfig, expected_rows: int | None) -> None:
    """Refuse to commit when a partition reported twice, a shard's metadata disagrees with its task's counts, the
    decoded output differs from the input, or (verify) the rows read differ from an independent count."""
    partitions = [r.partition for r in results]
    if len(set(partitions)) != len(partitions):
        raise InputError(f"partitions reported twice in {sorted(partitions)}: not committing")
    for result in results:
        counted = shard_document_count(config.output_format, result.stem)
        if counted != result.documents:
            raise InputError(f"shard {result.stem} holds {counted} documents, its task wrote {result.documents}")
        skipped = sum(result.stats[k] for k in BAD_ROW_KINDS) - result.stats["kept_bad_rows"]
        if result.stats["rows"] != result.documents + skipped:
            raise InputError(f"partition {result.partition}: {result.stats['rows']} rows read but "
                             f"{result.documents} written and {skipped} skipped")
        if result.stats["verify_mismatches"]:
            raise InputError(f"verify: {result.stats['verify_mismatches']} documents of partition {result.partition} "
                             f"do not decode to their input, e.g. {result.stats['mismatch_examples'][0]}; nothing "
                             "was committed. Is the model lossless (byte fallback, identity normalizer)?")
    if expected_rows is not None:
        read = sum(r.stats["rows"] for r in results)
        if expected_rows != read:
            raise InputError(f"verify: the input has {expected_rows} rows but the tasks read {read}; nothing was "
                             "committed")


def resolved_options(config: TokenizeConfig, master: str | None) -> dict[str, Any]:
    """Every option of a run, as the summary records it: ``config``'s fields (defaults included) plus ``master``;
    the testing-only ``fault_injection`` appears only when set.

    >>> resolved_options(TokenizeConfig(model="m", inputs=["a.txt"], output="o"), "local[2]")["output_format"]
    'parquet'
    """
    options = asdict(config)
    if options.get("fault_injection") is None:
        options.pop("fault_injection", None)
    options["master"] = master
    return options


def _summary(config, out, run_id, results, new_files, new_empty, input_format, sha256, seconds) -> dict[str, Any]:
    histogram: dict[int, int] = {}
    totals = {"rows": 0, "kept_bad_rows": 0, "altered_rows": 0, "verified": 0, **{k: 0 for k in BAD_ROW_KINDS}}
    encode_seconds = 0.0
    for result in results:
        for key in totals:
            totals[key] += result.stats[key]
        for bucket, count in result.stats["histogram"].items():
            histogram[int(bucket)] = histogram.get(int(bucket), 0) + count
        encode_seconds += result.stats["encode_seconds"]
    documents = sum(r.documents for r in results)
    tokens = sum(r.tokens for r in results)
    text_bytes = sum(r.bytes for r in results)
    quantiles = histogram_quantiles(histogram, [0.5, 0.9, 0.99])
    bad_total = sum(totals[k] for k in BAD_ROW_KINDS)
    return {
        "status": "committed", "run_id": run_id, "output": out.path, "output_format": config.output_format,
        "model": os.path.abspath(config.model), "model_sha256": sha256, "input_format": input_format,
        "input_files": [f.path for f in new_files], "empty_input_files": [f.path for f in new_empty],
        "rows_read": totals["rows"], "documents": documents, "bytes": text_bytes, "tokens": tokens,
        "bytes_per_token": text_bytes / tokens if tokens else 0.0,
        "tokens_per_document": {
            "min": min((r.stats["min_tokens"] for r in results if r.documents), default=0), **quantiles,
            "max": max((r.stats["max_tokens"] for r in results), default=0),
            "mean": tokens / documents if documents else 0.0,
            "note": "exact below 1024 tokens, within 1% above",
        },
        "bad_rows": {"policy": config.on_bad_row, "total": bad_total,
                     **{k: totals[k] for k in BAD_ROW_KINDS},
                     "kept": totals["kept_bad_rows"], "skipped": bad_total - totals["kept_bad_rows"],
                     "altered_text": totals["altered_rows"]},
        "verify": {"enabled": config.verify, "rate": config.verify_rate if config.verify else 0.0,
                   "documents_checked": totals["verified"], "mismatches": 0},
        "partitions": len(results), "seconds": seconds, "encode_seconds_total": encode_seconds,
        "throughput": {"mb_per_s": text_bytes / 1e6 / seconds if seconds else 0.0,
                       "documents_per_s": documents / seconds if seconds else 0.0,
                       "tokens_per_s": tokens / seconds if seconds else 0.0},
        "add_bos": config.add_bos, "add_eos": config.add_eos,
    }


def merge_megatron(output_dir: str, prefix: str):
    """Merge the committed Megatron shards of ``output_dir`` (manifest order) into ``prefix.bin``/``prefix.idx``."""
    from tokenizer.interop.megatron import merge_datasets

    out = OutputDirectory(output_dir)
    manifest = out.manifest()
    if manifest is None or not out.is_complete():
        raise InputError(f"{out.path} is not a complete tokenize output (its _manifest.parquet is missing or marks a commit under way): finish or rerun the job first")
    if manifest.get("output_format") != "megatron":
        raise InputError(f"{out.path} holds {manifest.get('output_format')} shards, not megatron")
    stems = out.committed_stems()
    if not stems:
        raise InputError(f"{out.path} has no shards to merge")
    return merge_datasets(stems, prefix)


__all__ = ["TokenizeConfig", "run_tokenize", "read_documents", "encode_partition", "encode_units", "encode_task",
           "merge_megatron",
           "OUTPUT_FORMATS", "shard_files"]
