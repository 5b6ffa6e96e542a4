"""The tokenize job's input side, on the driver: list the input files with sizes and modification times (or a
table version's data files: :func:`table_inputs`), plan the direct read (pyarrow in the Python tasks,
:mod:`pipelines.read.arrow_read`, :mod:`pipelines.read.jsonl_read`, :mod:`pipelines.read.table_units`) or fall
back to Spark's reader, and Spark's reader itself (:func:`read_documents`)."""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass, field
from typing import Sequence

import pyarrow as pa

from pipelines.read.arrow_read import TextPlan, plan_parquet, plan_text
from pipelines.read.jsonl_read import JsonlPlan, plan_jsonl
from pipelines.read.table_changes import refuse_rewrites, table_changes
from pipelines.read.table_units import files_snapshot, plan_table
from pipelines.read.tables import TableSnapshot, open_snapshot
from pipelines.tokenize.commit import InputFile, OutputDirectory, Replaced
from pipelines.read.readers import InputFiles, _read_lines, detect_format, list_input_files, missing_column_error
from pipelines.tokenize.options import MALFORMED, TEXT, TokenizeConfig
from pipelines.tokenize.retokenize import plan_retokenize
from tokenizer.errors import ConfigError, InputError


def list_inputs(spark, inputs: Sequence[str]) -> tuple[list[InputFile], list[InputFile], str | None]:
    """(non-empty files, empty files, guessed format) with sizes and modification times (ms, as ns)."""
    listed = list_input_files(spark, list(inputs))

    def status(path: str) -> InputFile:
        return InputFile(path, listed.sizes[path], listed.modified_ms[path] * 1_000_000)

    guessed = detect_format(listed.files + listed.empty_files)
    return [status(p) for p in listed.files], [status(p) for p in listed.empty_files], guessed


@dataclass
class TableInputs:
    """What a run reads from a table version: ``snapshot``; ``files``: the files to tokenize (new ones, and those
    read again for ``retokenize``); ``covered``: compaction outputs whose rows the output holds (recorded, not
    read); ``covers``: each covered file -> its sources; ``replaced``: the shards this run rebuilds, or ``None``."""

    snapshot: TableSnapshot
    files: list[InputFile]
    covered: list[InputFile] = field(default_factory=list)
    covers: dict[str, list[str]] = field(default_factory=dict)
    replaced: Replaced | None = None


def table_inputs(config: TokenizeConfig, out: OutputDirectory) -> TableInputs:
    """The :class:`TableInputs` of the table version this run reads: every data file for an output without runs;
    else the files whose rows the output lacks, and those a compaction wrote from tokenized files (recorded with
    this run, never tokenized again: :mod:`pipelines.read.table_changes`). A commit since the output's last table
    version that removed tokenized rows is refused, naming it, or with ``on_table_change: retokenize`` the shards
    holding them are rebuilt (:mod:`pipelines.tokenize.retokenize`)."""
    snapshot = open_snapshot(config.input_format, config.inputs[0], config.catalog, config.table_version,
                             config.snapshot_id, config.as_of)
    runs = (out.manifest() or {"runs": []})["runs"]
    versions = [run["table"]["version"] for run in runs if run.get("table")]
    present = [f.path for f in snapshot.files]
    def as_inputs(paths) -> list[InputFile]:  # in the snapshot's order
        wanted = set(paths)
        return [InputFile(f.path, f.size, 0) for f in snapshot.files if f.path in wanted]

    if not versions:
        return TableInputs(snapshot, as_inputs(present))
    covers: dict[str, list[str]] = {}
    for run in runs:
        covers.update((run.get("table") or {}).get("covers", {}))
    changes = table_changes(snapshot, [f["path"] for run in runs for f in run["inputs"]], versions[-1],
                            config.catalog, covers)
    if not changes.rewrites or config.on_table_change != "retokenize":
        refuse_rewrites(changes, snapshot, versions[-1])
        return TableInputs(snapshot, as_inputs(changes.new), as_inputs(changes.covered), changes.covers)
    plan = plan_retokenize(runs, [path for _, path in changes.rewrites], {**covers, **changes.covers}, present)
    covered = [path for path in changes.covered if path not in plan.reread]
    return TableInputs(snapshot, as_inputs(changes.new + plan.reread), as_inputs(covered),
                       {path: changes.covers[path] for path in covered}, plan.replaced)


