"""``shardpiece train``: learn a vocabulary from a corpus with Spark, one job for every algorithm.

    shardpiece train --algorithm bytepiece --input 'corpus/*.txt.gz' --vocab-size 32000 --output bp.model
    shardpiece train --algorithm unigram --input data.parquet --text-column body --vocab-size 8000 16000 --output m/
    shardpiece train --algorithm bpe --config run.yaml --set min_count=8          # flags win over --set, the file

The job owns everything that is not the algorithm (:mod:`jobs.train_options` for the options, config file and
``--set``): the session, the input and its fingerprint, the held-out documents, the work directory that lets a
killed run resume, atomic writes, the evaluation, the manifest and the saved config. An algorithm
(:mod:`jobs.train_algorithms`) adds its settings, its count and its fit.

With one vocab size ``--output`` is the model file, the manifest ``OUTPUT.manifest.json`` and the resolved config
``OUTPUT.config.yaml``; with several it is a directory of ``ALGORITHM-SIZE.model`` files, ``manifest.json`` and
``config.yaml``. Model files hold only what decides the result (settings, a corpus fingerprint); time, host,
versions, input hashes, per-stage timings and output checksums go to the manifest (:mod:`jobs.manifest`). Every
stage's output is kept in the work directory (``--work-dir``, default ``.shardpiece-work`` beside the output) keyed
by the algorithm, its settings and the input's content fingerprint (:mod:`pipelines.train.workdir`): the same command
run again resumes after the last finished stage and writes the same model bytes.
"""

from __future__ import annotations

import os
import platform
import socket
import sys
import time
from typing import Any, Callable

from jobs.exit_codes import run_command
from jobs.train_algorithms import ALGORITHMS, TrainInput
from jobs.train_options import build_parser, dump_config, resolve_options
from jobs.training import model_paths

_WORK_DIR_NAME = ".shardpiece-work"
__all__ = ["build_parser", "resolve_options", "run", "main"]


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


def _read(source: TrainInput, options: dict, algorithm, settings, log) -> tuple[dict, str, Any]:
    """Read the input as the algorithm and the options allow; returns ``(read counts, reader, corpus or None)``
    and fills ``source`` (documents, units or local packed documents)."""
    from pipelines.read.readers import ReadStats

    holdout = source.holdout
    if source.spark is None:  # --master none: local text files in this process
        from jobs.training import read_text_lines, split_held_out

        started = time.perf_counter()
        data, offsets, files = read_text_lines(options["input"])
        source.local = split_held_out(data, offsets, holdout)
        import numpy as np

        (kept, kept_offsets), (_, held_offsets) = source.local
        stats = ReadStats(files=len(files), input_bytes=sum(os.path.getsize(f) for f in files),
                          documents=int(np.count_nonzero(np.diff(kept_offsets))) +
                          int(np.count_nonzero(np.diff(held_offsets))), document_bytes=int(offsets[-1]))
        log.add("read", started, files=len(files), documents=stats.documents, bytes=stats.document_bytes,
                held_out_documents=int(np.count_nonzero(np.diff(held_offsets))))
        return stats.to_dict(), "one process", None
    if algorithm.reads_files_in_tasks and options["reader"] == "auto" and not options.get("partitions"):
        from pipelines.train.direct_count import direct_units

        source.units = direct_units(source.spark, options["input"], options.get("input_format"),
                                    options["text_column"])
        if source.units is not None:
            return {}, "pyarrow in the tasks", None
    from jobs.training import split_holdout
    from pipelines.read.readers import read_corpus

    from pipelines.spark.session import describe_jobs

    describe_jobs(source.spark, "read")
    corpus = read_corpus(source.spark, options["input"], input_format=options.get("input_format"),
                         text_column=options["text_column"], partitions=options.get("partitions"))
    counts = log.run("read", lambda: corpus.compute_stats().to_dict(), "json",
                     lambda value: {k: value[k] for k in ("files", "empty_files", "rows", "documents",
                                                          "document_bytes", "null_rows", "empty_rows",
                                                          "malformed_rows", "invalid_utf8_rows")})
    algorithm.check_read(ReadStats(**counts), settings)
    source.documents, source.held_out = split_holdout(corpus.documents, holdout)
    return counts, "spark", corpus


