"""The one training skeleton: everything a run needs that is not the algorithm, the same for all of them.

    options (resolved by the job)  ->  paths checked (outputs, work directory, local inputs)
      -> a table's version pinned (--input-format delta|iceberg; Parquet with --where: pipelines.train.table_input)
      -> engine (choose_engine: this process, Spark or Beam)  ->  input fingerprint
      -> work directory keyed by (version, algorithm, settings, input digest, table and --where, ...), its lease
      -> read (the engine; bad rows as --on-bad-row says: pipelines.train.bad_rows)
      -> the algorithm's fit: its stages on the engine, each stored in the work directory (resume)
      -> models written atomically, the resolved config, the evaluation (bytes per token, round trip)
      -> the manifest (engine and why, read counts and bad rows, stages, bounds, versions, checksums)

With one vocab size ``--output`` is the model file, the manifest ``OUTPUT.manifest.json`` and the resolved config
``OUTPUT.config.yaml``; with several it is a directory of ``ALGORITHM-SIZE.model`` files, ``manifest.json`` and
``config.yaml``. Model files hold only what decides the result (settings, a corpus fingerprint); time, host,
versions, input hashes, per-stage timings and output checksums go to the manifest (:mod:`pipelines.manifest`).
Every stage's output is kept in the work directory (``--work-dir``, default ``.shardpiece-work`` beside the
output) keyed by the algorithm, its settings and the input's content fingerprint (:mod:`pipelines.train.workdir`):
the same command run again resumes after the last finished stage and writes the same model bytes, on either
engine.

Example::

    manifest = run(resolved_options, config_text, progress=print)
    manifest["engine"], manifest["models"]["32000"]["path"]
"""

from __future__ import annotations

import importlib
import os
import platform
import socket
import threading
import time
from typing import Any, Callable

from tokenizer.errors import ConfigError

WORK_DIR_NAME = ".shardpiece-work"
EVAL_BYTES = 8 << 20  # text the evaluation encodes (document prefixes beyond it are cut)


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


def config_path(output: str, vocab_sizes: list[int]) -> str:
    """Where the resolved config goes: ``OUTPUT.config.yaml`` (one size) or ``OUTPUT/config.yaml``."""
    return output + ".config.yaml" if len(vocab_sizes) == 1 else os.path.join(output, "config.yaml")


def default_work_dir(output: str) -> str:
    """``.shardpiece-work`` in the directory that holds ``output``."""
    return os.path.join(os.path.dirname(os.path.abspath(output.rstrip("/") or ".")), WORK_DIR_NAME)


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
    return texts, kind if texts else "none"


def check_before_start(options: dict, outputs: list[str], work_root: str) -> None:
    """The checks that need no data, before any engine starts (a JVM takes seconds; a run, minutes): the output
    files can be written (none is a directory, their directories can be made), the work directory is writable,
    and local inputs match files that hold something. Each failure is one :class:`~tokenizer.errors.ConfigError`
    or :class:`~tokenizer.errors.InputError` naming the path and the fix."""
    from pipelines.inprocess.read import list_local_inputs
    from tokenizer.files import writable_directory

    for path in outputs:
        if os.path.isdir(path):
            raise ConfigError(f"--output {path} is a directory: give a file path for one vocab size, or several "
                              "--vocab-size values to write a directory of models")
        writable_directory(os.path.dirname(path) or ".", "--output")
    writable_directory(work_root, "--work-dir")
    if options.get("input_format") == "iceberg":  # a table's name in a catalog, not a path
        return
    from pipelines.read.tables import refuse_table_folder

    refuse_table_folder(options["input"], options.get("input_format"))  # a table's folder read as files
    if options.get("input_format") == "delta":
        return
    listed = list_local_inputs(list(options["input"]))  # raises "matches no file" for a local input
    if listed is not None and not listed[0]:
        from pipelines.train.engine import empty_corpus_error

        raise empty_corpus_error(options["input"])


def open_engine(options: dict, progress: Callable[[str], None], table=None):
    """The engine :func:`pipelines.train.engine.choose_engine` picks for these options (and ``table``, a
    :class:`~pipelines.train.table_input.TableInput`: its files' size), started."""
    from pipelines.inprocess.read import local_input_bytes
    from pipelines.train.engine import choose_engine

    local_bytes = local_input_bytes if table is None else lambda inputs: table.local_bytes
    choice = choose_engine(options, local_bytes)
    progress(f"[engine] {choice.engine}: {choice.reason}")
    if choice.engine == "in-process":
        from pipelines.inprocess.engine import InProcessEngine

        return InProcessEngine(options, choice.reason, progress)
    if choice.engine == "beam":
        from pipelines.beam.train_engine import BeamEngine

        return BeamEngine(options, choice.reason, progress)
    from pipelines.spark.train_engine import SparkEngine

    return SparkEngine(options, choice.reason, progress)


