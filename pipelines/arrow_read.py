"""Reading Parquet inputs in the Python tasks themselves (pyarrow), so the tokenize job's data never crosses the JVM.

The Spark read path (``spark.read.parquet`` -> JVM scan -> Arrow batches sent to a Python worker) costs more CPU
than the encoder's own share of the job on a small machine. Here the driver reads only the files' footers and plans
**work units** (one Parquet row group, or a slice of rows of one); Spark distributes just the unit lists, and each
Python task opens its files with pyarrow, reads its row groups and encodes them. No Spark here: the planning runs
on the driver, the reading in executors and in tests.

Order: units are planned in input-file order (the sorted listing), row group order and row order, and each task
gets a contiguous run of units, so the shards in manifest order hold the documents in input order.

Filesystems: local paths and ``file:`` URIs; any other URI only when ``pyarrow.fs.FileSystem.from_uri`` opens it
and reports the size Hadoop listed. Everything else (``s3a://``, ``hdfs://`` without libhdfs, a footer pyarrow
cannot read, kept columns whose types Spark would convert) is left to the Spark read path: :func:`plan_parquet`
returns ``None`` with the reason.

Example (hand-checkable)::

    >>> units = [ParquetUnit("a", 0, 0, 10, 100), ParquetUnit("a", 1, 0, 10, 100), ParquetUnit("b", 0, 0, 5, 200)]
    >>> [[(u.path, u.row_group) for u in group] for group in assign_units(units, 2)]
    [[('a', 0), ('a', 1)], [('b', 0)]]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator, Sequence

import pyarrow as pa

#: Rows per Arrow batch handed to the encoder (the Spark path's ``arrow.maxRecordsPerBatch``).
BATCH_ROWS = 10_000


@dataclass(frozen=True)
class ParquetUnit:
    """Rows ``[row_start, row_stop)`` of row group ``row_group`` of the Parquet file ``path`` (a Hadoop path
    string as listed); ``weight`` is the rows' uncompressed size estimate in bytes (for balancing tasks)."""

    path: str
    row_group: int
    row_start: int
    row_stop: int
    weight: int

    @property
    def rows(self) -> int:
        return self.row_stop - self.row_start


@dataclass
class ParquetPlan:
    """Work units in input order, the rows the footers report (an independent count for ``--verify``)."""

    units: list[ParquetUnit]
    rows: int


def arrow_filesystem(path: str):
    """``(pyarrow filesystem, path in it)`` for a Hadoop path string, or ``None`` when pyarrow cannot open it.

    >>> arrow_filesystem("file:/tmp/a b.parquet")[1], arrow_filesystem("/tmp/x")[1]
    ('/tmp/a b.parquet', '/tmp/x')
    """
    from pyarrow import fs

    if path.startswith("/"):
        return fs.LocalFileSystem(), path
    if path.startswith("file:"):
        rest = path[len("file:"):]
        if rest.startswith("///"):
            rest = rest[2:]
        elif rest.startswith("//"):  # file://host/path: another machine's file
            return None
        return (fs.LocalFileSystem(), rest) if rest.startswith("/") else None
    try:
        filesystem, inner = fs.FileSystem.from_uri(path)
    except (pa.ArrowException, ValueError, OSError):
        return None
    return filesystem, inner


#: Arrow types of kept columns that Spark's Parquet reader hands to Python unchanged (strings and binaries as
#: ``string``/``binary``): only these are read directly; any other kept column sends the run to Spark's reader.
_DIRECT_TYPES = {pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.float32(), pa.float64(), pa.bool_(),
                 pa.date32(), pa.string(), pa.binary()}


def spark_arrow_type(data_type: pa.DataType) -> pa.DataType | None:
    """The Arrow type a column of ``data_type`` has after Spark's Parquet reader, when this module can read it
    directly with the same result; ``None`` otherwise.

    >>> spark_arrow_type(pa.large_string()), spark_arrow_type(pa.int64()), spark_arrow_type(pa.uint32())
    (DataType(string), DataType(int64), None)
    """
    if pa.types.is_large_string(data_type):
        return pa.string()
    if pa.types.is_large_binary(data_type):
        return pa.binary()
    return data_type if data_type in _DIRECT_TYPES else None


