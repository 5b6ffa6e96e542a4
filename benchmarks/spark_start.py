"""How long a job's local Spark session takes to start, with and without the driver JVM's class-data-sharing
archive (:mod:`pipelines.spark.jvm_archive`), side by side.

    SPARK_LOCAL_IP=127.0.0.1 .venv/bin/python benchmarks/spark_start.py --repeats 5

Each run is a fresh Python process that builds the session every shardpiece job on a local master builds
(``build_session("local[2]", small_driver=True, single_worker=True)``) and then runs a first SQL query
(``spark.range(10).selectExpr("sum(id)")``), and reports: the session's start seconds, the first query's seconds,
and the driver JVM's CPU seconds until then. Systems, in turn (``a, b, a, b, ...``):

* ``without archive``: ``SHARDPIECE_JVM_ARCHIVE_DIR=off``;
* ``with archive``: an archive folder under ``--work``, filled by an untimed first run (and checked by a second,
  which promotes it) before the timed runs;
* ``writing the archive`` (once, before the others): the first run into an empty folder, which starts the JVM in
  its dumping mode.

Prints a table (best and median of each) and writes ``benchmarks/results/spark-start.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

import common

PROBE = r"""
import json, os, time
import psutil
started = time.perf_counter()
from pipelines.spark.session import build_session
spark = build_session("local[2]", app_name="shardpiece-bench-start", small_driver=True, single_worker=True)
session = time.perf_counter() - started
started = time.perf_counter()
spark.range(10).selectExpr("sum(id)").collect()
query = time.perf_counter() - started
jvm = sum(sum(c.cpu_times()[:2]) for c in psutil.Process().children(recursive=True) if "java" in c.name())
print(json.dumps({"session_s": session, "first_query_s": query, "jvm_cpu_s": jvm}))
"""


def probe(archive_dir: str) -> dict:
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SHARDPIECE_JVM_ARCHIVE_DIR": archive_dir}
    done = subprocess.run([common.PYTHON, "-c", PROBE], env=env, cwd=common.REPO, capture_output=True, text=True,
                          timeout=600, check=False)
    if done.returncode != 0:
        sys.exit(f"the session probe failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def wait_for_archive(directory: str, seconds: float = 120.0) -> None:
    """Wait until no process names a part file of ``directory`` (the JVM that writes one has exited)."""
    import time

    from pipelines.spark.jvm_archive import _running_command_lines

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(directory.encode() in line and b"ArchiveClassesAtExit" in line for line in _running_command_lines()):
            return
        time.sleep(0.5)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--work", default=common.DEFAULT_WORK)
    args = parser.parse_args(argv)

    print(f"# Spark session start; {common.load_text()}", flush=True)
    archive_dir = os.path.join(args.work, "jvm-archive-bench")
    shutil.rmtree(archive_dir, ignore_errors=True)
    writing = probe(archive_dir)  # the first run: dumps the archive when its JVM exits
    wait_for_archive(archive_dir)
    probe(archive_dir)  # checks and promotes it (untimed)
    archives = [name for name in os.listdir(archive_dir) if name.endswith(".jsa")]
    if not archives:
        sys.exit(f"no archive was written in {archive_dir}")
    runs: dict[str, list[dict]] = {"without archive": [], "with archive": []}
    for _ in range(args.repeats):
        runs["without archive"].append(probe("off"))
        runs["with archive"].append(probe(archive_dir))
    rows = []
    for name, results in runs.items():
        row = [name]
        for key in ("session_s", "first_query_s", "jvm_cpu_s"):
            values = [r[key] for r in results]
            row += [min(values), statistics.median(values)]
        rows.append(row)
    rows.append(["writing the archive (first run, once)", writing["session_s"], writing["session_s"],
                 writing["first_query_s"], writing["first_query_s"], writing["jvm_cpu_s"], writing["jvm_cpu_s"]])
    table = common.markdown_table(["system", "session s (best)", "session s (median)", "first query s (best)",
                                   "first query s (median)", "JVM CPU s (best)", "JVM CPU s (median)"], rows)
    print()
    print(table)
    best = {name: min(r["session_s"] for r in results) for name, results in runs.items()}
    print(f"\nsession start with / without the archive (best): {best['with archive'] / best['without archive']:.2f}")
    print(common.load_text())
    path = common.write_results("spark-start", {"runs": runs, "writing_run": writing, "table": table,
                                              "archive_bytes": os.path.getsize(os.path.join(archive_dir, archives[0])),
                                              "load_after": common.load_average()})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