def run(options: dict[str, Any], *, progress: Callable[[str], None] = print) -> dict[str, Any]:
    """Train with resolved options (:func:`jobs.train_options.resolve_options`); returns the manifest (also
    written beside the models)."""
    from jobs.evaluate import bytes_per_token
    from jobs.manifest import file_checksums, input_fingerprint, versions, write_manifest
    from jobs.training import evaluation_sample, evaluation_texts
    from pipelines.train.workdir import StageLog, WorkDir
    from tokenizer.files import write_atomic

    algorithm = ALGORITHMS[options["algorithm"]]
    settings = algorithm.settings(options)  # invalid settings fail before Spark starts
    options = resolved_config(options)
    sizes = [int(v) for v in options["vocab_size"]]
    paths, manifest_path = model_paths(options["output"], sizes, algorithm.name)
    resolved_path = config_path(options["output"], sizes)
    wall = time.perf_counter()
    spark = None
    if (options.get("master") or "").lower() != "none":
        from pipelines.spark.session import build_session

        # a lean local driver JVM and one Python worker at a time using every local core through threads
        spark = build_session(options.get("master"), app_name=f"shardpiece-train-{algorithm.name}",
                              driver_memory=options.get("driver_memory"),
                              extra={**algorithm.session_options(options.get("master")),
                                     **(options.get("spark") or {})},
                              shuffle_partitions=options.get("partitions"), small_driver=True, single_worker=True)
        progress(f"[spark] session on {spark.sparkContext.master} in {time.perf_counter() - wall:.1f} s")

    started = time.perf_counter()
    work_root = options["work_dir"]
    fingerprint = input_fingerprint(spark, options["input"], hash_cache=os.path.join(work_root, "input-hashes.json"))
    fingerprint["seconds"] = round(time.perf_counter() - started, 3)
    progress(f"[fingerprint] {fingerprint['seconds']:.1f} s: {len(fingerprint['files'])} files, "
             f"{fingerprint['total_bytes']:,} bytes, {fingerprint['digest']}")
    from tokenizer import __version__

    work = WorkDir(work_root, {  # a new shardpiece version may count or fit differently: it never reuses old stages
        "shardpiece": __version__,
        "algorithm": algorithm.name, "settings": algorithm.settings_dict(settings), "input": fingerprint["digest"],
        "input_format": options.get("input_format"), "text_column": options["text_column"],
        "holdout_fraction": float(options["holdout_fraction"]), "max_table_entries": options["max_table_entries"],
    }, resume=options.get("resume", True) is not False, progress=progress)
    log = StageLog(work, progress)
    source = TrainInput(spark=spark, options=options, work=work, log=log)
    read_counts, reader, corpus = _read(source, options, algorithm, settings, log)

    trained = algorithm.fit(source, settings, progress)
    started = time.perf_counter()
    for size, model in trained.models.items():
        write_atomic(paths[size], model.to_bytes(), what="model file")
    write_atomic(resolved_path, dump_config(options).encode(), what="resolved config")
    log.add("write", started, models=len(paths))

    started = time.perf_counter()
    limit = int(options["eval_documents"])
    if trained.evaluation_documents is not None:
        texts, sample_kind = evaluation_texts(*trained.evaluation_documents, limit)
    elif source.documents is not None:
        from pipelines.spark.session import describe_jobs

        describe_jobs(source.spark, "evaluate")
        texts, sample_kind = evaluation_sample(source.documents, source.held_out, limit)
    else:
        texts, sample_kind = [], "none"
    evaluation = {size: bytes_per_token(paths[size], texts) for size in paths}
    log.add("evaluate", started, documents=len(texts))
    if corpus is not None:
        corpus.raw.unpersist()
    if not read_counts:
        read_counts = {"files": len([f for f in fingerprint["files"] if f["size"] > 0]),
                       "empty_files": len([f for f in fingerprint["files"] if f["size"] == 0]),
                       "input_bytes": fingerprint["total_bytes"], "documents": trained.documents}

    manifest = {
        "command": "shardpiece train",
        "algorithm": algorithm.name,
        "created_unix": round(time.time(), 3),
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "host": socket.gethostname(),
        "python": platform.python_version(),
        "spark_version": spark.version if spark is not None else None,
        "spark_master": spark.sparkContext.master if spark is not None else "none",
        "default_parallelism": spark.sparkContext.defaultParallelism if spark is not None else None,
        "partitions": options.get("partitions"),
        "input": list(options["input"]),
        "input_format": options.get("input_format") or (corpus.input_format if corpus is not None else None),
        "text_column": options["text_column"],
        "reader": reader,
        "read": read_counts,
        "holdout_fraction": float(options["holdout_fraction"]),
        "corpus_fingerprint": trained.corpus_fingerprint,
        "training_documents": trained.documents,
        "settings": algorithm.settings_dict(settings),
        "details": trained.details,
        "table_bounds": trained.bounds,
        "config": {k: v for k, v in sorted(options.items()) if v is not None},
        "config_path": os.path.abspath(resolved_path),
        "input_fingerprint": fingerprint,
        "versions": versions(spark),
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


def format_summary(manifest: dict[str, Any]) -> str:
    lines = ["", "summary", f"  algorithm         {manifest['algorithm']}",
             f"  spark master      {manifest['spark_master']}  (partitions: {manifest['partitions'] or 'as read'}; "
             f"reader: {manifest['reader']})"]
    for stage in manifest["stages"]:
        counts = ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in stage["counts"].items()
                           if isinstance(v, int) and (v or k in ("documents", "rows")))
        resumed = " (resumed)" if stage.get("resumed") else ""
        peak = stage.get("driver_peak_mib")
        counts += f"{', ' if counts else ''}driver peak {peak:,.0f} MiB" if peak else ""
        lines.append(f"  {stage['name']:<17} {stage['seconds']:8.1f} s{resumed}   {counts}")
    lines.append(f"  total             {manifest['seconds_total']:8.1f} s")
    for name, bound in (manifest.get("table_bounds") or {}).items():
        if bound.get("dropped_entries"):
            lines.append(f"  memory bound      {name}: kept the {bound['kept_entries']:,} most frequent of "
                         f"{bound['entries']:,} entries (--max-table-entries), covering "
                         f"{100 * bound['kept_share']:.2f}% of their occurrences")
    for size, info in manifest["models"].items():
        evaluation = info["evaluation"]
        bpt = evaluation.get("bytes_per_token")
        lines.append(
            f"  model {size:>7}     vocab size {info['vocab_size']:,}; "
            + (f"{bpt:.3f} bytes/token on {evaluation['documents']:,} {evaluation['sample']} "
               f"(round trip {'ok' if evaluation.get('lossless') else 'FAILED'})" if bpt else "no evaluation text")
            + f"\n                    {info['path']}"
        )
        short = info.get("short_of_requested")
        if short:
            lines.append(f"                    only {info['vocab_size']:,} of the {short['requested']:,} pieces asked: "
                         f"{short['hint']}")
    lines.append(f"  manifest          {manifest['manifest_path']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "train":
        argv = argv[1:]
    args = build_parser().parse_args(argv)
    quiet = getattr(args, "quiet", False)
    progress = (lambda message: None) if quiet else (lambda message: print(message, flush=True))
    outcome = {}

    def body() -> int:
        options, notices = resolve_options(args)
        for notice in notices:
            print(f"shardpiece train: {notice}", file=sys.stderr)
        outcome["manifest"] = run(options, progress=progress)
        return 0

    code = run_command("shardpiece train", body)
    if code:
        return code
    print(format_summary(outcome["manifest"]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