def run(options: dict[str, Any], config_text: str, *, progress: Callable[[str], None] = print) -> dict[str, Any]:
    """Train with resolved options (local paths absolute, ``work_dir`` set); ``config_text`` is the resolved
    config written beside the models. Returns the manifest (also written beside the models)."""
    from pipelines.lease import Lease
    from pipelines.manifest import file_checksums, write_manifest
    from pipelines.read.tables import TABLE_FORMATS
    from pipelines.read.readers import ReadStats
    from pipelines.train.algorithms import ALGORITHMS, Source
    from pipelines.train.bad_rows import TrainBadRows, bad_row_report
    from pipelines.train.table_input import table_input
    from pipelines.train.workdir import StageLog, WorkDir
    from tokenizer import __version__
    from tokenizer.evaluation import bytes_per_token
    from tokenizer.files import write_atomic

    algorithm = ALGORITHMS[options["algorithm"]]
    settings = algorithm.settings(options)  # invalid settings fail before any engine starts
    sizes = [int(v) for v in options["vocab_size"]]
    paths, manifest_path = model_paths(options["output"], sizes, algorithm.name)
    resolved_path = config_path(options["output"], sizes)
    wall = time.perf_counter()
    check_before_start(options, [*paths.values(), manifest_path, resolved_path], options["work_dir"])
    # the evaluation's encoder modules import while the stages run (their kernels release the GIL): a small run
    # then does not wait for them at its end
    threading.Thread(target=importlib.import_module, args=("tokenizer.core",), name="import-encoder",
                     daemon=True).start()
    # a table's version is pinned once, before anything is read (pipelines.train.table_input)
    table = table_input(options) if options.get("input_format") in TABLE_FORMATS else None
    engine = open_engine(options, progress, table)
    lease = None
    try:
        started = time.perf_counter()
        if table is None and options.get("where") is not None:  # Parquet files, listed as the engine lists them
            table = table_input(options, getattr(engine, "spark", None))
        work_root = options["work_dir"]
        fingerprint = table.fingerprint() if table is not None and table.is_table else \
            engine.fingerprint(options["input"], os.path.join(work_root, "input-hashes.json"))
        fingerprint["seconds"] = round(time.perf_counter() - started, 3)
        progress(f"[fingerprint] {fingerprint['seconds']:.1f} s: {len(fingerprint['files'])} files, "
                 f"{fingerprint['total_bytes']:,} bytes, {fingerprint['digest']}")
        work = WorkDir(work_root, {  # a new shardpiece version may count or fit differently: no old stages
            "shardpiece": __version__,
            "algorithm": algorithm.name, "settings": algorithm.settings_dict(settings),
            "input": fingerprint["digest"], "input_format": options.get("input_format"),
            "text_column": options["text_column"], "holdout_fraction": float(options["holdout_fraction"]),
            "max_table_entries": options["max_table_entries"], "on_bad_row": options.get("on_bad_row", "error"),
            **({"max_table_bytes": options["max_table_bytes"]} if options.get("max_table_bytes") else {}),
            **({"table": table.key()} if table is not None else {}),  # the version and --where
        }, resume=options.get("resume", True) is not False, progress=progress)
        lease = Lease(os.path.join(work.path, "lease.json"), f"work directory {work.path} (this run's key)",
                      progress=progress).acquire()  # two runs of one key would write the same stage files
        log = StageLog(work, progress)
        read_counts, reader, input_format = engine.read(algorithm.reads_files_in_tasks, log, table)
        if read_counts:
            algorithm.check_read(ReadStats(**read_counts), settings)
        trained = algorithm.fit(Source(engine, options, work, log), settings, progress)
        started = time.perf_counter()
        for size, model in trained.models.items():
            write_atomic(paths[size], model.to_bytes(), what="model file")
        write_atomic(resolved_path, config_text.encode(), what="resolved config")
        log.add("write", started, models=len(paths))

        started = time.perf_counter()
        limit = int(options["eval_documents"])
        held_out, training = trained.evaluation_documents or engine.evaluation_sample(limit)
        texts, sample_kind = evaluation_texts(held_out, training, limit)
        evaluation = {size: bytes_per_token(paths[size], texts) for size in paths}
        log.add("evaluate", started, documents=len(texts))
        described = engine.describe()
    finally:
        if lease is not None:
            lease.release()
        engine.close()
    if not read_counts:
        read_counts = {"files": len([f for f in fingerprint["files"] if f["size"] > 0]),
                       "empty_files": len([f for f in fingerprint["files"] if f["size"] == 0]),
                       "input_bytes": fingerprint["total_bytes"], "documents": trained.documents,
                       **trained.read_counts}
    bad_rows = bad_row_report(read_counts, TrainBadRows.of(options))
    if "summary" in bad_rows:
        progress(f"[bad rows] {bad_rows['summary']} (--on-bad-row {bad_rows['policy']})")

    manifest = {
        "command": "shardpiece train",
        "algorithm": algorithm.name,
        "created_unix": round(time.time(), 3),
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": socket.gethostname(),
        "python": platform.python_version(),
        **{k: v for k, v in described.items() if k != "versions"},
        "partitions": options.get("partitions"),
        "input": list(options["input"]),
        "input_format": options.get("input_format") or input_format,
        "text_column": options["text_column"],
        "reader": reader,
        **({"table": table.key()} if table is not None else {}),
        "read": read_counts,
        "bad_rows": bad_rows,
        "holdout_fraction": float(options["holdout_fraction"]),
        "corpus_fingerprint": trained.corpus_fingerprint,
        "training_documents": trained.documents,
        "settings": algorithm.settings_dict(settings),
        "details": trained.details,
        "table_bounds": trained.bounds,
        "lossy_settings": algorithm.lossy_settings(settings),
        "config": {k: v for k, v in sorted(options.items()) if v is not None and k != "spark_log_file"},
        "config_path": os.path.abspath(resolved_path),
        "input_fingerprint": fingerprint,
        "versions": described["versions"],
        "work_dir": work.describe(),
        "stages": [report.to_dict() for report in log.reports],
        "models": {
            str(size): {
                "path": os.path.abspath(paths[size]),
                "vocab_size": trained.models[size].vocab_size,
                **({"short_of_requested": {"requested": size, "hint": algorithm.short_vocabulary}}
                   if trained.models[size].vocab_size < size else {}),
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
