"""The tokenize job: a dataset (text, JSONL or Parquet files) -> token ids in Parquet, Megatron or npy shards.

Steps (:func:`run_tokenize`):

1. Prepare the output directory for the run mode (:mod:`pipelines.tokenize.commit`): ``error`` refuses a non-empty one,
   ``skip`` returns at once when it is complete, ``incremental`` keeps the committed runs, ``overwrite`` clears it.
2. List the input files (Hadoop filesystems, via :func:`pipelines.read.readers.list_input_files`) with their size and
   modification time; in incremental mode keep only files the manifest does not list (a listed file whose size or
   time changed is an error: its old tokens are in the output).
3. Read only those files, as batches of one text column, a malformed-row flag and the kept columns; nulls and empty
   documents are kept (they are documents too, or bad rows to account for). The readers give the same batches:

   * Parquet (``reader: auto``, the default): the driver reads the footers and plans row-group work units
     (:mod:`pipelines.read.arrow_read`); Spark distributes only the unit lists (``parallelize`` + ``mapPartitions``,
     :func:`encode_units`) and each Python task reads its row groups with pyarrow. The JVM never touches the data.
     Units are cut in input order (sorted files, row groups, rows), so the shards in manifest order hold the
     documents in input order. ``--partitions N`` gives N tasks (row groups are split by rows when there are fewer);
     by default two tasks per task slot.
   * Text files (``reader: auto``): the same way, with byte-range units (a plain file over 32 MB is read by
     several tasks, each taking the lines that start in its range; a ``.gz`` or ``.zst`` file is one unit,
     decompressed as a stream). Lines end at ``\n``, as Spark's text source reads them with ``lineSep='\n'``.
   * JSONL files (``reader: arrow``; always on the Beam engine): the same byte-range units, each line parsed in the
     task as Spark's JSON functions read it (:mod:`pipelines.read.jsonl_read`).
   * Spark's reader (:func:`read_documents`, then ``mapInArrow``, :func:`encode_partition`): JSONL input (with
     ``reader: auto``; it reads the largest files first, so the shards hold the files in that order),
     ``reader: spark``, text with ``--verify`` (Spark counts the input lines) or in a codec other than gzip and
     zstd, and Parquet or text that pyarrow cannot take (a filesystem it cannot open, such as ``s3a://``, an
     unreadable footer, kept columns of types Spark converts, such as unsigned integers or timestamps).
4. Per task (:func:`encode_task`): classify bad rows, encode with the Numba batch encoder (the model file is
   broadcast once as bytes and loaded once per Python worker), add BOS/EOS, stream the shard to
   ``_temporary/RUN/part-P-attempt-A``, optionally decode the written shard and compare it with the input, and
   return one row of counts.
5. The driver checks the results (one per partition, verify mismatches, document counts from the shards' metadata
   and, with ``verify``, an independent count of the input rows: Spark's ``count()``, or the Parquet footers' row
   counts on the direct path), then commits: rename the winners, then the manifest with the summary
   (:mod:`pipelines.tokenize.commit`).

Every input row is accounted for: ``rows_read == documents + skipped_bad_rows`` for each run (checked before the
commit); bad rows (null text, malformed JSON lines, invalid UTF-8, documents over ``max_document_bytes``) follow
``on_bad_row`` (``error`` | ``skip`` | ``keep``) and are counted by kind in the summary.

The job lives in one module per part: :mod:`.options` (:class:`TokenizeConfig` and shared names), :mod:`.inputs`
(listing and reading the input), :mod:`.task` (the per-task encode and write step), :mod:`.stats` (the token
histogram), :mod:`.results` (checks, summary, Megatron merge) and :mod:`.run` (the driver). This package
re-exports their public names, each imported on first use.
"""

_LAZY = {
    "list_inputs": "inputs", "read_documents": "inputs",
    **dict.fromkeys(("BAD_ROW_KINDS", "BAD_ROW_POLICIES", "MALFORMED", "READERS", "RESULT_SCHEMA", "TASK_OPTIONS",
                     "TEXT", "TokenizeConfig", "resolved_options", "task_options"), "options"),
    "merge_megatron": "results", "run_tokenize": "run",
    **dict.fromkeys(("bucket_floor", "histogram_quantiles", "token_buckets"), "stats"),
    **dict.fromkeys(("classify_rows", "encode_partition", "encode_task", "encode_units", "load_tokenizer_bytes"),
                    "task"),
    "OUTPUT_FORMATS": "writers", "shard_files": "writers",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    """The re-exported names, imported on first use: ``shardpiece tokenize --help`` (which needs only the output
    formats' names) then loads neither the encoder's kernels nor Spark's helpers."""
    import importlib

    if name not in _LAZY:
        raise AttributeError(f"module 'pipelines.tokenize' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"pipelines.tokenize.{_LAZY[name]}"), name)
    globals()[name] = value
    return value
