"""A table version (:class:`pipelines.read.tables.TableSnapshot`) as the tokenize job's work units: one per row group
of each data file, read with pyarrow in the Python tasks, the ``--where`` filter applied there.

A unit carries what its task needs to give every batch the table's columns (partition values and columns a file
predates come from the unit, not the file) and the filter's text (parsed again in the task: a pyarrow expression is
rebuilt, never pickled). The batches have the direct Parquet path's layout
(:func:`pipelines.read.arrow_read.read_units`): the text column as read, a malformed flag (all false), the kept
columns cast to the kept schema.

Example: a Delta table of one file with two row groups gives two units, ``(file, 0)`` and ``(file, 1)``, each
weighted by its uncompressed bytes.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.read.arrow_read import (BATCH_ROWS, BatchPlace, _falses, arrow_filesystem, kept_fields,
                                       read_work_units, spark_arrow_type)
from pipelines.read.jsonl_read import JsonlUnit, read_jsonl_units
from pipelines.read.row_filter import parse_row_filter
from pipelines.read.tables import TableFile, TableSnapshot, table_columns
from tokenizer.errors import InputError

#: the row-number column added to a batch while --where filters it (the filter names only the table's columns)
_ROW = "__row_in_group"


@dataclass(frozen=True)
class TableUnit:
    """Row group ``row_group`` of the table's data file ``file``; ``schema``: the table's columns (partition
    columns included); ``where``: the ``--where`` filter's text or ``None``; ``weight``: uncompressed bytes (for
    balancing tasks); ``rows``: the row group's rows."""

    file: TableFile
    row_group: int
    schema: pa.Schema
    where: str | None
    weight: int
    rows: int

    @property
    def path(self) -> str:
        return self.file.path


@dataclass
class TablePlan:
    """Work units in the snapshot's file order; ``rows``: the rows the files hold (``None`` with a filter: then
    only reading tells)."""

    units: list[TableUnit]
    rows: int | None


def _checked_columns(schema: pa.Schema, text_column: str, keep_columns: Sequence[str], where: str | None,
                     table: str) -> pa.Schema:
    """The kept columns' schema; every column the run names must be the table's (the fix names the option)."""
    names = set(schema.names)
    wanted = [(text_column, "--text-column NAME"), *((c, "--keep-columns a,b") for c in keep_columns)]
    row_filter = parse_row_filter(where)
    wanted += [(c, "--where") for c in (row_filter.columns if row_filter else ())]
    for name, option in wanted:
        if name not in names:
            raise InputError(f"table {table} has no column {name!r} (its columns: {', '.join(schema.names)}): "
                             f"fix {option}")
    text_type = schema.field(text_column).type
    if spark_arrow_type(text_type) not in (pa.string(), pa.binary()):
        raise InputError(f"column {text_column!r} of table {table} has type {text_type}, not string or binary: pass "
                         "the column that holds the text with --text-column NAME")
    kept, converted = kept_fields(schema, keep_columns)
    if converted is not None:
        raise InputError(f"--keep-columns {converted}: its type {schema.field(converted).type} cannot be kept in the "
                         "output; keep columns of numbers, booleans, strings or binaries")
    return pa.schema(kept)


def _open_file(path: str):
    """A pyarrow input file for ``path`` (a local path or a URI pyarrow opens); the caller closes it."""
    located = arrow_filesystem(path)
    if located is None:
        raise InputError(f"{path}: pyarrow cannot open this path (--where and tables read files with pyarrow): give a "
                         "local path or a URI of a filesystem pyarrow knows (s3://, gs://, hdfs://)")
    filesystem, inner = located
    return filesystem.open_input_file(inner)


def parquet_footer(path: str) -> pq.FileMetaData:
    """The footer of the Parquet file at ``path``."""
    with _open_file(path) as handle:
        return pq.ParquetFile(handle).metadata


def files_snapshot(files: Sequence[tuple[str, int]]) -> TableSnapshot:
    """Parquet files ``[(path, bytes), ...]`` (at least one) as a table of those files (kind ``parquet``, version
    0), typed by the first file's schema: how ``--where`` reads plain Parquet (:func:`plan_table`)."""
    schema = parquet_footer(files[0][0]).schema.to_arrow_schema()
    return TableSnapshot("parquet", files[0][0], 0, tuple(TableFile(path, size, None) for path, size in files),
                         schema)


