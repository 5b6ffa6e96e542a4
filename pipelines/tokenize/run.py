"""The tokenize job's driver, :func:`run_tokenize`: prepare the output directory, list and plan the input, run the
tasks (with progress lines on a terminal), check their results and commit the run with its summary."""

from __future__ import annotations

import hashlib
import json
import re
import sys
import time
from typing import Any

from pipelines.progress import SparkStageWatcher, StageProgress
from pipelines.read.arrow_read import assign_units, default_tasks
from pipelines.tokenize.commit import OutputDirectory, TaskResult
from pipelines.spark.session import default_parallelism
from pipelines.read.tables import TABLE_FORMATS, refuse_table_folder
from pipelines.tokenize.inputs import _direct_plan, list_inputs, read_documents, table_inputs
from pipelines.tokenize.options import RESULT_SCHEMA, TokenizeConfig, resolved_options, task_options
from pipelines.tokenize.results import _check_results, _summary
from pipelines.tokenize.task import BadRowError, _special_id, encode_partition, encode_units, load_tokenizer_bytes
from tokenizer.bad_rows import BAD_ROW_CHOICES, keeps_invalid_utf8
from tokenizer.errors import ConfigError, InputError, ShardpieceError


def run_tokenize(spark, config: TokenizeConfig, versions: dict[str, Any] | None = None,
                 executor: Any = None) -> dict[str, Any]:
    """Run the tokenize job; returns the summary (also kept in ``OUTPUT/_manifest.parquet``:
    :func:`pipelines.tokenize.commit.read_summary`).

    The summary records the resolved options (``config``: every field of ``config`` after the config file and the
    command line were merged, defaults included, and the session's Spark master) and ``versions`` as given (the
    ``shardpiece tokenize`` job passes :func:`pipelines.manifest.versions`; ``None`` records none).

    ``executor``: another engine's tasks instead of Spark's (``spark`` is then ``None``; inputs the direct
    path reads): ``executor.parallelism``, ``executor.master`` (what the summary records),
    ``executor.list_inputs(inputs)`` (as :func:`pipelines.tokenize.inputs.list_inputs`), ``executor.remote_files``
    (what opens inputs with a scheme: :mod:`pipelines.read.arrow_read`) and
    ``executor.encode(groups, **encode_units's arguments) -> one result dict per group`` (the Beam engine's
    :class:`pipelines.beam.tokenize.BeamTokenize`). The planning, checks and commit are the same."""
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
    snapshot, table_input = None, None
    if config.input_format in TABLE_FORMATS:
        table_input = table_inputs(config, out)
        snapshot, files, empty_files, input_format = table_input.snapshot, table_input.files, [], config.input_format
    else:
        refuse_table_folder(config.inputs, config.input_format)
        lister = executor.list_inputs if executor is not None else lambda inputs: list_inputs(spark, inputs)
        files, empty_files, guessed = lister(config.inputs)  # local inputs need no session
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
    # a table's files to read are decided by its versions (retokenize reads recorded ones again)
    new_files = files if table_input is not None else [f for f in files if f.path not in recorded]
    new_empty = [f for f in empty_files if f.path not in recorded]
    run_id = out.next_run_id()
    results: list[TaskResult] = []
    reader, shard_inputs = None, None
    if new_files and executor is not None:
        # the engine has no reader of its own: what only Spark's reader reads is an error naming why
        plan, keep_schema = _direct_plan(config, input_format, new_files, snapshot, engine=executor.name,
                                         remote_files=executor.remote_files)
        reader = "arrow"
        tasks = config.partitions or default_tasks(plan.units, executor.parallelism)
        groups = assign_units(plan.units, tasks) if plan.units or config.partitions else []
        shard_inputs = {partition: sorted({unit.path for unit in group}) for partition, group in enumerate(groups)}
        try:
            rows = executor.encode(groups, text_column=config.text_column, keep_schema=keep_schema,
                                   model=model_bytes, model_sha256=sha256, output=out.path, run_id=run_id,
                                   config=task_options(config))
        except Exception as exc:  # noqa: BLE001 - re-raised; nothing of this run is committed
            out.discard_run(run_id)
            if isinstance(exc, ShardpieceError):  # as a Spark task's error reads (_task_error)
                raise type(exc)(str(exc) + _NOTHING_COMMITTED) from None
            raise
        try:
            results = [TaskResult(r["partition"], r["attempt"], r["stem"], r["documents"], r["tokens"], r["bytes"],
                                  json.loads(r["file_sizes"]), json.loads(r["stats"])) for r in rows]
            _check_results(results, config, plan.rows if config.verify else None)
        except BaseException:
            out.discard_run(run_id)
            raise
    elif new_files:
        from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

        plan, keep_schema = _direct_plan(config, input_format, new_files, snapshot)
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

        progress = _progress_watcher(spark, config)
        progress.start()
        try:
            if plan is None:
                rows = frame.mapInArrow(step, from_arrow_schema(RESULT_SCHEMA)).collect()
            else:
                tasks = config.partitions or default_tasks(plan.units, default_parallelism(spark))
                groups = assign_units(plan.units, tasks) if plan.units or config.partitions else []
                shard_inputs = {partition: sorted({unit.path for unit in group})
                                for partition, group in enumerate(groups)}
                rows = spark.sparkContext.parallelize(groups, len(groups)).mapPartitions(direct_step).collect() \
                    if groups else []
        except Exception as exc:  # noqa: BLE001 - re-raised; a task's own error becomes a plain shardpiece error
            out.discard_run(run_id)
            error = _task_error(exc)
            if plan is None and isinstance(error, BadRowError):  # name the file and line, not the partition
                error = _located(spark, error, config, input_format, [f.path for f in new_files],
                                 keeps_invalid_utf8(tokenizer.model.pretokenizer))
            raise error from None
        finally:
            progress.stop()
            spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
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
    summary["config"] = resolved_options(config, spark.sparkContext.master if executor is None else executor.master)
    summary["versions"] = dict(versions) if versions is not None else None
    summary["reader"] = reader
    table = None
    if table_input is not None:
        table = {**snapshot.describe(), "covered_files": len(table_input.covered), "covers": table_input.covers}
        summary["table"] = {key: value for key, value in table.items() if key != "covers"}
        if table_input.replaced is not None:
            summary["retokenized"] = {"shards": len(table_input.replaced.stems), "files": len(new_files)}
    if config.where is not None:
        summary["where"] = config.settings(sha256)["where"]
    if not new_files and not new_empty and state == "continue":
        summary["status"] = "up to date: no new input files"
        out.mark_complete_without_run(summary)
    else:
        covered = table_input.covered if table_input is not None else []
        out.commit(run_id, config.output_format, settings, new_files + new_empty + covered, results, summary, table,
                   shard_inputs, None if table_input is None else table_input.replaced)
    print(f"tokenize: {summary['documents']:,} documents, {summary['tokens']:,} tokens, "
          f"{summary['bytes_per_token']:.2f} bytes/token, {summary['seconds']:.1f} s -> {out.path}", file=sys.stderr)
    return summary


