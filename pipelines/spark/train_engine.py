"""Training on Spark: the engine of :mod:`pipelines.train.engine` on a SparkSession (a local master, a
standalone cluster, anything ``--master`` names).

Reading: local text and Parquet files on a local master are read by pyarrow inside the tasks when the algorithm
counts them in one pass (:mod:`pipelines.spark.direct_count`), anything else by Spark's readers
(:mod:`pipelines.read.readers`), persisted, the held-out documents split off by Spark's ``xxhash64``
(:func:`split_holdout`). Counting: the one reduce of :mod:`pipelines.spark.reduce`. ``map_aside`` and
``map_documents`` run their function in ``mapInArrow`` tasks, one pickled result per partition; ``share`` is a
broadcast.

Example::

    engine = SparkEngine({"master": "local[2]", "input": ["corpus.txt"], ...}, "--master local[2]")
    engine.read(direct=False, log=log)
    reduced = engine.count(counter, "bytes", limit=10_000_000)
"""

from __future__ import annotations

import pickle
import sys
import time
from typing import Any, Callable, Iterator

from pipelines.spark import reduce
from pipelines.train.bad_rows import TrainBadRows, check_bad_rows
from pipelines.train.engine import READ_COUNTS
from pipelines.train.workdir import JSON
from pipelines.train.tables import Counter, KeyGroups, Reduced, decode

COUNT_SPLIT_BYTES = 32 << 20  # input split of a local single-worker session (its default is 4 MB)
EVAL_BYTES = 8 << 20  # text the driver collects for the evaluation sample (document prefixes beyond it are cut)


def counting_session_options(master: str | None) -> dict[str, str]:
    """Spark options (``build_session(extra=...)``) of every training job's session.

    Every master: adaptive execution may coalesce the reduce partitions of a persisted (cached) query
    (``spark.sql.optimizer.canChangeCachedPlanOutputPartitioning``; Spark's default keeps the 200 shuffle
    partitions of the cached chunk table, 200 tiny tasks that took seconds more on en here). A local master (the
    lean ``small_driver`` + ``single_worker`` session) also keeps one Python worker for every task
    (``spark.python.worker.reuse``: a new worker per task pays the imports and kernel loading again, serially) and
    reads input splits of up to 32 MB: a partition's table is summed over more text before the shuffle (fewer
    keys shuffled per input byte), while counting holds a bounded amount per ~2 MB shard (BytePiece's n-grams
    about 30 bytes per text byte, chunks a few). Example:
    ``counting_session_options("local[2]")["spark.python.worker.reuse"]`` -> ``"true"``."""
    from pipelines.spark.session import is_local_master, session_config

    options = dict(reduce.CACHED_PLAN_OPTIONS)
    if is_local_master(session_config(master)["spark.master"]):
        options.update({"spark.python.worker.reuse": "true",
                        "spark.sql.files.maxPartitionBytes": str(COUNT_SPLIT_BYTES)})
    return options


def split_holdout(documents, fraction: float):
    """``(training, held_out or None)``: documents whose content hash falls in ``fraction`` are held out (the same
    documents on every run and for any partitioning; :func:`tokenizer.kernels.xxhash.held_out_documents` is the
    same rule without Spark)."""
    from pyspark.sql import functions as F

    from pipelines.read.shards import check_holdout_fraction
    from tokenizer.kernels.xxhash import HOLDOUT_BUCKETS, held_out_buckets

    check_holdout_fraction(fraction)
    if fraction <= 0:
        return documents, None
    bucket = F.pmod(F.xxhash64("text"), F.lit(HOLDOUT_BUCKETS)) < F.lit(held_out_buckets(fraction))
    return documents.where(~bucket), documents.where(bucket)


def evaluation_sample(training, held_out, limit: int) -> tuple[list[bytes], list[bytes]]:
    """``(held-out, training)`` documents, at most ``limit`` (and :data:`EVAL_BYTES` of text) each, so one huge line
    cannot flood the driver; the training ones only when nothing is held out."""
    from pyspark.sql import functions as F

    capped = F.expr(f"substring(text, 1, {EVAL_BYTES})").alias("text")
    sample = held_out.select(capped).limit(limit).collect() if held_out is not None else []
    if sample:
        return [bytes(row["text"]) for row in sample], []
    return [], [bytes(row["text"]) for row in training.select(capped).limit(limit).collect()]