def plan_table(snapshot: TableSnapshot, text_column: str, keep_columns: Sequence[str],
               where: str | None) -> tuple[TablePlan, pa.Schema]:
    """``(plan, kept columns' schema)`` for the files of ``snapshot`` (their footers read here, on the driver)."""
    keep_schema = _checked_columns(snapshot.schema, text_column, keep_columns, where, snapshot.table)
    units, rows = [], 0
    for file in snapshot.files:
        metadata = parquet_footer(file.path)
        for group in range(metadata.num_row_groups):
            info = metadata.row_group(group)
            if info.num_rows:
                units.append(TableUnit(file, group, snapshot.schema, where, max(1, info.total_byte_size),
                                       info.num_rows))
        rows += metadata.num_rows
    return TablePlan(units, None if where else rows), keep_schema


def read_table_units(units: Sequence[TableUnit], text_column: str, keep_schema: pa.Schema, text_name: str,
                     malformed_name: str, located: bool = False) -> Iterator[pa.RecordBatch]:
    """Batches of ``text_name``, ``malformed_name`` (all false) and the kept columns for ``units`` in order: every
    row of each row group that the filter keeps, once. ``located``: yield ``(batch, BatchPlace)`` pairs instead,
    so that a bad row can be named by file, row group and row (its row in the row group, also under a filter)."""
    row_filter = parse_row_filter(units[0].where) if units else None
    names = [text_column, *keep_schema.names]
    needed = list(dict.fromkeys(names + list(row_filter.columns if row_filter else ())))
    for path, same_file in itertools.groupby(units, key=lambda unit: unit.path):
        with _open_file(path) as handle:
            parquet = pq.ParquetFile(handle)
            for unit in same_file:
                partition = dict(unit.file.partition)
                stored = [n for n in needed if n in parquet.schema_arrow.names and n not in partition]
                first_row = 0
                for batch in parquet.iter_batches(batch_size=BATCH_ROWS, row_groups=[unit.row_group],
                                                  columns=stored, use_threads=False):
                    columns = pa.RecordBatch.from_arrays(table_columns(batch, unit.file, needed, unit.schema), needed)
                    place = BatchPlace(unit, first_row)
                    first_row += batch.num_rows
                    if row_filter is not None:
                        numbered = pa.Table.from_batches([columns]).append_column(
                            _ROW, pa.array(np.arange(place.first_row, first_row, dtype=np.int64)))
                        kept = numbered.filter(row_filter.expression).combine_chunks()
                        if not kept.num_rows:
                            continue
                        columns = kept.to_batches()[0]
                        place = BatchPlace(unit, place.first_row, columns.column(_ROW).to_numpy())
                    arrays = [columns.column(text_column), pa.array(_falses(columns.num_rows))]
                    arrays += [columns.column(f.name).cast(f.type) for f in keep_schema]
                    batch = pa.RecordBatch.from_arrays(arrays, [text_name, malformed_name, *keep_schema.names])
                    yield (batch, place) if located else batch


def read_planned_units(units: Sequence, text_column: str, keep_schema: pa.Schema, text_name: str,
                       malformed_name: str, located: bool = False) -> Iterator[pa.RecordBatch]:
    """The batches of one task's units, of any plan (all of one kind, as a plan makes them): a table's
    (:func:`read_table_units`), JSONL's (:func:`pipelines.read.jsonl_read.read_jsonl_units`), Parquet's or text's
    (:func:`pipelines.read.arrow_read.read_work_units`)."""
    if units and isinstance(units[0], TableUnit):
        return read_table_units(units, text_column, keep_schema, text_name, malformed_name, located=located)
    if units and isinstance(units[0], JsonlUnit):
        return read_jsonl_units(units, text_column, keep_schema, text_name, malformed_name, located=located)
    return read_work_units(units, text_column, keep_schema, text_name, malformed_name, located=located)
