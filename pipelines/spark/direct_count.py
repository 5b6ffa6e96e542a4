"""Chunk counts of local text and Parquet files read by pyarrow inside Spark tasks (the unigram and BPE jobs on
local masters).

Spark's text reader hands every line from the JVM to the Python worker as Arrow, which on a local master costs
more than the counting itself (``benchmarks/bpe.py``, its reader rows in BENCHMARKS.md). Here each task opens its
files with pyarrow (:func:`pipelines.read.arrow_read.read_text_units`: the same lines as Spark's text source;
:func:`pipelines.read.arrow_read.read_units`: a Parquet file's text column, nulls dropped), drops the held-out
documents by Spark's own ``xxhash64`` rule (:mod:`tokenizer.kernels.xxhash`, so
``pipelines.spark.train_engine.split_holdout`` would hold out the same ones), counts the rest with the job's
counter and hands its table to the job's reduce (:mod:`pipelines.spark.reduce`, with its memory bound). The result
equals the Spark path's table on the same training documents, so the models' bytes are the same.

Example::

    units, _ = plan_text([("file:/data/a.txt", 1234)], None)
    reduced = count_chunks_direct(spark, units, pipelines.train.bpe.counter(BpeSettings()), 0.001)
    reduced.table, reduced.stats["documents"], reduced.held_out[:2]
"""

from __future__ import annotations

from typing import Callable

from pipelines.spark import reduce
from pipelines.train.tables import Counter, Reduced
from pipelines.read.shards import binary_buffers

DIRECT_TASK_BYTES = 64 << 20  # text per task


def direct_count_task(groups: list, counter: Counter, threads: int, holdout_fraction: float, keep_documents: int,
                      text_column: str = "text", buckets: int = 1, bad_rows=None) -> Callable:
    """``mapInArrow`` function over ``spark.range(len(groups))`` (one id per partition): read the units of
    ``groups[id]`` with pyarrow (text lines, or a Parquet file's or a table's ``text_column``, a table's
    ``--where`` applied, nulls dropped and strings taken
    as their UTF-8 bytes, as Spark's reader gives them), drop the held-out documents, count the rest with
    ``counter`` (:data:`pipelines.train.tables.Counter`) on ``threads`` threads; yields the reduce's ``(bucket, blob)``
    rows (:func:`pipelines.spark.reduce.counted_rows`) and the first ``keep_documents`` held-out and training documents
    (:func:`pipelines.spark.reduce.documents_row`), as Arrow batches. Null values are counted (the statistic
    ``null_rows``); with ``bad_rows`` (:class:`pipelines.train.bad_rows.TrainBadRows`) of a character model,
    documents that are not valid UTF-8 are counted (``invalid_utf8_rows``) and, unless it keeps them, dropped before
    the held-out split."""

    def run(batches):
        import pyarrow as pa

        from pipelines.read.table_units import read_planned_units
        from tokenizer.bad_rows import invalid_utf8_mask
        from tokenizer.kernels.xxhash import held_out_documents

        checks_utf8 = bad_rows is not None and bad_rows.invalid_utf8
        found = {"null_rows": 0, "invalid_utf8_rows": 0}  # this partition's rows without text, not valid UTF-8

        def documents(units):
            for batch in read_planned_units(units, text_column, pa.schema([]), "text", "malformed"):
                column = batch.column(0)  # text lines: binary, never null; Parquet, tables: string or binary,
                # nullable
                binary = pa.large_binary() if pa.types.is_large_string(column.type) or \
                    pa.types.is_large_binary(column.type) else pa.binary()
                found["null_rows"] += column.null_count
                column = column.cast(binary).drop_null()
                if checks_utf8 and len(column):
                    invalid = invalid_utf8_mask(*binary_buffers(column))
                    found["invalid_utf8_rows"] += int(invalid.sum())
                    if bad_rows.drops_invalid_utf8 and invalid.any():
                        column = column.filter(pa.array(~invalid))
                yield column

        indices = [i for batch in batches for i in batch.column(0).to_pylist()]
        for index in indices:
            units = groups[index]
            held_docs: list[bytes] = []
            train_docs: list[bytes] = []

            def training_batches():
                for column in documents(units):
                    if holdout_fraction > 0:
                        held = held_out_documents(*binary_buffers(column), holdout_fraction)
                        if held.any() and len(held_docs) < keep_documents:
                            held_docs.extend(d for d in column.filter(pa.array(held)).to_pylist() if d)
                        column = column.filter(pa.array(~held))
                    if len(train_docs) < keep_documents:
                        train_docs.extend(d for d in column.slice(0, keep_documents).to_pylist() if d)
                    yield pa.RecordBatch.from_arrays([column], ["text"])

            found.update(null_rows=0, invalid_utf8_rows=0)
            table, stats = counter(training_batches(), threads)
            stats = {**stats, "null_rows": found["null_rows"],
                     **({"invalid_utf8_rows": found["invalid_utf8_rows"]} if checks_utf8 else {})}
            for row in reduce.counted_rows("bytes", table, stats, buckets):
                yield reduce._batch([row])
            del table
            yield reduce._batch([reduce.documents_row(reduce.HELD_OUT_BUCKET, held_docs[:keep_documents], index),
                                 reduce.documents_row(reduce.TRAINING_BUCKET, train_docs[:keep_documents], index)])

    return run


