"""Where BytePiece training's time goes: each Spark stage of the job beside the kernels it calls, run in one process.

    .venv/bin/python benchmarks/bytepiece_stages.py --corpora /work/corpora --slice 128
    .venv/bin/python benchmarks/bytepiece_stages.py --slice 64 --skip-kernels      # the job only

1. The job: ``shardpiece train --algorithm bytepiece --master 'local[2]' --min-count 8 --vocab-size 32000
   --no-resume`` on ``kernel-{slice}m.txt`` (build-large.sh), with Spark's event log on. Each of its stages names
   the Spark jobs it starts (``spark.job.description``, :func:`pipelines.spark.session.describe_jobs`), so the
   tasks' metrics are summed per stage: tasks, executor run seconds, the JVM's CPU and GC seconds, shuffle bytes
   written. Per stage: wall seconds (the job's own log), the rate per core (slice bytes / (wall x cores), the
   issue's measure), and core-microseconds per document and core-nanoseconds per byte.
2. The kernels the ``ngrams`` and ``candidates`` stages call, on the same slice cut into the same ~2 MB shards, in
   one thread of this process: chunking + the longest n-gram at each position counted, their sum
   (``BalancedSum`` of ``merge_counts``), its ``prefix_form`` and the reduce's ``expand_prefix_form``; the
   fingerprint's SHA-256; chunking + segmenting with the n-gram model + counting pieces, and their sum. Each as MB/s of one thread, and the stage's core-seconds
   over the kernels' (the overhead factor: 1.0 would be a stage at the speed of its kernels).

Writes ``benchmarks/results/bytepiece-stages.json``.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))

from benchmarks import common  # noqa: E402

CORES = 2
STAGES = ("read", "ngrams", "candidates", "evaluate")


def job_command(train: str, out: str, events: str) -> list[str]:
    return [common.PYTHON, "-m", "jobs.cli", "train", "--algorithm", "bytepiece", "--input", train, "--master",
            "local[2]", "--min-count", "8", "--vocab-size", "32000", "--no-resume", "--output", out,
            "--work-dir", os.path.join(os.path.dirname(out), "work"),
            "--set", "spark.eventLog.enabled=true", "--set", f"spark.eventLog.dir=file://{events}",
            "--set", "spark.eventLog.compress=false"]


def task_metrics_by_stage(events: str) -> dict[str, dict[str, float]]:
    """Task metrics summed per training stage (the ``[stage]`` description of the Spark job a task ran in)."""
    stage_of_spark_stage: dict[int, str] = {}
    totals: dict[str, dict[str, float]] = {}
    for path in glob.glob(os.path.join(events, "**", "*"), recursive=True):
        if not os.path.isfile(path) or os.path.basename(path).startswith("appstatus"):
            continue
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if '"SparkListenerJobStart"' in line:
                    event = json.loads(line)
                    described = re.match(r"\[(\w+)\]", (event.get("Properties") or {}).get("spark.job.description", ""))
                    for stage_id in event.get("Stage IDs", []):
                        stage_of_spark_stage[stage_id] = described.group(1) if described else "other"
                elif '"SparkListenerTaskEnd"' in line:
                    event = json.loads(line)
                    metrics = event.get("Task Metrics") or {}
                    total = totals.setdefault(stage_of_spark_stage.get(event["Stage ID"], "other"), {
                        "tasks": 0, "run_s": 0.0, "jvm_cpu_s": 0.0, "gc_s": 0.0, "shuffle_written": 0})
                    total["tasks"] += 1
                    total["run_s"] += metrics.get("Executor Run Time", 0) / 1e3
                    total["jvm_cpu_s"] += metrics.get("Executor CPU Time", 0) / 1e9
                    total["gc_s"] += metrics.get("JVM GC Time", 0) / 1e3
                    total["shuffle_written"] += (metrics.get("Shuffle Write Metrics") or {}).get(
                        "Shuffle Bytes Written", 0)
    return totals


def run_job(train: str, work: str) -> tuple[dict, dict, float]:
    """``(manifest stages {name: {seconds, counts...}}, task metrics by stage, wall seconds)`` of one job run."""
    shutil.rmtree(work, ignore_errors=True)
    events = os.path.join(work, "events")
    os.makedirs(events)
    out = os.path.join(work, "model")
    measured = common.run_measured(job_command(train, out, events), cwd=common.REPO,
                                   env={"SPARK_LOCAL_IP": "127.0.0.1"}, log_path=os.path.join(work, "log.txt"))
    if measured.returncode != 0:
        sys.exit(f"the job failed ({measured.returncode}):\n{measured.output_tail}")
    with open(out + ".manifest.json", encoding="utf-8") as handle:
        manifest = json.load(handle)
    stages = {s["name"]: {"seconds": s["seconds"], **s["counts"]} for s in manifest["stages"]}
    return stages, task_metrics_by_stage(events), measured.seconds


def kernel_seconds(train: str) -> dict[str, float]:
    """One thread's seconds for the kernels of the n-gram and piece stages over the whole slice, in ~2 MB shards."""
    import pyarrow as pa

    from pipelines.read.shards import iter_shards
    from tokenizer.balanced_sum import BalancedSum
    from tokenizer.kernels.sha256 import document_limb_sums
    from tokenizer.trainers import bytepiece as bp

    settings = bp.TrainSettings(vocab_sizes=(32000,), min_count=8)
    with open(train, "rb") as handle:
        lines = handle.read().split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    batches = [pa.record_batch([pa.array(lines[i:i + 10000], pa.binary())], ["text"])
               for i in range(0, len(lines), 10000)]
    del lines
    shards = list(iter_shards(iter(batches)))
    del batches
    seconds: dict[str, float] = {}

    def timed(name: str, function, *args):
        began = time.perf_counter()
        result = function(*args)
        seconds[name] = seconds.get(name, 0.0) + time.perf_counter() - began
        return result

    chunked = [timed("chunk_texts", bp.chunk_texts, data, offsets, settings) for data, offsets in shards]
    for data, offsets in shards:
        timed("fingerprint (sha256)", document_limb_sums, data, offsets)
    total = BalancedSum(bp.merge_counts)
    for chunk_data, chunk_offsets in chunked:
        counted = timed("count_maximal_ngrams", bp.count_maximal_ngrams, chunk_data, chunk_offsets, settings.order)
        timed("sum the n-gram tables", total.add, counted)
    form = timed("prefix_form", bp.prefix_form, total.result(bp.empty_counts()))
    ngrams = timed("expand_prefix_form", bp.expand_prefix_form, form)
    lm = bp.build_ngram_model(*ngrams, settings)
    timed("n-gram model's lookup table", lm.lookup_table)
    pieces = BalancedSum(bp.merge_piece_counts)
    for chunk_data, chunk_offsets in chunked:
        counted = timed("segment_and_count_pieces", bp.segment_and_count_pieces, lm, chunk_data, chunk_offsets,
                        settings)
        timed("sum the piece tables", pieces.add, counted)
    timed("sum the piece tables", pieces.result, bp.empty_piece_counts())
    return seconds


