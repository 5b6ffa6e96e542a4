"""End-to-end throughput of ``shardpiece tokenize`` on Spark local[2], against the one-thread encoder and a plain
Python loop calling sentencepiece over the same rows.

    .venv/bin/python benchmarks/tokenize_job.py                  # en.train.txt, every line one document
    .venv/bin/python benchmarks/tokenize_job.py --rows 200000    # a quicker run on the first rows
    .venv/bin/python benchmarks/tokenize_job.py --slice /work/corpora/kernel-256m.txt --tables-only
        # the Delta table against the Parquet files only, on build-large.sh's 256 MiB kernel slice

What is measured (best of ``--repeats``; the machine's load is printed and stored, since other work on a shared
2-core machine slows every system):

* ``encoder, 1 thread``: ``Tokenizer.encode_batch(pyarrow string array, num_threads=1)`` over all rows in memory.
* ``encoder, 2 threads`` (context, not a target): the same with ``num_threads=2``: what the two cores give the
  encoder alone, the ceiling for a job on them.
* ``sentencepiece loop``: ``[sp.encode(row) for row in rows]`` with the same model (sentencepiece's own file).
* ``spark delta table->parquet`` (target: at least 90% of the Parquet input's MB/s): the same rows as a Delta
  table (one append per Parquet file, the same row groups), ``--input-format delta``.
* ``spark text->parquet`` (not a target): the same rows as ``--files`` plain text files, one document per line,
  read by pyarrow in the tasks; no kept column.
* ``shardpiece tokenize command`` (not a target; ``--no-command-line`` skips it): the job as a scheduler runs it,
  its own process: Python and JVM start (from the class-data-sharing archive, written by an untimed first run),
  Parquet->Parquet, exit. Its CPU counts the whole tree.
* ``tasks' work in one process`` (context, not a target): the job's task function (``encode_task`` over
  ``read_work_units``: read the Parquet row groups, check the rows, encode, write the shard, count) over every
  row in this process, one thread, no Spark, for Parquet and Megatron output. Twice its speed is what a job on two
  cores could reach if Spark cost nothing and the two cores added up perfectly: its ratio to the one-thread
  encoder is the ceiling of the first target's ratio on this machine.
* ``spark parquet->parquet (CODEC)`` (context, not targets; ``--codecs``, default snappy lz4 none): the
  Parquet->Parquet job with ``parquet_compression: CODEC`` instead of the default zstd; the table's last column
  gives the output's size.
* ``spark parquet->parquet`` and ``spark parquet->megatron``: ``run_tokenize`` on local[2] reading the rows from
  Parquet files (written once from the corpus) and committing shards; seconds from the job's start (listing,
  reading, encoding, writing, commit) to the complete manifest. A warm-up job first starts the Python workers and loads the
  Numba cache, which a long job pays once. The Parquet files are read by pyarrow in the Python tasks (the job's
  default ``reader: auto``); the session is ``build_session(..., small_driver=True)`` (serial GC and C1-only JIT
  for the local driver JVM, which then only schedules tasks: 0.24-0.34 JVM CPU s per 200,000-row job instead of
  0.59-1.13 s with Spark's defaults, measured here).

The machine is shared, so wall-clock ratios swing with other work; the script also records the CPU seconds of
each system's whole process tree (for Spark: driver, JVM, Python daemon and workers). ``encoder CPU / job CPU`` is
the load-independent form of the first target: with both cores busy, a job whose CPU is at most 1/0.7 of the
one-thread encoder's reaches 70% of twice its throughput.

``--slice FILE`` takes the rows from FILE (one document per line; ``corpora/build-large.sh``'s kernel slices)
instead of ``--corpus``'s train split (whose model is still used); ``--tables-only`` times only the two jobs of the
table target (``spark parquet->parquet`` and ``spark delta table->parquet``, interleaved) and prints them (the
results file stays the full run's).

The model is a SentencePiece unigram model trained with the lossless settings (identity normalizer, byte fallback,
no whitespace changes) on the first 14 MB of en.train, loaded by both sides. Targets: Parquet->Parquet on local[2]
at least 70% of twice the one-thread encoder, and at least 3x the sentencepiece loop. Results go to
``benchmarks/results/tokenize-job.json``.
"""

from __future__ import annotations

import common  # first: it puts the repository on sys.path

import argparse  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402

