"""``shardpiece tokenize``: tokenize a dataset with Spark into Parquet, Megatron or npy shards (safe to rerun).

    shardpiece tokenize --model MODEL --input PATH [PATH ...] --output DIR
        [--input-format text|jsonl|parquet|delta|iceberg] [--text-column text] [--keep-columns a,b]
        [--table-version N | --snapshot-id ID | --as-of TIME] [--on-table-change error|retokenize]
        [--where FILTER]
        [--output-format parquet|megatron|npy] [--parquet-ids-dtype int32|uint16]
        [--parquet-compression zstd|snappy|lz4|none] [--add-bos] [--add-eos]
        [--partitions N] [--master URL] [--mode error|overwrite|skip|incremental]
        [--verify] [--verify-rate R] [--on-bad-row error|skip|keep] [--max-document-bytes N] [--config FILE]
    shardpiece tokenize --merge-megatron DIR --output PREFIX     # one PREFIX.bin/.idx from DIR's shards

Options given on the command line override the same keys of ``--config FILE`` (YAML, keys as the long options with
``_`` or ``-``; see ``configs/tokenize.yaml``; a value of the wrong type is an error naming the file and the key).
The run's summary, with the resolved options (``config``) and the versions of shardpiece, Spark, PySpark, NumPy,
PyArrow, Numba and Python (``versions``, the same blocks as a training manifest's), is printed as JSON and kept
in ``DIR/_manifest.parquet`` (``shardpiece inspect DIR`` prints it). Exit codes are every command's
(:mod:`jobs.exit_codes`): 0 success, 1 the run failed, 2 invalid options, input or model.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import fields

from jobs.config import check_beam_options, check_local_output
from jobs.table_options import INPUT_FORMAT_HELP, INPUT_FORMATS, TABLE_OPTIONS
from pipelines.tokenize.writers import PARQUET_CODECS
from tokenizer.errors import ConfigError

_LIST_KEYS = ("inputs", "keep_columns")


ENGINE_KEYS = ("engine", "runner", "beam_option", "beam")  # how the job runs, not a TokenizeConfig field


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="shardpiece tokenize", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add = parser.add_argument
    add("--model", help="model file (shardpiece, SentencePiece .model or tokenizer.json)")
    add("--input", dest="inputs", nargs="+", help="input files, globs or directories (any Hadoop filesystem; "
        "with --engine beam, any Beam FileSystems scheme)")
    add("--output", help="output directory (or, with --merge-megatron, the merged dataset's path prefix)")
    add("--input-format", choices=list(INPUT_FORMATS), help=INPUT_FORMAT_HELP)
    for option in TABLE_OPTIONS:
        if option.flag:
            add(option.flag, type=option.type, metavar=option.metavar, help=option.help)
    add("--on-table-change", choices=["error", "retokenize"],
        help="when a table commit removed rows already tokenized (a delete, an update): stop naming it (default) or "
             "tokenize again the shards that hold them, in this run's commit")
    add("--text-column", help="JSONL field / Parquet column holding the text (default: text)")
    add("--keep-columns", help="comma-separated input columns copied to Parquet output (e.g. id,url)")
    add("--output-format", choices=["parquet", "megatron", "npy"], help="default: parquet")
    add("--parquet-ids-dtype", choices=["int32", "uint16"], help="element type of input_ids (default int32)")
    add("--parquet-compression", choices=list(PARQUET_CODECS),
        help="codec of Parquet output (default zstd: smallest; snappy: Spark's default; lz4, none: least CPU)")
    add("--add-bos", action="store_true", default=None, help="prepend the model's <s> id to every document")
    add("--add-eos", action="store_true", default=None, help="append the model's </s> id to every document")
    add("--control-tokens-in-text", action="store_true", default=None,
        help="match control tokens spelled in the text (e.g. '<s>') as their ids; by default such text is ordinary "
             "text, as with every export of the model")
    add("--partitions", type=int, help="repartition the documents into N tasks/shards (default: as read)")
    add("--master", help="Spark master URL (default local[*])")
    add("--engine", choices=["spark", "beam"], help="spark (default), or beam: Apache Beam on --runner (text, JSONL "
        "and Parquet files and tables; pip install 'shardpiece[beam]'; docs/beam.md)")
    add("--runner", help="the Beam runner of --engine beam (default DirectRunner, 2 worker processes)")
    add("--beam-option", nargs="+", metavar="KEY=VALUE", help="Beam pipeline options of --engine beam")
    add("--verbose", action="store_true",
        help="Spark's log and the Java and Python stacks of a failure on the terminal (default: in a log file in "
             ".OUTPUT.logs/ beside the output directory, named by the error line)")
    add("--driver-memory", help="Spark driver memory (default 4g, or $SHARDPIECE_DRIVER_MEMORY)")
    add("--mode", choices=["error", "overwrite", "skip", "incremental"],
        help="what to do with a non-empty output: error (default), overwrite, skip if complete, incremental")
    add("--verify", action="store_true", default=None, help="decode the written shards and compare with the input")
    add("--verify-rate", type=float, help="share of documents checked by --verify (default 1.0: all)")
    add("--on-bad-row", choices=["error", "skip", "keep"],
        help="null text, malformed JSON, invalid UTF-8, oversized documents: fail (default), drop or keep")
    add("--max-document-bytes", type=int, help="documents larger than this are bad rows (default 64 MiB)")
    add("--progress-seconds", type=float,
        help="seconds between progress lines: tasks done of total, rate, ETA (default 10; on a terminal only)")
    add("--quiet", action="store_true", default=None, help="no progress lines")
    add("--config", help="YAML file with any of these options")
    add("--merge-megatron", metavar="DIR", help="merge DIR's Megatron shards into --output PREFIX.bin/.idx")
    return parser


def load_config(path: str) -> dict:
    """Read ``--config FILE``: option names with ``-`` or ``_``, each value type-checked against
    :data:`jobs.config.TOKENIZE_SCHEMA` (an error names the file, the key and the expected type)."""
    import yaml

    from jobs.config import TOKENIZE_SCHEMA, validate_config

    try:
        with open(path, encoding="utf-8") as handle:
            values = yaml.safe_load(handle)
    except OSError as exc:
        raise ConfigError(f"--config {path}: cannot read it ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"--config {path}: not valid YAML ({exc})") from None
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise ConfigError(f"--config {path}: expected a mapping of option names to values")
    values = {str(k).replace("-", "_"): v for k, v in values.items()}
    return validate_config(values, f"--config {path}", TOKENIZE_SCHEMA)


def make_config(args: argparse.Namespace):
    """Merge ``--config`` with the flags given (flags win) into a :class:`pipelines.tokenize.TokenizeConfig`."""
    from pipelines.tokenize import TokenizeConfig

    values = load_config(args.config) if args.config else {}
    if "input" in values:
        values["inputs"] = values.pop("input")
    for key, value in vars(args).items():
        if value is not None and key not in ("config", "master", "merge_megatron", "driver_memory", "verbose",
                                             *ENGINE_KEYS):
            values[key] = value
    for key in _LIST_KEYS:
        if isinstance(values.get(key), str):
            values[key] = [v.strip() for v in values[key].split(",") if v.strip()] if key == "keep_columns" \
                else [values[key]]
    known = {f.name for f in fields(TokenizeConfig)}
    unknown = sorted(set(values) - known - {"master", "driver_memory", *ENGINE_KEYS})
    if unknown:
        raise ConfigError(f"unknown option(s) {', '.join(unknown)}: see shardpiece tokenize --help")
    for required in ("model", "inputs", "output"):
        if not values.get(required):
            flag = "--input" if required == "inputs" else f"--{required}"
            raise ConfigError(f"{flag} is required (on the command line or in --config)")
    master = values.pop("master", None)
    driver_memory = values.pop("driver_memory", None)
    engine = {key: values.pop(key) for key in ENGINE_KEYS if key in values}
    engine.update({key: getattr(args, key) for key in ENGINE_KEYS if getattr(args, key, None) is not None})
    check_beam_options(engine, args.master or master)
    args.engine_options = engine
    return TokenizeConfig(**values), args.master or master, args.driver_memory or driver_memory


def check_before_start(config) -> None:
    """What needs no data, before the JVM starts: the model is a readable model file, the output is a directory (or
    not there yet) in a writable place, and local inputs match files. Each failure is one exit-2 line naming the
    path and the fix."""
    from pipelines.inprocess.read import list_local_inputs
    from pipelines.read.tables import refuse_table_folder
    from tokenizer.files import writable_directory
    from tokenizer.loading import load_model_bytes

    try:
        with open(config.model, "rb") as handle:
            load_model_bytes(handle.read(), config.model)  # a corrupt or wrong file: its own message, now
    except OSError as exc:
        raise ConfigError(f"--model {config.model}: cannot read it ({exc.strerror}): give a model file written by "
                          "shardpiece train (or a SentencePiece .model or tokenizer.json)") from None

    output = config.output
    check_local_output("--output", output, "the tokenize output directory")
    if os.path.exists(output) and not os.path.isdir(output):
        raise ConfigError(f"--output {output} is a file: tokenize writes a directory of shards; give a directory "
                          "path (made if missing)")
    writable_directory(output, "--output")
    if config.input_format == "iceberg":  # a table name in a catalog, not a path
        return
    list_local_inputs(list(config.inputs))  # a local input that matches nothing: its one-line error, now
    refuse_table_folder(config.inputs, config.input_format)  # a table's folder read as files, or a folder as a table


def main(argv: list[str] | None = None) -> int:
    from jobs.exit_codes import run_command

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "tokenize":
        argv = argv[1:]
    args = build_parser().parse_args(argv)
    return run_command("shardpiece tokenize", lambda: run(args), after_interrupt=lambda: rerun_hint(args),
                       verbose=args.verbose)


def rerun_hint(args: argparse.Namespace) -> str:
    """What a stopped run leaves and how to finish its output (Ctrl-C's line)."""
    if not args.output or args.merge_megatron:
        return ""
    mode = args.mode or "error"
    finish = "rerun the same command" if mode in ("overwrite", "incremental") else "rerun with --mode skip"
    return (f"nothing of this run was committed ({args.output} keeps what earlier runs committed); {finish} to "
            "tokenize what is missing")


def run(args: argparse.Namespace) -> int:
    if args.merge_megatron:
        from pipelines.tokenize import merge_megatron

        if not args.output:
            raise ConfigError("--merge-megatron DIR needs --output PREFIX (writes PREFIX.bin and PREFIX.idx)")
        merged = merge_megatron(args.merge_megatron, args.output)
        print(json.dumps({"merged": args.output, "sequences": len(merged), "documents": merged.num_documents,
                          "dtype": str(merged.dtype)}))
        return 0
    config, master, driver_memory = make_config(args)
    config.validate()
    check_before_start(config)
    from pipelines.lease import Lease, lease_beside

    # the output directory's lease before anything starts: a second run into it (a nightly job that overran) stops
    # here with exit 2, naming the first, before its JVM starts
    with Lease(lease_beside(config.output), f"output directory {os.path.abspath(config.output)}",
               progress=lambda message: print(f"shardpiece tokenize: {message}", file=sys.stderr)):
        if args.engine_options.get("engine") == "beam":
            summary = run_on_beam(config, args)
            print(json.dumps(summary, indent=2, ensure_ascii=False))
            return 0
        from pyspark.sql import SparkSession

        from pipelines.manifest import versions
        from pipelines.spark.session import build_session, log_file_in
        from tokenizer.files import hidden_beside
        from pipelines.tokenize import run_tokenize

        owned = SparkSession.getActiveSession() is None
        # A small driver JVM (serial GC, C1 only: on the Parquet path it only schedules tasks) with a 4g heap
        # ceiling for the Spark-reader inputs (text, JSONL), and one reused Python worker per core.
        spark = build_session(master, app_name="shardpiece-tokenize", small_driver=True,
                              driver_memory=driver_memory or os.environ.get("SHARDPIECE_DRIVER_MEMORY") or "4g",
                              log_file=None if args.verbose else
                              log_file_in(hidden_beside(config.output, "logs"), "tokenize"))
        try:
            summary = run_tokenize(spark, config, versions=versions(spark))
        finally:
            if owned:
                spark.stop()
    print(json.dumps(summary, indent=2, ensure_ascii=False))
    return 0


def run_on_beam(config, args: argparse.Namespace) -> dict:
    """The job with Beam's tasks (:class:`pipelines.beam.tokenize.BeamTokenize`): no Spark session; Beam's log in
    the same log directory as Spark's (``--verbose``: the terminal)."""
    from pipelines.beam.tokenize import BeamTokenize
    from pipelines.manifest import versions
    from pipelines.spark.session import log_file_in
    from pipelines.tokenize import run_tokenize
    from tokenizer.files import hidden_beside

    log_file = None if args.verbose else log_file_in(hidden_beside(config.output, "logs"), "tokenize")
    executor = BeamTokenize({**args.engine_options, "spark_log_file": log_file})
    return run_tokenize(None, config, versions=versions(None), executor=executor)


if __name__ == "__main__":
    sys.exit(main())
