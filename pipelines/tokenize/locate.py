"""Where a bad row of Spark's read path is: the file and line (text, JSONL) or the file and row (Parquet).

Spark's readers give a task neither a file name nor a line number, so a task on that path names a bad row by its
partition and row (:func:`pipelines.tokenize.task.partition_rows`). Carrying the file name through every row
would cost every run a string per row, so the job finds the place only when ``--on-bad-row error`` stops it
(:func:`locate_bad_row`, on the driver):

1. a second Spark job reads the same files with each row's file (``_metadata.file_path``; the ``path`` column of
   ``binaryFile`` for ``.zst``) and, for JSONL and text, the line's bytes, applies the task's classification
   (:func:`pipelines.tokenize.task.bad_row_masks`) and takes the first bad row Spark returns (``take(1)`` scans
   partitions a few at a time and stops at the first that has one);
2. Parquet: Spark gives the row's index in its file (``_metadata.row_index``); text and JSONL: the driver reads
   that one file with pyarrow (plain, ``.gz`` or ``.zst``; the lines Spark's text source gives) and numbers the
   first line with exactly those bytes, a line Spark classified as bad. A file pyarrow cannot open (``s3a://``)
   or a codec it does not read keeps the file name and the line's first bytes.

Example: ``docs.jsonl`` whose line 3 is ``[1, 2]`` -> ``("file:/data/docs.jsonl, line 3", "not a JSON object")``.
"""

from __future__ import annotations

from functools import partial
from typing import Iterator, Sequence
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipelines.read.arrow_read import _SPARK_CODECS, TEXT_CODECS, TextUnit, arrow_filesystem, read_text_units
from pipelines.tokenize.options import MALFORMED, TEXT

_FOUND_SCHEMA = "path string, row long, line binary, kind string, length long"


def locate_bad_row(spark, files: Sequence[str], input_format: str, text_column: str, max_bytes: int,
                   keeps_invalid_utf8: bool) -> tuple[str, str] | None:
    """``(place, what is wrong)`` of a bad row of ``files`` as Spark's reader gives them (``place``: ``"PATH, line
    N"`` or ``"PATH, row R (from 0)"``), or ``None`` when none is found."""
    from pyspark.sql import functions as F

    if input_format == "parquet":
        frame = spark.read.parquet(*files).select(
            F.col("_metadata.file_path").alias("path"), F.col("_metadata.row_index").alias("row"),
            F.lit(None).cast("binary").alias("line"), F.col(text_column).cast("binary").alias(TEXT),
            F.lit(False).alias(MALFORMED))
    else:
        lines = _lines_with_paths(spark, files)
        if input_format == "jsonl":
            from pipelines.tokenize.inputs import jsonl_rows

            frame = jsonl_rows(lines.withColumn("raw", F.col("line")), text_column, [], "path", "raw")
            frame = frame.select("path", F.lit(-1).cast("long").alias("row"), F.col("raw").alias("line"), TEXT,
                                 MALFORMED)
        else:
            frame = lines.select("path", F.lit(-1).cast("long").alias("row"), "line",
                                 F.col("line").alias(TEXT), F.lit(False).alias(MALFORMED))
    step = partial(_first_bad_rows, max_bytes=max_bytes, keeps_invalid_utf8=keeps_invalid_utf8)
    found = frame.mapInArrow(step, _FOUND_SCHEMA).take(1)
    if not found:
        return None
    from pipelines.tokenize.task import bad_row_detail

    path, row, line, kind, length = found[0]
    path = _listed_path(path, files)
    detail = bad_row_detail(kind, length, max_bytes)
    if input_format == "parquet":
        return f"{path}, row {row} (from 0)", detail
    number = line_number(path, bytes(line))
    if number is None:
        return f"{path}, the line that starts {bytes(line)[:40]!r}", detail
    return f"{path}, line {number}", detail


def _first_bad_rows(batches: Iterator[pa.RecordBatch], max_bytes: int,
                    keeps_invalid_utf8: bool) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` step: the first bad row of each batch of ``path``, ``row``, ``line``, ``__text``,
    ``__malformed``, as ``_FOUND_SCHEMA`` rows."""
    from pipelines.tokenize.task import bad_row_masks

    for batch in batches:
        masks, _, lengths = bad_row_masks(batch, max_bytes, keeps_invalid_utf8)
        bad = np.logical_or.reduce(list(masks.values()))
        if not bad.any():
            continue
        index = int(np.argmax(bad))
        kind = next(k for k, mask in masks.items() if mask[index])
        row = batch.slice(index, 1)
        yield pa.RecordBatch.from_pydict({
            "path": row.column("path").cast(pa.string()), "row": row.column("row").cast(pa.int64()),
            "line": row.column("line").cast(pa.binary()), "kind": pa.array([kind]),
            "length": pa.array([int(lengths[index])], pa.int64())})


def _lines_with_paths(spark, files: Sequence[str]):
    """``path: string, line: binary`` for every line of text-like ``files``: Spark's text source (``lineSep``
    ``\\n``), ``.zst`` files through ``binaryFile`` (as :func:`pipelines.read.readers._read_lines` reads them)."""
    from pyspark.sql import functions as F

    zstd = [f for f in files if f.lower().endswith(".zst")]
    others = [f for f in files if not f.lower().endswith(".zst")]
    frames = []
    if others:
        frames.append(spark.read.option("lineSep", "\n").text(others).select(
            F.col("_metadata.file_path").alias("path"), F.col("value").cast("binary").alias("line")))
    if zstd:
        frames.append(spark.read.format("binaryFile").load(zstd).select("path", "content")
                      .mapInArrow(_zstd_lines_with_paths, "path string, line binary"))
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result


def _zstd_lines_with_paths(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    from pipelines.read.readers import decompress_zstd, split_lines

    for batch in batches:
        for path, content in zip(batch.column("path").to_pylist(), batch.column("content").to_pylist()):
            lines = split_lines(decompress_zstd(content, path))
            yield pa.RecordBatch.from_pydict({"path": pa.array([path] * len(lines), pa.string()),
                                              "line": pa.array(lines, pa.binary())})


def line_number(path: str, line: bytes) -> int | None:
    """The number (from 1) of the first line of the text file ``path`` (plain, ``.gz`` or ``.zst``) whose bytes
    are ``line``, reading it with pyarrow as the direct read path does; ``None`` when pyarrow cannot open it, its
    codec is another, or no line matches. Example: a file ``a\\nb\\na\\n`` and ``b"a"`` -> 1."""
    opened = arrow_filesystem(path)
    if opened is None or path.lower().endswith(_SPARK_CODECS):
        return None
    compressed = path.lower().endswith(TEXT_CODECS)
    filesystem, inner = opened
    stop = -1 if compressed else filesystem.get_file_info(inner).size
    before = 0
    wanted = pa.scalar(line, pa.binary())
    for batch in read_text_units([TextUnit(path, 0, stop, 1)], "line", "m"):
        index = pc.index(batch.column(0).cast(pa.binary()), wanted).as_py()
        if index >= 0:
            return before + index + 1
        before += batch.num_rows
    return None


def _listed_path(found: str, files: Sequence[str]) -> str:
    """The input file as listed (``file:/a b.txt``) for the path Spark reports for it (``file:///a%20b.txt``)."""
    def key(path: str) -> str:
        path = unquote(path)
        return "file:/" + path[len("file:"):].lstrip("/") if path.startswith("file:") else path

    return next((f for f in files if key(f) == key(found)), found)