def first_bad_file(corpus, kinds) -> str | None:
    """The path of a file of a read :class:`~pipelines.read.readers.Corpus` holding a bad row of one of ``kinds``
    (``"malformed"``, ``"invalid_utf8"``), asked of Spark (``_metadata.file_path``): the bad-row error names it when
    this process cannot open the files to find the line (:func:`pipelines.train.bad_rows.check_bad_rows`). ``None``
    when none is found (``.zst`` files, read through ``binaryFile``, are not searched)."""
    from pyspark.sql import functions as F

    from pipelines.read.readers import TEXT, _parse_jsonl

    spark, listed, column = corpus.raw.sparkSession, corpus.input_files, corpus.text_column
    if corpus.input_format == "parquet":
        frame = spark.read.parquet(*listed.files).select(
            F.col(column).cast("binary").alias(TEXT), F.lit(False).alias("malformed"),
            F.col("_metadata.file_path").alias("path"))
    elif listed.other_files:
        lines = spark.read.option("lineSep", "\n").text(listed.other_files).select(
            F.col("value").cast("binary").alias("line"), F.col("_metadata.file_path").alias("path"))
        frame = _parse_jsonl(lines, column, ("path",)) if corpus.input_format == "jsonl" else \
            lines.select(F.col("line").alias(TEXT), F.lit(False).alias("malformed"), "path")
    else:
        return None
    source = "line" if corpus.input_format == "jsonl" else f"cast({TEXT} as string)"
    bad = F.lit(False)
    if "malformed" in kinds:
        bad = bad | F.col("malformed")
    if "invalid_utf8" in kinds:
        bad = bad | (F.col(TEXT).isNotNull() & (F.length(TEXT) > 0) & ~F.expr(f"is_valid_utf8({source})"))
    found = frame.where(bad).select("path").limit(1).collect()
    return found[0]["path"] if found else None


def _results_partition(function: Callable, threads: int, tables_of: str | None) -> Callable:
    """``mapInArrow``: ``function(tables or batches, threads)`` over the partition -> one pickled ``result`` row."""

    def run(batches: Iterator) -> Iterator:
        import pyarrow as pa

        if tables_of is not None:
            items = (decode(tables_of, batch.column(1)[i].as_py()) for batch in batches
                     for i in range(batch.num_rows))
        else:
            items = batches
        result = function(items, threads)
        yield pa.RecordBatch.from_arrays([pa.array([pickle.dumps(result, protocol=5)], pa.binary())],
                                         names=["result"])

    return run