def plan_parquet(
    files: Sequence[tuple[str, int]], text_column: str, keep_columns: Sequence[str], tasks: int | None,
) -> tuple[ParquetPlan | None, pa.Schema | None, str]:
    """Footers of ``files`` (``(path, size)`` pairs, input order) -> ``(plan, schema of the kept columns, "")``,
    or ``(None, None, reason)`` when the run must go through Spark's reader instead (see the module docstring).

    A missing column or a text column that is not text raises the same :class:`InputError` as Spark's read path.
    The kept columns' schema is the one Spark's reader would give them. With ``tasks`` set, row groups are split
    into row slices until there are at least ``tasks`` units.
    """
    import pyarrow.parquet as pq

    from pipelines.readers import missing_column_error
    from tokenizer.errors import InputError

    units: list[ParquetUnit] = []
    total_rows = 0
    keep_schema = None
    for path, size in files:
        opened = arrow_filesystem(path)
        if opened is None:
            return None, None, f"pyarrow cannot open {path}"
        filesystem, inner = opened
        try:
            info = filesystem.get_file_info(inner)
            if info.size != size:
                return None, None, f"pyarrow sees {path} as {info.size} bytes, Hadoop as {size}"
            with filesystem.open_input_file(inner) as handle:
                parquet = pq.ParquetFile(handle)
                metadata, schema = parquet.metadata, parquet.schema_arrow
        except (pa.ArrowException, OSError) as exc:
            return None, None, f"pyarrow cannot read {path}'s footer ({exc})"
        names = schema.names
        for name in [text_column, *keep_columns]:
            if name not in names:
                error = missing_column_error(name, names, "column", [path])
                if name != text_column:
                    error = InputError(str(error).replace("--text-column NAME (text_column: in a config file)",
                                                          "--keep-columns a,b"))
                raise error
            if names.count(name) > 1:
                return None, None, f"{path} has two columns named {name!r}"
        text_type = schema.field(text_column).type
        if spark_arrow_type(text_type) not in (pa.string(), pa.binary()):
            if pa.types.is_dictionary(text_type) and pa.types.is_string(text_type.value_type):
                return None, None, f"{path}: text column {text_column!r} is dictionary-encoded"
            raise InputError(f"column {text_column!r} has type {text_type}, not string or binary: pass the column "
                             "that holds the text with --text-column NAME")
        fields = []
        for name in keep_columns:
            converted = spark_arrow_type(schema.field(name).type)
            if converted is None:
                return None, None, f"{path}: column {name!r} is {schema.field(name).type}, which Spark converts"
            fields.append(pa.field(name, converted))
        file_keep = pa.schema(fields)
        if keep_schema is None:
            keep_schema = file_keep
        elif not file_keep.equals(keep_schema):
            return None, None, f"{path}: the kept columns' types differ from the first file's"
        total_rows += metadata.num_rows
        for group in range(metadata.num_row_groups):
            row_group = metadata.row_group(group)
            if row_group.num_rows:
                units.append(ParquetUnit(path, group, 0, row_group.num_rows, max(1, row_group.total_byte_size)))
    if tasks:
        units = split_units(units, tasks)
    return ParquetPlan(units, total_rows), keep_schema if keep_schema is not None else pa.schema([]), ""


def split_units(units: list[ParquetUnit], count: int) -> list[ParquetUnit]:
    """Halve the heaviest units (by rows, keeping order) until there are at least ``count`` or none can be split.

    >>> [(u.row_start, u.row_stop) for u in split_units([ParquetUnit("a", 0, 0, 5, 50)], 3)]
    [(0, 2), (2, 3), (3, 5)]
    """
    units = list(units)
    while len(units) < count:
        index = max(range(len(units)), key=lambda i: (units[i].rows, -i), default=None)
        if index is None or units[index].rows < 2:
            break
        unit = units[index]
        middle = unit.row_start + unit.rows // 2
        share = unit.weight * (middle - unit.row_start) // unit.rows
        units[index:index + 1] = [
            ParquetUnit(unit.path, unit.row_group, unit.row_start, middle, max(1, share)),
            ParquetUnit(unit.path, unit.row_group, middle, unit.row_stop, max(1, unit.weight - share)),
        ]
    return units


def assign_units(units: Sequence[ParquetUnit], tasks: int) -> list[list[ParquetUnit]]:
    """Cut ``units`` (in order) into ``tasks`` contiguous groups of about equal weight; a unit goes to the group in
    which its middle falls, so a group can be empty only when some unit outweighs a group's share."""
    groups: list[list[ParquetUnit]] = [[] for _ in range(tasks)]
    total = sum(unit.weight for unit in units) or 1
    before = 0
    for unit in units:
        middle = before + unit.weight / 2
        groups[min(tasks - 1, int(math.floor(middle * tasks / total)))].append(unit)
        before += unit.weight
    return groups


def default_tasks(units: Sequence[ParquetUnit], parallelism: int, max_task_bytes: int = 128 << 20) -> int:
    """Tasks for a run without ``--partitions``: two per task slot (so a slow core does not hold the job up),
    more when a task would exceed ``max_task_bytes`` of uncompressed text, never more than the units.

    >>> default_tasks([ParquetUnit("a", i, 0, 1, 1 << 20) for i in range(8)], 2)
    4
    """
    total = sum(unit.weight for unit in units)
    wanted = max(2 * parallelism, math.ceil(total / max_task_bytes))
    return max(1, min(len(units), wanted))


def read_units(
    units: Sequence[ParquetUnit], text_column: str, keep_schema: pa.Schema, text_name: str, malformed_name: str,
) -> Iterator[pa.RecordBatch]:
    """Batches of ``text_name`` (the text column as read), ``malformed_name`` (all false) and the kept columns cast
    to ``keep_schema``, for ``units`` in order: the same batches the Spark read path produces."""
    import pyarrow.parquet as pq

    columns = [text_column, *keep_schema.names]
    opened_path, parquet, handle = None, None, None
    try:
        for unit in units:
            if unit.path != opened_path:
                if handle is not None:
                    handle.close()
                filesystem, inner = arrow_filesystem(unit.path)
                handle = filesystem.open_input_file(inner)
                parquet, opened_path = pq.ParquetFile(handle), unit.path
            skip, wanted = unit.row_start, unit.rows
            for batch in parquet.iter_batches(batch_size=BATCH_ROWS, row_groups=[unit.row_group], columns=columns,
                                              use_threads=False):
                if skip >= batch.num_rows:
                    skip -= batch.num_rows
                    continue
                batch = batch.slice(skip, min(wanted, batch.num_rows - skip))
                skip = 0
                wanted -= batch.num_rows
                arrays = [batch.column(text_column), pa.array(_falses(batch.num_rows))]
                arrays += [batch.column(f.name).cast(f.type) for f in keep_schema]
                yield pa.RecordBatch.from_arrays(arrays, [text_name, malformed_name, *keep_schema.names])
                if not wanted:
                    break
    finally:
        if handle is not None:
            handle.close()


def _falses(count: int):
    import numpy as np

    return np.zeros(count, dtype=bool)