class TreeCpu:
    """CPU seconds (user + system) spent by this process and all its descendants (the Spark JVM, the Python daemon
    and workers) between ``start`` and ``stop``: the tree is sampled every ``interval`` seconds and each process
    counts from its first to its last sample (from zero if it started during the run), so workers that exit
    mid-run still count (up to their last sample)."""

    def __init__(self, interval: float = 0.2):
        import threading

        self.interval, self.stop_event = interval, threading.Event()
        self.baseline: dict = {}
        self.last: dict = {}
        self.thread = threading.Thread(target=self._loop, daemon=True)

    @staticmethod
    def _sample() -> dict:
        import psutil

        root = psutil.Process()
        values = {}
        for process in [root] + root.children(recursive=True):
            try:
                times = process.cpu_times()
                values[(process.pid, process.create_time())] = times.user + times.system
            except psutil.Error:
                continue
        return values

    def _loop(self) -> None:
        while not self.stop_event.wait(self.interval):
            self.last.update(self._sample())

    def start(self) -> "TreeCpu":
        self.baseline = self._sample()
        self.last = dict(self.baseline)
        self.thread.start()
        return self

    def stop(self) -> float:
        self.stop_event.set()
        self.thread.join()
        self.last.update(self._sample())
        return sum(value - self.baseline.get(key, 0.0) for key, value in self.last.items())


def cpu_measured(function):
    """Wrap ``function`` so that each call records its process-tree CPU seconds in ``wrapper.cpu`` (best = min)."""
    def wrapper():
        meter = TreeCpu().start()
        try:
            return function()
        finally:
            wrapper.cpu = min(wrapper.cpu, meter.stop())
    wrapper.cpu = float("inf")
    return wrapper