def read_documents(spark, files: Sequence[str], input_format: str, text_column: str, keep_columns: Sequence[str]):
    """DataFrame of ``__text`` (binary, nulls kept), ``__malformed`` (bool) and the kept columns of ``files``.

    Unlike :func:`pipelines.read.readers.read_corpus`, rows with null or empty text stay (they are documents or bad rows
    to account for) and extra columns come along. JSONL fields are kept as strings (JSON text for non-strings).
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType, StringType

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
    return jsonl_rows(lines, text_column, keep_columns)


def jsonl_rows(lines, text_column: str, keep_columns: Sequence[str], *passed: str):
    """JSONL ``lines`` (a DataFrame with ``line: binary`` and the ``passed`` columns) -> ``__text``, ``__malformed``,
    the kept fields and the ``passed`` columns, one row per non-blank line (blank lines are no rows)."""
    from pyspark.sql import functions as F

    check_field_names(text_column, keep_columns)
    line = F.col("line").cast("string")
    frame = lines.select(line.alias("line"), *passed).where(F.length(F.trim(F.col("line"))) > 0)
    return frame.select(
        F.expr(f"get_json_object(line, '$[\\'{text_column}\\']')").cast("binary").alias(TEXT),
        F.expr("json_object_keys(line)").isNull().alias(MALFORMED),
        *[F.expr(f"get_json_object(line, '$[\\'{c}\\']')").alias(c) for c in keep_columns], *passed,
    )


def check_field_names(text_column: str, keep_columns: Sequence[str]) -> None:
    """JSONL field names Spark's JSON path can name: one with a quote or a backslash is a :class:`ConfigError`.
    ``check_field_names("text", ["id"])`` passes; ``check_field_names("it's", [])`` raises."""
    for name in [text_column, *keep_columns]:
        if "'" in name or "\\" in name:
            raise ConfigError(f"field name {name!r}: names with quotes or backslashes are not supported")


def _direct_plan(config: TokenizeConfig, input_format: str, files: Sequence[InputFile],
                 snapshot: TableSnapshot | None = None, engine: str | None = None, remote_files=None):
    """``(work units, kept columns' Arrow schema)`` for reading Parquet, text, JSONL or a table's files
    (``snapshot``: of them, ``files``) in the Python tasks (:mod:`pipelines.read.arrow_read`,
    :mod:`pipelines.read.jsonl_read`; ``remote_files`` opens paths with a scheme), or ``(None, None)`` for Spark's
    reader (``reader: spark``; JSONL unless ``reader: arrow``; files pyarrow cannot take, said on stderr).
    ``engine``: the engine's name when it has no reader of its own (``beam``): JSONL is then read directly, and
    what only Spark's reader reads is a :class:`ConfigError` naming why. A missing column raises the Spark path's
    error. Parquet with ``--where`` is read as a table of those files."""
    if snapshot is not None:
        wanted = {f.path for f in files}
        chosen = dataclasses.replace(snapshot, files=tuple(f for f in snapshot.files if f.path in wanted))
        return plan_table(chosen, config.text_column, config.keep_columns, config.where)
    if input_format == "parquet" and config.where is not None:
        return plan_table(files_snapshot([(f.path, f.size) for f in files]), config.text_column,
                          config.keep_columns, config.where)
    if config.where is not None:
        raise ConfigError(f"--where filters Parquet files and tables, not {input_format} input")
    if input_format == "text" and config.keep_columns:  # for either reader
        raise ConfigError("--keep-columns: text input has no columns; use JSONL or Parquet input")
    if config.reader == "spark":
        if engine is not None:
            _spark_reader_instead(config, "reader: spark asks for Spark's reader", engine)
        return None, None
    if input_format == "jsonl":
        check_field_names(config.text_column, config.keep_columns)
        if config.reader == "auto" and engine is None:  # Spark's tokenize keeps Spark's JSON functions
            return None, None
    if input_format in ("text", "jsonl"):
        planned = [(f.path, f.size) for f in files]
        units, reason = plan_text(planned, config.partitions, remote_files=remote_files) \
            if input_format == "text" else plan_jsonl(planned, config.partitions, remote_files)
        if units is not None and config.verify:
            units, reason = None, "--verify counts the input rows with Spark's reader"
        if units is None:
            return _spark_reader_instead(config, reason, engine)
        if input_format == "text":
            return TextPlan(units), pa.schema([])
        return JsonlPlan(units), pa.schema([(name, pa.string()) for name in config.keep_columns])
    if input_format != "parquet":
        raise ConfigError(f"unknown input format {input_format!r}: use text, jsonl or parquet")
    plan, keep_schema, reason = plan_parquet([(f.path, f.size) for f in files], config.text_column,
                                             config.keep_columns, config.partitions, remote_files)
    if plan is None:
        return _spark_reader_instead(config, reason, engine)
    return plan, keep_schema


def _spark_reader_instead(config: TokenizeConfig, reason: str, engine: str | None = None):
    """``(None, None)``: Spark's reader takes the input the direct path cannot (said on stderr); with
    ``reader: arrow`` an error instead, and with an ``engine`` that has no Spark reader (Beam) one naming it."""
    if engine is not None:
        raise ConfigError(f"--engine {engine} reads its input with pyarrow, which cannot take this input "
                          f"({reason}): tokenize it with Spark (drop --engine {engine})")
    if config.reader == "arrow":
        raise InputError(f"reader: arrow cannot read the input: {reason}; use reader: auto or spark")
    print(f"tokenize: reading the input with Spark ({reason})", file=sys.stderr)
    return None, None