class SparkEngine:
    """Training's engine on a SparkSession it builds from the options (see the module docstring)."""

    name = "spark"

    def __init__(self, options: dict, reason: str, progress: Callable[[str], None] = lambda message: None):
        from pipelines.spark.session import build_session, task_threads

        started = time.perf_counter()
        self.options, self.reason, self.progress = options, reason, progress
        # a lean local driver JVM and one Python worker at a time using every local core through threads
        master = None if (options.get("master") or "auto").lower() == "auto" else options["master"]
        self.spark = build_session(master, app_name=f"shardpiece-train-{options['algorithm']}",
                                   driver_memory=options.get("driver_memory"),
                                   extra={**counting_session_options(master),
                                          **(options.get("spark") or {})},
                                   shuffle_partitions=options.get("partitions"), small_driver=True,
                                   single_worker=True, log_file=options.get("spark_log_file"))
        progress(f"[spark] session on {self.spark.sparkContext.master} in {time.perf_counter() - started:.1f} s")
        self.threads = max(1, int(options["threads"])) if options.get("threads") else task_threads(self.spark)
        self.documents = self.held_out = self.units = self.corpus = self.table = None
        self.bad_rows = TrainBadRows.of(options)

    @classmethod
    def over(cls, documents, threads: int | None = None, options: dict | None = None) -> "SparkEngine":
        """An engine over a DataFrame of documents (``text: binary``) already read in a running session (tests,
        notebooks): nothing held out, ``threads`` counting threads per task (default the session's)."""
        from pipelines.spark.session import task_threads

        engine = cls.__new__(cls)
        engine.options = {"holdout_fraction": 0.0, "text_column": "text", "reader": "spark", **(options or {})}
        engine.reason, engine.progress = "a DataFrame given", lambda message: None
        engine.spark = documents.sparkSession
        engine.threads = max(1, int(threads)) if threads else task_threads(engine.spark)
        engine.documents, engine.held_out, engine.units, engine.corpus = documents, None, None, None
        engine.table = None
        engine.bad_rows = TrainBadRows.of(engine.options)
        return engine

    # ------------------------------------------------------------------------------------------------ reading
    def fingerprint(self, inputs: list[str], hash_cache: str) -> dict:
        from pipelines.manifest import input_fingerprint

        return input_fingerprint(self.spark, inputs, hash_cache=hash_cache)

    def label(self, stage: str) -> None:
        """Name the Spark jobs of ``stage`` and show their progress while it runs (:mod:`pipelines.progress`)."""
        from pipelines.progress import SparkStageWatcher, StageProgress
        from pipelines.spark.session import describe_jobs

        group = describe_jobs(self.spark, stage)
        self._stop_watching()
        self._watcher = SparkStageWatcher(self.spark.sparkContext.statusTracker(), group,
                                          StageProgress(stage, self.progress, terminal=sys.stdout.isatty()))
        self._watcher.start()

    def _stop_watching(self) -> None:
        watcher, self._watcher = getattr(self, "_watcher", None), None
        if watcher is not None:
            watcher.stop()

    def read(self, direct: bool, log, table=None) -> tuple[dict, str, str | None]:
        """Read the input: ``(read counts, reader, input format)``; ``direct``: a one-pass count may read local
        files in its tasks (then nothing is read here and the counts are ``{}``). ``log``: the run's
        :class:`~pipelines.train.workdir.StageLog` (the counts are a stage of the work directory). ``table``: a
        :class:`~pipelines.train.table_input.TableInput` to read instead of the input files (by pyarrow in the
        tasks, on any master: Spark's readers know no table)."""
        options = self.options
        self.table = table
        if table is not None:
            return self._read_table(direct, log, table)
        if direct and options["reader"] == "auto" and not options.get("partitions"):
            from pipelines.spark.direct_count import direct_units

            self.units = direct_units(self.spark, options["input"], options.get("input_format"),
                                      options["text_column"])
            if self.units is not None:
                return {}, "pyarrow in the tasks", options.get("input_format")
        from pipelines.read.readers import read_corpus

        self.label("read")
        corpus = self.corpus = read_corpus(self.spark, options["input"], input_format=options.get("input_format"),
                                           text_column=options["text_column"], partitions=options.get("partitions"),
                                           bad_rows=self.bad_rows)

        def compute() -> dict:
            counts = corpus.compute_stats().to_dict()
            check_bad_rows(counts, self.bad_rows, corpus.input_files.files, corpus.input_format,
                           corpus.text_column, lambda kinds: first_bad_file(corpus, kinds))
            return counts

        counts = log.run("read", compute, JSON, lambda value: {k: value[k] for k in READ_COUNTS})
        self.documents, self.held_out = split_holdout(corpus.documents, float(options["holdout_fraction"]))
        return counts, "spark", corpus.input_format

    def _read_table(self, direct: bool, log, table) -> tuple[dict, str, str | None]:
        """:meth:`read` of a table: its units counted in the tasks (``direct``, no ``--partitions``), else a
        persisted corpus of its documents (:func:`pipelines.spark.direct_count.table_corpus`)."""
        from pipelines.spark.direct_count import table_corpus

        if direct and not self.options.get("partitions"):
            self.units = table.units
            return {}, "pyarrow in the tasks", table.snapshot.kind
        self.label("read")
        corpus = self.corpus = table_corpus(self.spark, table, self.options.get("partitions"), self.bad_rows)

        def compute() -> dict:
            counts = corpus.compute_stats().to_dict()
            check_bad_rows(counts, self.bad_rows, table.paths, "parquet", table.text_column)
            table.check_selected(counts["documents"])
            return counts

        counts = log.run("read", compute, JSON, lambda value: {k: value[k] for k in READ_COUNTS})
        self.documents, self.held_out = split_holdout(corpus.documents, float(self.options["holdout_fraction"]))
        return counts, "pyarrow in the tasks", table.snapshot.kind

    # ------------------------------------------------------------------------------------------------ counting
    def count(self, counter: Counter, kind: str, *, keep: Callable | None = None, groups: KeyGroups | None = None,
              limit: int | None = None, set_aside: bool = False, keep_documents: int = 0) -> Reduced:
        """See :mod:`pipelines.train.engine`; a set-aside part stays in Spark (``reduced.aside``, a persisted
        DataFrame) until :meth:`release`."""
        from pyspark import StorageLevel

        if self.units is not None:
            from pipelines.spark.direct_count import count_chunks_direct

            if keep is not None or groups is not None or set_aside:
                raise ValueError("a count over files read in the tasks takes no keep, groups or set_aside")
            reduced = count_chunks_direct(self.spark, self.units, counter, float(self.options["holdout_fraction"]),
                                          threads=self.threads, keep_documents=keep_documents,
                                          text_column=self.options["text_column"], limit=limit,
                                          bad_rows=self.bad_rows)
            table = self.table
            if table is not None:
                check_bad_rows(reduced.stats, self.bad_rows, table.paths, "parquet", table.text_column)
                table.check_selected(int(reduced.stats.get("documents", 0)))
            elif self.bad_rows.policy == "error" and self.bad_rows.bad_counts(reduced.stats):
                from pipelines.read.readers import detect_format, list_input_files

                listed = list_input_files(self.spark, self.options["input"])
                input_format = self.options.get("input_format") or detect_format(listed.files + listed.empty_files)
                check_bad_rows(reduced.stats, self.bad_rows, listed.files, input_format, self.options["text_column"])
            return reduced
        frame = reduce.reduced_frame(self.documents, counter, kind, keep, self.threads, set_aside, groups)
        if set_aside:
            frame = frame.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            reduced = reduce.bounded_collect(frame, kind, limit)
        except BaseException:
            frame.unpersist()
            raise
        if set_aside:
            reduced.aside = frame
        if keep_documents:
            reduced.held_out, reduced.training = evaluation_sample(self.documents, self.held_out, keep_documents)
        return reduced

    def release(self, reduced: Reduced) -> None:
        """Free what :meth:`count` left in Spark for :meth:`map_aside`."""
        if reduced.aside is not None:
            reduced.aside.unpersist()
            reduced.aside = None

    def map_aside(self, reduced: Reduced, kind: str, function: Callable[[Iterator, int], Any]) -> list:
        frame = reduced.aside.where(reduced.aside["bucket"] == reduce.SET_ASIDE_BUCKET)
        return self._results(frame.mapInArrow(_results_partition(function, self.threads, kind), "result binary"))

    def map_documents(self, function: Callable[[Iterator, int], Any]) -> list:
        return self._results(self.documents.mapInArrow(_results_partition(function, self.threads, None),
                                                       "result binary"))

    @staticmethod
    def _results(frame) -> list:
        blobs = sorted(bytes(row["result"]) for row in frame.collect())  # a fixed order for float sums
        return [pickle.loads(blob) for blob in blobs]

    def share(self, value: Any):
        return self.spark.sparkContext.broadcast(value)

    def estep_runner(self, table, estep: str):
        """``(runner or None, mode)`` of unigram's E-steps (:func:`pipelines.spark.estep.estep_mode`); the runner
        holds a persisted frame until :meth:`close`."""
        from pipelines.spark import estep as E

        mode = E.estep_mode(estep, table)
        if mode != "spark":
            return None, mode
        frame = E.table_frame(self.spark, table, self.options.get("partitions"))
        self._frames = getattr(self, "_frames", []) + [frame]
        return E.spark_runner(frame), mode

    def driver_threads(self) -> int:
        """Threads of E-steps on the driver: the local master's cores, 1 on a cluster master."""
        from pipelines.spark.estep import driver_threads

        return int(self.options.get("threads") or driver_threads(self.spark.sparkContext.master))

    def evaluation_sample(self, limit: int) -> tuple[list[bytes], list[bytes]]:
        if self.documents is None:
            return [], []
        self.label("evaluate")
        return evaluation_sample(self.documents, self.held_out, limit)

    # ------------------------------------------------------------------------------------------------ the run
    def describe(self) -> dict:
        from pipelines.manifest import versions
        from pipelines.spark.session import spark_log_file

        context = self.spark.sparkContext
        return {"engine": self.name, "engine_reason": self.reason, "spark_version": self.spark.version,
                "spark_master": context.master, "default_parallelism": context.defaultParallelism,
                "threads": self.threads, "spark_log": spark_log_file(), "versions": versions(self.spark)}

    def close(self) -> None:
        self._stop_watching()
        for frame in getattr(self, "_frames", []):
            frame.unpersist()
        if self.corpus is not None:
            self.corpus.raw.unpersist()