#: the Spark job group of the tokenize job's encoding job (what its progress lines count)
JOB_GROUP = "shardpiece-tokenize"


def _progress_watcher(spark, config: TokenizeConfig) -> SparkStageWatcher:
    """The thread that prints ``[tokenize] job J: D/T tasks (P%), R tasks/s, ETA E; S in this stage`` to stderr
    every ``progress_seconds`` while the encoding job runs, on a terminal only and not with ``quiet``
    (:mod:`pipelines.progress`); the job's last line (documents, tokens, seconds) is printed either way."""
    spark.sparkContext.setJobGroup(JOB_GROUP, "[tokenize] encoding and writing the shards")
    progress = StageProgress("tokenize", lambda line: print(line, file=sys.stderr, flush=True),
                             terminal=sys.stderr.isatty() and not config.quiet, every=config.progress_seconds)
    return SparkStageWatcher(spark.sparkContext.statusTracker(), JOB_GROUP, progress)


_TASK_ERROR = re.compile(r"(?:tokenizer\.errors\.|pipelines\.tokenize\.task\.)?"
                         r"(BadRowError|InputError|ConfigError|ModelError|ModelFileError): (.+)")
_NOTHING_COMMITTED = " (nothing was committed; the output directory keeps its previous state)"


def _task_error(exc: BaseException) -> BaseException:
    """The shardpiece error a task raised (its message, without the Java and Python stack traces), or ``exc``."""
    match = _TASK_ERROR.search(str(exc))
    if match is None:
        return exc
    kind = {"ConfigError": ConfigError, "BadRowError": BadRowError}.get(match.group(1), InputError)
    return kind(match.group(2).strip() + _NOTHING_COMMITTED)


def _located(spark, error: BadRowError, config: TokenizeConfig, input_format: str, files: list[str],
             keeps_invalid: bool) -> BadRowError:
    """``error`` (a bad row named by partition and row, from Spark's read path) with the row's file and line or
    row instead (:func:`pipelines.tokenize.locate.locate_bad_row`); ``error`` itself when it cannot be found."""
    from pipelines.tokenize.locate import locate_bad_row

    try:
        found = locate_bad_row(spark, files, input_format, config.text_column, config.max_document_bytes,
                               keeps_invalid)
    except Exception as exc:  # noqa: BLE001 - the partition and row still say where the row is
        print(f"tokenize: could not find the bad row's file and line ({type(exc).__name__}: {exc})",
              file=sys.stderr)
        return error
    if found is None:
        return error
    place, detail = found
    return BadRowError(f"{place}: {detail}; {BAD_ROW_CHOICES}{_NOTHING_COMMITTED}")
