"""``shardpiece train``: learn a vocabulary from a corpus, one job for every algorithm, in this process or on
Spark.

    shardpiece train --algorithm bytepiece --input 'corpus/*.txt.gz' --vocab-size 32000 --output bp.model
    shardpiece train --algorithm unigram --input data.parquet --text-column body --vocab-size 8000 16000 --output m/
    shardpiece train --algorithm bpe --config run.yaml --set min_count=8          # flags win over --set, the file
    shardpiece train ... --master local[*]     # Spark even for a small local corpus (default: --master auto)

The job parses the options (:mod:`jobs.train_options`: the options, config file and ``--set``), makes local paths
absolute and hands them to the training skeleton (:mod:`pipelines.train.skeleton`: the engine, the input and its
fingerprint, the work directory that lets a killed run resume, atomic writes, the evaluation, the manifest), which
runs the algorithm (:mod:`pipelines.train.algorithms`); then it prints the summary.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable

from jobs.exit_codes import run_command
from jobs.train_options import build_parser, dump_config, resolve_options

__all__ = ["build_parser", "resolve_options", "run", "main"]


def resolved_config(options: dict[str, Any]) -> dict[str, Any]:
    """The options as they are run: local input paths, output and work dir made absolute."""
    from pipelines.manifest import local_path
    from pipelines.train.skeleton import default_work_dir

    resolved = dict(options)
    if options.get("input_format") != "iceberg":  # an Iceberg input is a table's name, not a path
        resolved["input"] = [os.path.abspath(p) if local_path(p) == p else p for p in options["input"]]
    resolved["output"] = os.path.abspath(options["output"])
    resolved["work_dir"] = os.path.abspath(options.get("work_dir") or default_work_dir(options["output"]))
    return resolved


def run(options: dict[str, Any], *, progress: Callable[[str], None] = print,
        spark_log_to_terminal: bool = False) -> dict[str, Any]:
    """Train with options from :func:`jobs.train_options.resolve_options` (:func:`pipelines.train.skeleton.run`);
    returns the manifest (also written beside the models). A Spark engine writes its log to a new file in the work
    directory's ``logs/`` (``spark_log_to_terminal``: to the terminal)."""
    from pipelines.spark.session import log_file_in
    from pipelines.train.algorithms import ALGORITHMS
    from pipelines.train.skeleton import run as train

    ALGORITHMS[options["algorithm"]].settings(options)  # invalid settings fail before anything starts
    options = resolved_config(options)
    log_file = None if spark_log_to_terminal else log_file_in(os.path.join(options["work_dir"], "logs"), "train")
    return train({**options, "spark_log_file": log_file}, dump_config(options), progress=progress)


def format_summary(manifest: dict[str, Any]) -> str:
    lines = ["", "summary", f"  algorithm         {manifest['algorithm']}",
             f"  engine            {manifest['engine']}: {manifest['engine_reason']}",
             "                    " + (f"spark master {manifest['spark_master']}, partitions: "
                                        f"{manifest['partitions'] or 'as read'}, " if manifest['spark_master'] != "none"
                                        else f"{manifest['threads']} threads, ") + f"reader: {manifest['reader']}"]
    if manifest.get("beam_runner"):
        lines[-1] = f"                    beam runner {manifest['beam_runner']}, {manifest['threads']} threads per task"
    for stage in manifest["stages"]:
        counts = ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in stage["counts"].items()
                           if isinstance(v, int) and (v or k in ("documents", "rows")))
        resumed = " (resumed)" if stage.get("resumed") else ""
        peak = stage.get("driver_peak_mib")
        counts += f"{', ' if counts else ''}driver peak {peak:,.0f} MiB" if peak else ""
        lines.append(f"  {stage['name']:<17} {stage['seconds']:8.1f} s{resumed}   {counts}")
    lines.append(f"  total             {manifest['seconds_total']:8.1f} s")
    if (manifest.get("bad_rows") or {}).get("summary"):  # pipelines.train.bad_rows.bad_row_report
        lines.append(f"  bad rows          {manifest['bad_rows']['summary']}")
    for name, bound in (manifest.get("table_bounds") or {}).items():
        if bound.get("dropped_entries"):
            in_bytes = (f", {bound['kept_bytes']:,} of {bound['bytes']:,} key bytes" if bound.get("byte_limit")
                        else "")
            options = "--max-table-entries" + (", --max-table-bytes" if bound.get("byte_limit") else "")
            lines.append(f"  memory bound      {name}: kept the {bound['kept_entries']:,} most frequent of "
                         f"{bound['entries']:,} entries{in_bytes} ({options}), covering "
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
    if manifest.get("lossy_settings"):
        lines.append(f"  not lossless      {'; '.join(manifest['lossy_settings'])} (these settings were asked for; "
                     "--unigram-defaults lossless keeps every byte)")
    lines.append(f"  manifest          {manifest['manifest_path']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "train":
        argv = argv[1:]
    args = build_parser().parse_args(argv)
    quiet = getattr(args, "quiet", False)
    progress = (lambda message: None) if quiet else (lambda message: print(message, flush=True))
    verbose = getattr(args, "verbose", False)
    outcome = {}

    def body() -> int:
        options, notices = resolve_options(args)
        for notice in notices:
            print(f"shardpiece train: {notice}", file=sys.stderr)
        outcome["work_dir"] = resolved_config(options)["work_dir"]
        outcome["manifest"] = run(options, progress=progress, spark_log_to_terminal=verbose)
        return 0

    def after_interrupt() -> str:
        if "work_dir" not in outcome:
            return "nothing was started"
        return f"the stages done so far are kept in {outcome['work_dir']}; rerun the same command to resume"

    code = run_command("shardpiece train", body, after_interrupt=after_interrupt, verbose=verbose)
    if code:
        return code
    print(format_summary(outcome["manifest"]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