NGRAM_KERNELS = ("chunk_texts", "fingerprint (sha256)", "count_maximal_ngrams", "sum the n-gram tables",
                 "prefix_form", "expand_prefix_form")
PIECE_KERNELS = ("chunk_texts", "segment_and_count_pieces", "sum the piece tables")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpora", default=common.DEFAULT_CORPORA, help="build-large.sh's output folder")
    parser.add_argument("--slice", type=int, default=128, help="MiB: kernel-{slice}m.txt (default %(default)s)")
    parser.add_argument("--work", default=os.path.join(common.DEFAULT_WORK, "bytepiece_stages"))
    parser.add_argument("--skip-kernels", action="store_true", help="only the job")
    args = parser.parse_args()
    train = os.path.join(args.corpora, f"kernel-{args.slice}m.txt")
    if not os.path.isfile(train):
        sys.exit(f"missing {train}: run build-large.sh into --corpora")
    size = os.path.getsize(train)
    print(f"job on {train} ({size / 2**20:.0f} MiB), local[2] ({common.load_text()})", flush=True)
    stages, metrics, wall = run_job(train, args.work)
    documents = stages.get("ngrams", {}).get("documents") or 1
    kernels = {} if args.skip_kernels else kernel_seconds(train)
    kernel_core_s = {"ngrams": sum(kernels.get(k, 0.0) for k in NGRAM_KERNELS),
                     "candidates": sum(kernels.get(k, 0.0) for k in PIECE_KERNELS)}
    rows, payload_stages = [], {}
    for name in STAGES:
        if name not in stages:
            continue
        seconds = stages[name]["seconds"]
        task = metrics.get(name, {})
        core_s = seconds * CORES
        own = kernel_core_s.get(name)
        row = {"wall_s": seconds, "mb_per_s_per_core": round(size / 1e6 / core_s, 2),
               "core_us_per_document": round(core_s / documents * 1e6, 2),
               "core_ns_per_byte": round(core_s / size * 1e9, 1), **{k: round(v, 2) for k, v in task.items()},
               "kernel_one_thread_s": round(own, 2) if own else None,
               "stage_over_kernels": round(core_s / own, 2) if own else None}
        payload_stages[name] = row
        rows.append([name, seconds, row["mb_per_s_per_core"], row["core_us_per_document"], row["core_ns_per_byte"],
                     task.get("tasks", 0), round(task.get("run_s", 0.0), 1), round(task.get("jvm_cpu_s", 0.0), 1),
                     round(task.get("gc_s", 0.0), 1), round(task.get("shuffle_written", 0) / size, 3),
                     row["kernel_one_thread_s"] or "—", row["stage_over_kernels"] or "—"])
    print(common.markdown_table(["stage", "wall s", "MB/s per core", "core-us/doc", "core-ns/byte", "tasks",
                                 "task run s", "JVM CPU s", "GC s", "shuffle/input byte", "kernels 1 thread s",
                                 "stage core-s / kernels"], rows))
    print(f"\nwhole job {wall:.1f} s wall ({documents:,} documents, {size:,} bytes)")
    if kernels:
        print()
        print(common.markdown_table(["kernel (one thread)", "seconds", "MB/s"],
                                    [[k, round(v, 2), round(size / 1e6 / v, 1) if v else "—"]
                                     for k, v in kernels.items()]))
    path = common.write_results("bytepiece-stages", {
        "slice_mib": args.slice, "train_bytes": size, "documents": documents, "cores": CORES, "job_wall_s": wall,
        "stages": payload_stages, "kernels_one_thread_s": kernels, **common.git_revision()})
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