def _lake(lines: list[str], directory: str, files: int, write_part) -> str:
    """``directory`` holding ``lines`` cut into ``files`` parts, each written by ``write_part(i, first_row, rows)``
    (written once: a marker names the row and file counts)."""
    marker = os.path.join(directory, f".complete-{len(lines)}-{files}")
    if not os.path.exists(marker):
        shutil.rmtree(directory, ignore_errors=True)
        os.makedirs(directory)
        per_file = -(-len(lines) // files)
        for i in range(files):
            write_part(i, i * per_file, lines[i * per_file:(i + 1) * per_file])
        open(marker, "w").close()
    return directory


def parquet_lake(lines: list[str], directory: str, files: int) -> str:
    """The rows as ``files`` Parquet files with an ``id`` (int64, the row number) and a ``text`` column."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    def write_part(i: int, first_row: int, rows: list[str]) -> None:
        pq.write_table(pa.table({"id": pa.array(range(first_row, first_row + len(rows)), pa.int64()),
                                 "text": pa.array(rows, pa.string())}),
                       os.path.join(directory, f"part-{i:03d}.parquet"), row_group_size=20_000)

    return _lake(lines, directory, files, write_part)


def delta_lake(lines: list[str], directory: str, files: int) -> str:
    """The rows of :func:`parquet_lake` as a Delta table: one append (one data file of 20,000-row row groups) per
    part, so its files and row groups are the Parquet input's."""
    import pyarrow as pa
    from deltalake import WriterProperties, write_deltalake

    def write_part(i: int, first_row: int, rows: list[str]) -> None:
        write_deltalake(directory, pa.table({"id": pa.array(range(first_row, first_row + len(rows)), pa.int64()),
                                             "text": pa.array(rows, pa.string())}),
                        mode="append", writer_properties=WriterProperties(max_row_group_size=20_000))

    return _lake(lines, directory, files, write_part)


def text_lake(lines: list[str], directory: str, files: int) -> str:
    """The rows as ``files`` plain text files, one document per line (the text input of the job)."""
    def write_part(i: int, first_row: int, rows: list[str]) -> None:
        with open(os.path.join(directory, f"part-{i:03d}.txt"), "w", encoding="utf-8", newline="\n") as handle:
            handle.write("".join(row + "\n" for row in rows))

    return _lake(lines, directory, files, write_part)


def tasks_work_in_one_process(model_path: str, lake: str, output_format: str, keep_columns: list[str],
                              directory: str):
    """A callable running the tokenize job's task function over every row of the Parquet files in ``lake`` in this
    process (one task, one thread, no Spark), writing one ``output_format`` shard under ``directory`` (removed
    after each call); it returns the task's counts."""
    import hashlib
    import itertools

    from pipelines.read.arrow_read import plan_parquet, read_work_units
    from pipelines.tokenize import MALFORMED, TEXT, TokenizeConfig, encode_task, task_options

    files = sorted(os.path.join(lake, name) for name in os.listdir(lake) if name.endswith(".parquet"))
    plan, keep_schema, reason = plan_parquet([(path, os.path.getsize(path)) for path in files], "text",
                                             keep_columns, None)
    assert plan is not None, reason
    options = task_options(TokenizeConfig(model=model_path, inputs=[lake], output=directory,
                                          output_format=output_format, keep_columns=keep_columns))
    with open(model_path, "rb") as handle:
        model_bytes = handle.read()
    sha256 = hashlib.sha256(model_bytes).hexdigest()
    attempts = itertools.count()

    def run() -> dict:
        os.makedirs(directory, exist_ok=True)
        try:
            return encode_task(read_work_units(plan.units, "text", keep_schema, TEXT, MALFORMED), partition=0,
                               attempt=next(attempts), model=model_bytes, model_sha256=sha256, output=directory,
                               run_id="bench", config=options, empty_schema=keep_schema if keep_columns else None)
        finally:
            shutil.rmtree(directory, ignore_errors=True)
    return run


def output_megabytes(out_root: str, name: str) -> float:
    """Size of the committed shards of the job output ``out_root/name`` (MB = 10**6 bytes)."""
    directory = os.path.join(out_root, name)
    return sum(os.path.getsize(os.path.join(directory, entry)) for entry in os.listdir(directory)
               if not entry.startswith("_")) / 1e6


def compare_tables(args, model_path: str, lake: str, delta: str, warm: str, rows: int, total_bytes: int,
                   load_before) -> int:
    """``--tables-only``: the Parquet files' job and the Delta table's (the same rows, files and row groups),
    interleaved, best of ``--repeats``; prints their table, the ratio and the load, and writes the run to
    ``tokenize-job.json`` under :func:`results_key`."""
    from pipelines.spark.session import build_session
    from pipelines.tokenize import TokenizeConfig, run_tokenize

    spark = build_session("local[2]", app_name="shardpiece-bench-tokenize", driver_memory="4g", small_driver=True)
    out_root = os.path.join(args.work, "tokenize-out")
    summaries: dict[str, dict] = {}

    def job(name: str, source: str, input_format: str | None):
        def run():
            summary = run_tokenize(spark, TokenizeConfig(
                model=model_path, inputs=[source], input_format=input_format, output=os.path.join(out_root, name),
                keep_columns=["id"], mode="overwrite", progress_seconds=60))
            assert name == "warm" or summary["documents"] == rows, "lost or doubled documents"
            if summary["seconds"] < summaries.get(name, {}).get("seconds", float("inf")):
                summaries[name] = summary
        return run

    job("warm", warm, None)()  # Python workers started, the Numba cache loaded
    systems = {"parquet": cpu_measured(job("parquet", lake, None)),
               "delta": cpu_measured(job("delta", delta, "delta"))}
    best = common.interleaved_best(systems, args.repeats)
    spark.stop()
    mb = total_bytes / 1e6
    runs = {name: {"seconds": summaries[name]["seconds"], "wall_seconds": best[name],
                   "cpu_seconds": systems[name].cpu, "mb_per_s": mb / summaries[name]["seconds"],
                   "partitions": summaries[name]["partitions"]} for name in systems}
    ratio = runs["delta"]["mb_per_s"] / runs["parquet"]["mb_per_s"]
    table = common.markdown_table(["system", "seconds", "MB/s", "CPU s"], [
        [label, runs[name]["seconds"], runs[name]["mb_per_s"], runs[name]["cpu_seconds"]]
        for name, label in (("parquet", "spark local[2] parquet->parquet"),
                            ("delta", "spark local[2] delta table->parquet"))])
    target = {"target": "delta table->parquet >= 90% of the Parquet files' MB/s (the same rows, files and row groups)",
              "value": ratio, "needed": 0.9, "met": ratio >= 0.9}
    print()
    print(table)
    print(f"- {target['target']}: {ratio:.2f} (needed 0.9) {'met' if target['met'] else 'NOT met'}")
    print(common.load_text())
    path = common.write_results("tokenize-job", {
        "rows_from": args.slice or f"{args.corpus}.train", "rows": rows, "bytes": total_bytes,
        "model": os.path.basename(model_path), "repeats": args.repeats, "spark": runs, "targets": [target],
        "table": table, "load_before": load_before, "load_after": common.load_average(),
    }, key=results_key(args))
    print(f"wrote {path}")
    return 0


def results_key(args) -> str:
    """The run's key in ``tokenize-job.json``: ``"full en"`` for the whole comparison on en.train, ``"tables
    kernel-256m"`` for ``--tables-only --slice .../kernel-256m.txt``."""
    rows_from = os.path.splitext(os.path.basename(args.slice))[0] if args.slice else args.corpus
    return f"{'tables' if args.tables_only else 'full'} {rows_from}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default="en", choices=common.CORPORA)
    parser.add_argument("--corpora", default=common.DEFAULT_CORPORA)
    parser.add_argument("--work", default=common.DEFAULT_WORK, help="models, Parquet input, outputs")
    parser.add_argument("--vocab-size", type=int, default=32000)
    parser.add_argument("--sp-train-bytes", type=int, default=common.DEFAULT_TRAIN_BYTES)
    parser.add_argument("--rows", type=int, default=0, help="use only the first N lines (default: all)")
    parser.add_argument("--files", type=int, default=8, help="Parquet files the rows are written to")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--codecs", nargs="*", default=["snappy", "lz4", "none"],
                        help="other Parquet codecs to time the Parquet->Parquet job with (context rows)")
    parser.add_argument("--slice", metavar="FILE", help="rows from FILE (one document per line, e.g. a kernel "
                        "slice of corpora/build-large.sh) instead of the corpus's train split")
    parser.add_argument("--tables-only", action="store_true",
                        help="time only the Parquet files' and the Delta table's jobs (the table target)")
    parser.add_argument("--no-command-line", dest="command_line", action="store_false",
                        help="skip timing the `shardpiece tokenize` command as its own process")
    args = parser.parse_args(argv)

    import pyarrow as pa
    import sentencepiece as spm

    from pipelines.spark.session import build_session
    from pipelines.tokenize import TokenizeConfig, run_tokenize
    from tokenizer import Tokenizer

    rows_name = os.path.basename(args.slice).rsplit(".", 1)[0] if args.slice else args.corpus
    lines = common.read_lines(args.slice or common.corpus_path(args.corpora, args.corpus, "train"))
    if args.rows:
        lines = lines[:args.rows]
    total_bytes = sum(len(line.encode()) for line in lines)
    print(f"{args.slice or args.corpus + '.train'}: {len(lines):,} rows, {total_bytes / 1e6:.1f} MB; "
          f"{common.load_text()}", flush=True)
    load_before = common.load_average()
    model_path = common.lossless_sentencepiece_model(args)
    lake = parquet_lake(lines, os.path.join(args.work, f"tokenize-{rows_name}-{len(lines)}-parquet"), args.files)
    delta = delta_lake(lines, os.path.join(args.work, f"tokenize-{rows_name}-{len(lines)}-delta"), args.files)
    warm = os.path.join(args.work, "tokenize-warmup.parquet")
    parquet_lake(lines[:20_000], warm, 2)
    if args.tables_only:
        return compare_tables(args, model_path, lake, delta, warm, len(lines), total_bytes, load_before)
    texts = text_lake(lines, os.path.join(args.work, f"tokenize-{rows_name}-{len(lines)}-text"), args.files)

    tokenizer = Tokenizer.load(model_path)
    array = pa.array(lines, pa.string())
    tokenizer.encode_batch(array[:1000], num_threads=1)  # compile / load the Numba cache
    processor = spm.SentencePieceProcessor(model_file=model_path)
    sample = lines[:2000]
    ours = tokenizer.encode_batch(sample, num_threads=1)
    same_ids = sum(a == b for a, b in zip(ours, processor.encode(sample)))
    print(f"identical ids to sentencepiece on {same_ids}/{len(sample)} sample rows", flush=True)

    # The job's own session (jobs/tokenize.py): small_driver (serial GC and C1-only JIT for the driver JVM, which on
    # the Parquet read path only schedules tasks), a 4g heap ceiling, one reused Python worker per core.
    spark = build_session("local[2]", app_name="shardpiece-bench-tokenize", driver_memory="4g", small_driver=True)
    out_root = os.path.join(args.work, "tokenize-out")
    run_tokenize(spark, TokenizeConfig(model=model_path, inputs=[warm], output=os.path.join(out_root, "warm"),
                                       mode="overwrite", progress_seconds=60))

    def encoder():
        return tokenizer.encode_batch(array, num_threads=1)

    def encoder_two_threads():
        return tokenizer.encode_batch(array, num_threads=2)

    def spm_loop():
        return [processor.encode(line) for line in lines]

    summaries: dict[str, dict] = {}

    def spark_job(output_format: str, name: str, source: str = "parquet", codec: str = "zstd"):
        def run():
            summary = run_tokenize(spark, TokenizeConfig(
                model=model_path, inputs=[{"parquet": lake, "text": texts, "delta": delta}[source]],
                input_format="delta" if source == "delta" else None,
                output=os.path.join(out_root, name), output_format=output_format,
                keep_columns=["id"] if output_format == "parquet" and source != "text" else [],
                parquet_compression=codec, mode="overwrite", progress_seconds=60))
            if summary["seconds"] < summaries.get(name, {}).get("seconds", float("inf")):
                summaries[name] = summary
        return run

    def command_line():
        """The scheduled-job view: ``shardpiece tokenize`` as its own process, JVM start and exit included."""
        import subprocess

        subprocess.run([sys.executable, "-m", "jobs.cli", "tokenize", "--model", model_path, "--input", lake,
                        "--output", os.path.join(out_root, "cli"), "--keep-columns", "id", "--mode", "overwrite",
                        "--master", "local[2]"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
                       cwd=common.REPO)

    tasks_work = {fmt: tasks_work_in_one_process(model_path, lake, fmt, ["id"] if fmt == "parquet" else [],
                                                 os.path.join(args.work, f"tokenize-one-process-{fmt}"))
                  for fmt in ("parquet", "megatron")}
    tokens = len(encoder().values)
    for fmt, run in tasks_work.items():
        counts = run()
        assert counts["documents"] == len(lines) and counts["tokens"] == tokens, "lost or changed documents"
    # Interleaved (encoder, loop, job, job, encoder, ...) so that load changes on a shared machine hit all alike.
    systems = {"encoder": cpu_measured(encoder), "encoder2": cpu_measured(encoder_two_threads),
               "sentencepiece": cpu_measured(spm_loop),
               "tasks_parquet": cpu_measured(tasks_work["parquet"]),
               "tasks_megatron": cpu_measured(tasks_work["megatron"]),
               "parquet": cpu_measured(spark_job("parquet", "parquet")),
               "megatron": cpu_measured(spark_job("megatron", "megatron")),
               "text": cpu_measured(spark_job("parquet", "text", source="text")),
               "delta": cpu_measured(spark_job("parquet", "delta", source="delta")),
               **{f"parquet_{codec}": cpu_measured(spark_job("parquet", f"parquet_{codec}", codec=codec))
                  for codec in args.codecs}}
    if args.command_line:
        command_line()  # the first run may write the driver JVM's class-data-sharing archive
        systems["cli"] = cpu_measured(command_line)
    best = common.interleaved_best(systems, args.repeats)
    cpu = {name: function.cpu for name, function in systems.items()}
    spark.stop()
    one_thread_s, spm_s, two_threads_s = best["encoder"], best["sentencepiece"], best["encoder2"]
    spark_runs = {}
    for name in ("parquet", "megatron", "text", "delta", *(f"parquet_{codec}" for codec in args.codecs)):
        summary = summaries[name]
        assert summary["documents"] == len(lines) and summary["tokens"] == tokens, "lost or changed documents"
        spark_runs[name] = {"seconds": summary["seconds"], "wall_seconds": best[name],
                            "cpu_seconds": cpu[name], "partitions": summary["partitions"],
                            "encode_seconds_total": summary["encode_seconds_total"],
                            "reader": summary.get("reader"), "output_mb": output_megabytes(out_root, name)}

    mb = total_bytes / 1e6
    one_thread = mb / one_thread_s
    spm_rate = mb / spm_s
    rows = [["encoder, 1 thread (in memory)", one_thread_s, one_thread, 1.0, one_thread / spm_rate,
             cpu["encoder"], 1.0],
            ["encoder, 2 threads (in memory)", two_threads_s, mb / two_threads_s, one_thread_s / two_threads_s,
             one_thread_s / two_threads_s * one_thread / spm_rate, cpu["encoder2"], cpu["encoder"] / cpu["encoder2"]],
            ["sentencepiece loop, 1 thread (in memory)", spm_s, spm_rate, spm_rate / one_thread, 1.0,
             cpu["sentencepiece"], cpu["encoder"] / cpu["sentencepiece"]]]
    for row in rows:
        row.append("")
    one_process = {}
    for fmt in ("parquet", "megatron"):
        seconds = best[f"tasks_{fmt}"]
        one_process[fmt] = {"seconds": seconds, "cpu_seconds": cpu[f"tasks_{fmt}"], "mb_per_s": mb / seconds,
                            "x_encoder": one_thread_s / seconds}
        rows.append([f"tasks' work in one process, 1 thread, no Spark (parquet->{fmt})", seconds, mb / seconds,
                     one_thread_s / seconds, mb / seconds / spm_rate, cpu[f"tasks_{fmt}"],
                     cpu["encoder"] / cpu[f"tasks_{fmt}"], ""])
    labels = {"parquet": "spark local[2] parquet->parquet", "megatron": "spark local[2] parquet->megatron",
              "text": "spark local[2] text->parquet", "delta": "spark local[2] delta table->parquet",
              **{f"parquet_{codec}": f"spark local[2] parquet->parquet ({codec})" for codec in args.codecs}}
    for name, run in spark_runs.items():
        rate = mb / run["seconds"]
        run["mb_per_s"] = rate
        run["cpu_efficiency"] = cpu["encoder"] / run["cpu_seconds"]
        rows.append([labels[name], run["seconds"], rate, rate / one_thread, rate / spm_rate, run["cpu_seconds"],
                     run["cpu_efficiency"], run["output_mb"]])
    if "cli" in best:
        rate = mb / best["cli"]
        spark_runs["cli"] = {"wall_seconds": best["cli"], "cpu_seconds": cpu["cli"], "mb_per_s": rate}
        rows.append(["shardpiece tokenize command (parquet->parquet, JVM start and exit included)", best["cli"], rate,
                     rate / one_thread, rate / spm_rate, cpu["cli"], cpu["encoder"] / cpu["cli"], ""])
    table = common.markdown_table(["system", "seconds", "MB/s", "x encoder 1 thread", "x sentencepiece loop",
                                   "CPU s", "encoder CPU / CPU", "output MB"], rows)
    pq_rate = spark_runs["parquet"]["mb_per_s"]
    targets = [
        {"target": "parquet->parquet >= 70% of 2 x one-thread encoder", "value": pq_rate / (2 * one_thread),
         "needed": 0.7, "met": pq_rate >= 0.7 * 2 * one_thread},
        {"target": "parquet->parquet >= 3x sentencepiece loop", "value": pq_rate / spm_rate, "needed": 3.0,
         "met": pq_rate >= 3 * spm_rate},
        {"target": "delta table->parquet >= 90% of the Parquet files' MB/s (the same rows, files and row groups)",
         "value": spark_runs["delta"]["mb_per_s"] / pq_rate, "needed": 0.9,
         "met": spark_runs["delta"]["mb_per_s"] >= 0.9 * pq_rate},
        # Context, not a target: the job against the encoder's own two threads on the same rows in memory (what
        # this machine's two cores give the encoder alone).
        {"target": "context: parquet->parquet / encoder with 2 threads in memory", "value": pq_rate * two_threads_s / mb,
         "needed": 0.0, "met": True},
        # Context, not a target: the first target's ratio if Spark cost nothing and two cores gave exactly twice
        # one: the tasks' own work (read, check, encode, write) in one process against the encoder alone.
        {"target": "context: ceiling of the first target (tasks' work in one process / encoder, parquet output)",
         "value": one_process["parquet"]["x_encoder"], "needed": 0.0, "met": True},
        # Load-independent view of the first target: with both cores busy, the job reaches 70% of 2x one thread
        # when its whole process tree (JVM, Python workers, driver) spends at most 1/0.7 of the encoder's CPU.
        {"target": "parquet->parquet CPU efficiency (encoder CPU / job CPU) >= 0.7",
         "value": spark_runs["parquet"]["cpu_efficiency"], "needed": 0.7,
         "met": spark_runs["parquet"]["cpu_efficiency"] >= 0.7},
    ]
    print()
    print(table)
    for target in targets:
        print(f"- {target['target']}: {target['value']:.2f} (needed {target['needed']}) "
              f"{'met' if target['met'] else 'NOT met'}")
    print(common.load_text())
    path = common.write_results("tokenize-job", {
        "corpus": args.corpus, "rows": len(lines), "bytes": total_bytes, "tokens": tokens,
        "model": os.path.basename(model_path), "identical_ids_sample": [same_ids, len(sample)],
        "one_thread_s": one_thread_s, "two_threads_s": two_threads_s, "sentencepiece_loop_s": spm_s, "cpu_seconds": cpu, "spark": spark_runs,
        "tasks_work_one_process": one_process,
        "load_before": load_before, "session": "local[2], small_driver (serial GC, C1 only), driver memory 4g, Python workers reused",
        "targets": targets, "table": table, "load_after": common.load_average(),
    }, key=results_key(args))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