def count_chunks_direct(spark, units, counter: Counter, holdout_fraction: float, *, threads: int | None = None,
                        keep_documents: int = 2000, text_column: str = "text",
                        limit: int | None = None, bad_rows=None) -> Reduced:
    """The reduced chunk counts of local text or Parquet files (:func:`pipelines.read.arrow_read.plan_text` or
    :func:`~pipelines.read.arrow_read.plan_parquet` units; ``text_column`` is a Parquet file's text), ``counter`` run in
    Spark tasks of up to ``DIRECT_TASK_BYTES`` of text each (see the module docstring) with ``threads`` threads
    (default: the session's :func:`~pipelines.spark.session.task_threads`); the tasks' tables go through the job's
    reduce and its memory bound (``limit`` entries, :func:`pipelines.spark.reduce.bounded_collect`), with the first
    ``keep_documents`` held-out and training documents in input order. ``bad_rows``: see :func:`direct_count_task`
    (its ``null_rows`` and ``invalid_utf8_rows`` are summed in the statistics)."""
    from pipelines.read.arrow_read import assign_units
    from pipelines.spark.session import task_threads

    threads = task_threads(spark) if threads is None else max(1, int(threads))
    total_weight = sum(unit.weight for unit in units)
    tasks = max(1, min(len(units), -(-total_weight // DIRECT_TASK_BYTES)))
    groups = [group for group in assign_units(units, tasks) if group] or [[]]
    counted = spark.range(len(groups), numPartitions=len(groups)).mapInArrow(
        direct_count_task(groups, counter, threads, holdout_fraction, keep_documents, text_column,
                          reduce.shuffle_buckets(spark), bad_rows), reduce.SCHEMA)
    reduced = reduce.bounded_collect(reduce.merged_frame(counted, "bytes", threads=threads), "bytes", limit)
    reduced.held_out, reduced.training = reduced.held_out[:keep_documents], reduced.training[:keep_documents]
    return reduced


def direct_units(spark, inputs: list[str], input_format: str | None, text_column: str = "text"):
    """Work units of ``inputs`` when a job on a local master can count them in its tasks: text files
    (:func:`pipelines.read.arrow_read.plan_text`) or Parquet files (:func:`~pipelines.read.arrow_read.plan_parquet`;
    a missing or non-text ``text_column`` raises the error of Spark's reader) that pyarrow opens, the format named by
    ``input_format`` or guessed from the names; else ``None`` (JSONL, other filesystems or codecs: the job reads
    through Spark, with the same model bytes)."""
    from pipelines.read.arrow_read import plan_parquet, plan_text
    from pipelines.read.readers import detect_format, list_input_files
    from pipelines.spark.session import is_local_master

    if not is_local_master(spark.sparkContext.master):
        return None
    listed = list_input_files(spark, inputs)
    input_format = input_format or detect_format(listed.files + listed.empty_files)
    if not listed.files or input_format not in ("text", "parquet"):
        return None
    files = [(path, listed.sizes[path]) for path in listed.files]
    if input_format == "parquet":
        plan, _, _ = plan_parquet(files, text_column, [], None)
        return plan.units if plan is not None and plan.units else None
    units, _ = plan_text(files, None)
    return units


def table_corpus(spark, table, partitions: int | None = None, bad_rows=None):
    """A table version or filtered Parquet files (:class:`pipelines.train.table_input.TableInput`) as a persisted
    :class:`~pipelines.read.readers.Corpus` (``text: binary``, ``malformed``: all false), read by pyarrow in Spark
    tasks of up to ``DIRECT_TASK_BYTES`` each (:func:`pipelines.read.table_units.read_table_units`; Spark's readers
    know no table), repartitioned into ``partitions`` when given: what Spark's reader gives for files, for the
    passes that read the documents more than once (BytePiece, ``--partitions``)."""
    from pyspark import StorageLevel

    from pipelines.read.arrow_read import assign_units
    from pipelines.read.readers import Corpus, InputFiles

    units, text_column = table.units, table.text_column
    tasks = max(1, min(len(units), -(-sum(unit.weight for unit in units) // DIRECT_TASK_BYTES)))
    groups = [group for group in assign_units(units, tasks) if group] or [[]]

    def read(batches):
        import pyarrow as pa

        from pipelines.read.table_units import read_table_units

        for index in [i for batch in batches for i in batch.column(0).to_pylist()]:
            for batch in read_table_units(groups[index], text_column, pa.schema([]), "text", "malformed"):
                yield pa.RecordBatch.from_arrays([batch.column(0).cast(pa.binary()), batch.column(1)],
                                                 ["text", "malformed"])

    raw = spark.range(len(groups), numPartitions=len(groups)).mapInArrow(read, "text binary, malformed boolean")
    if partitions is not None:
        raw = raw.repartition(int(partitions))
    listed = InputFiles(files=table.paths, empty_files=[], total_bytes=table.input_bytes,
                        sizes={f.path: f.size for f in table.snapshot.files})
    return Corpus(raw=raw.persist(StorageLevel.MEMORY_AND_DISK), input_files=listed,
                  input_format=table.snapshot.kind, text_column=text_column, bad_rows=bad_rows)
