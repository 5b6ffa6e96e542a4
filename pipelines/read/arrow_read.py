"""Reading Parquet and text inputs in the Python tasks themselves (pyarrow), so the tokenize job's data never
crosses the JVM.

The Spark read path (``spark.read.parquet`` -> JVM scan -> Arrow batches sent to a Python worker) costs more CPU
than the encoder's own share of the job on a small machine. Here the driver reads only the files' footers and plans
**work units** (one Parquet row group, or a slice of rows of one); Spark distributes just the unit lists, and each
Python task opens its files with pyarrow, reads its row groups and encodes them. No Spark here: the planning runs
on the driver, the reading in executors and in tests.

Order: units are planned in input-file order (the sorted listing), row group order and row order, and each task
gets a contiguous run of units, so the shards in manifest order hold the documents in input order.

Filesystems: local paths and ``file:`` URIs; any other URI only when ``pyarrow.fs.FileSystem.from_uri`` opens it
and reports the size Hadoop listed, or through ``remote_files`` (an object with pyarrow's ``open_input_file``,
``open_input_stream`` and ``get_file_info``: the Beam engine's :class:`pipelines.beam.files.BeamFiles`) for paths
with a scheme; a unit planned so keeps it (``unit.filesystem``) and its task opens the path through it. Everything
else (``s3a://``, ``hdfs://`` without libhdfs, a footer pyarrow cannot read, kept columns whose types Spark would
convert) is left to the Spark read path: :func:`plan_parquet` returns ``None`` with the reason.

Text files (:func:`plan_text`, :func:`read_text_units`) are planned as byte ranges of a plain file (each unit takes
the lines that start in its range) or whole compressed files (gzip, zstd), read in chunks and split at ``\\n``.

Example (hand-checkable)::

    >>> units = [ParquetUnit("a", 0, 0, 10, 100), ParquetUnit("a", 1, 0, 10, 100), ParquetUnit("b", 0, 0, 5, 200)]
    >>> [[(u.path, u.row_group) for u in group] for group in assign_units(units, 2)]
    [[('a', 0), ('a', 1)], [('b', 0)]]
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

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
    filesystem: Any = field(default=None, compare=False, repr=False)  # opens ``path`` (None: arrow_filesystem)

    @property
    def rows(self) -> int:
        return self.row_stop - self.row_start


@dataclass
class ParquetPlan:
    """Work units in input order, the rows the footers report (an independent count for ``--verify``)."""

    units: list[ParquetUnit]
    rows: int


def arrow_filesystem(path: str, remote_files: Any = None):
    """``(pyarrow filesystem, path in it)`` for a Hadoop path string, or ``None`` when pyarrow cannot open it;
    ``(remote_files, path)`` for a path with a scheme when ``remote_files`` is given (a unit's ``filesystem``).

    >>> arrow_filesystem("file:/tmp/a b.parquet")[1], arrow_filesystem("/tmp/x")[1]
    ('/tmp/a b.parquet', '/tmp/x')
    """
    from pyarrow import fs

    if remote_files is not None and has_scheme(path):
        return remote_files, path
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


def has_scheme(path: str) -> bool:
    """Whether ``path`` is a URI of a filesystem other than the local one. ``has_scheme("gs://b/a.txt")`` ->
    ``True``; ``has_scheme("file:/tmp/a")``, ``has_scheme("/tmp/a")`` -> ``False``."""
    return "://" in path and not path.startswith("file:")


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


def kept_fields(schema: pa.Schema, keep_columns: Sequence[str]) -> tuple[list[pa.Field], str | None]:
    """``(fields, None)``: the kept columns of ``schema`` typed as Spark's Parquet reader gives them
    (:func:`spark_arrow_type`), or ``([...], name)`` for the first one it converts (a type this module does not
    read directly). ``kept_fields(pa.schema([("id", pa.int64())]), ["id"])`` -> ``([id: int64], None)``."""
    fields = []
    for name in keep_columns:
        converted = spark_arrow_type(schema.field(name).type)
        if converted is None:
            return fields, name
        fields.append(pa.field(name, converted))
    return fields, None


def plan_parquet(
    files: Sequence[tuple[str, int]], text_column: str, keep_columns: Sequence[str], tasks: int | None,
    remote_files: Any = None,
) -> tuple[ParquetPlan | None, pa.Schema | None, str]:
    """Footers of ``files`` (``(path, size)`` pairs, input order) -> ``(plan, schema of the kept columns, "")``,
    or ``(None, None, reason)`` when the run must go through Spark's reader instead (see the module docstring).

    A missing column or a text column that is not text raises the same :class:`InputError` as Spark's read path.
    The kept columns' schema is the one Spark's reader would give them. With ``tasks`` set, row groups are split
    into row slices until there are at least ``tasks`` units. ``remote_files`` opens paths with a scheme (see the
    module docstring).
    """
    import pyarrow.parquet as pq

    from pipelines.read.readers import missing_column_error
    from tokenizer.errors import InputError

    units: list[ParquetUnit] = []
    total_rows = 0
    keep_schema = None
    for path, size in files:
        opened = arrow_filesystem(path, remote_files)
        if opened is None:
            return None, None, f"pyarrow cannot open {path}"
        filesystem, inner = opened
        kept = filesystem if filesystem is remote_files else None
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
        fields, converted = kept_fields(schema, keep_columns)
        if converted is not None:
            return None, None, f"{path}: column {converted!r} is {schema.field(converted).type}, which Spark converts"
        file_keep = pa.schema(fields)
        if keep_schema is None:
            keep_schema = file_keep
        elif not file_keep.equals(keep_schema):
            return None, None, f"{path}: the kept columns' types differ from the first file's"
        total_rows += metadata.num_rows
        for group in range(metadata.num_row_groups):
            row_group = metadata.row_group(group)
            if row_group.num_rows:
                units.append(ParquetUnit(path, group, 0, row_group.num_rows, max(1, row_group.total_byte_size),
                                         kept))
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
            dataclasses.replace(unit, row_stop=middle, weight=max(1, share)),
            dataclasses.replace(unit, row_start=middle, weight=max(1, unit.weight - share)),
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


@dataclass(frozen=True)
class BatchPlace:
    """Where a batch read with ``located=True`` comes from: its ``unit`` and the index of its first row in it (a
    Parquet unit or a table's, :class:`pipelines.read.table_units.TableUnit`: the row within the row group; a text
    unit: the line within the unit, from 0); ``rows``: each row's index in the row group (or line in the unit)
    instead, when only some were kept (int64, one per row of the batch): a filter (``--where``), JSONL's blank lines.

    ``describe(row)`` names the batch's row ``row`` for an error message: ``"PATH, row group G, row R (both from
    0)"`` for Parquet, ``"PATH, line N"`` (from 1, as editors count) for text. For a text unit that starts inside a
    plain file the lines before it are counted then, by reading the file up to the unit (only on that error path).
    Example: the second batch (``first_row`` 10000) of row group 2 of ``a.parquet``, its row 5 ->
    ``"a.parquet, row group 2, row 10005 (both from 0)"``.
    """

    unit: Any
    first_row: int
    rows: Any = None

    def describe(self, row: int) -> str:
        unit = self.unit
        index = self.first_row + row if self.rows is None else int(self.rows[row])
        if isinstance(unit, TextUnit):
            return f"{unit.path}, line {lines_before(unit) + index + 1}"
        return f"{unit.path}, row group {unit.row_group}, row {index} (both from 0)"


def read_units(
    units: Sequence[ParquetUnit], text_column: str, keep_schema: pa.Schema, text_name: str, malformed_name: str,
    located: bool = False,
) -> Iterator[pa.RecordBatch]:
    """Batches of ``text_name`` (the text column as read), ``malformed_name`` (all false) and the kept columns cast
    to ``keep_schema``, for ``units`` in order: the same batches the Spark read path produces. ``located``: yield
    ``(batch, BatchPlace)`` pairs instead, so that a bad row can be named by file, row group and row."""
    import pyarrow.parquet as pq

    columns = [text_column, *keep_schema.names]
    opened_path, parquet, handle = None, None, None
    try:
        for unit in units:
            if unit.path != opened_path:
                if handle is not None:
                    handle.close()
                filesystem, inner = arrow_filesystem(unit.path, unit.filesystem)
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
                place = BatchPlace(unit, unit.row_stop - wanted)
                wanted -= batch.num_rows
                arrays = [batch.column(text_column), pa.array(_falses(batch.num_rows))]
                arrays += [batch.column(f.name).cast(f.type) for f in keep_schema]
                batch = pa.RecordBatch.from_arrays(arrays, [text_name, malformed_name, *keep_schema.names])
                yield (batch, place) if located else batch
                if not wanted:
                    break
    finally:
        if handle is not None:
            handle.close()


def _falses(count: int):
    import numpy as np

    return np.zeros(count, dtype=bool)


# ---------------------------------------------------------------------------------------------- text files
#: Bytes of an uncompressed text file per work unit: a larger file is read by several tasks, each taking the lines
#: that start in its byte range.
TEXT_UNIT_BYTES = 32 << 20
#: Bytes read (or decompressed) at a time.
TEXT_READ_BYTES = 8 << 20
#: Compressed text this module decompresses itself (whole-file units); other codecs go to Spark's reader.
TEXT_CODECS = (".gz", ".zst")
_SPARK_CODECS = (".bz2", ".deflate", ".lz4", ".snappy", ".br", ".xz", ".zlib")
#: A compressed file's weight for balancing tasks: its size times this (text compresses about this well).
_COMPRESSED_WEIGHT = 4


@dataclass(frozen=True)
class TextUnit:
    """The lines of the text file ``path`` (a Hadoop path string as listed) whose first byte lies in
    ``[start, stop)`` of its content; a compressed file is one unit, ``stop`` = -1 (every line). ``weight``
    estimates the unit's bytes (for balancing tasks). Lines end at ``\\n`` (a ``\\r`` before it stays in the line),
    as Spark's text source reads them with ``lineSep='\\n'``."""

    path: str
    start: int
    stop: int
    weight: int
    filesystem: Any = field(default=None, compare=False, repr=False)  # opens ``path`` (None: arrow_filesystem)


@dataclass
class TextPlan:
    """Work units of text files in input order (their line count is known only once read)."""

    units: list[TextUnit]
    rows: None = None


def plan_text(files: Sequence[tuple[str, int]], tasks: int | None, unit_bytes: int = TEXT_UNIT_BYTES,
              remote_files: Any = None) -> tuple[list[TextUnit] | None, str]:
    """``(units in input order, "")`` for text files given as ``(path, size)`` pairs, or ``(None, reason)`` when the
    run must go through Spark's reader (a filesystem pyarrow cannot open, a codec other than gzip and zstd).
    With ``tasks`` set, uncompressed files are cut finer until there are about ``tasks`` units. ``remote_files``
    opens paths with a scheme (see the module docstring).

    Example: a 10-byte ``a.txt`` with ``unit_bytes=4`` -> units ``(0, 4)``, ``(4, 8)``, ``(8, 10)``; a ``b.txt.gz``
    -> one unit ``(0, -1)``.
    """
    plain_total = 0
    kept = {}
    for path, size in files:
        name = path.lower()
        if name.endswith(_SPARK_CODECS):
            return None, f"{path} is compressed with a codec only Spark's reader decompresses"
        opened = arrow_filesystem(path, remote_files)
        if opened is None:
            return None, f"pyarrow cannot open {path}"
        filesystem, inner = opened
        try:
            info = filesystem.get_file_info(inner)
        except (pa.ArrowException, OSError) as exc:
            return None, f"pyarrow cannot open {path} ({exc})"
        if info.size != size:
            return None, f"pyarrow sees {path} as {info.size} bytes, Hadoop as {size}"
        kept[path] = filesystem if filesystem is remote_files else None
        if not name.endswith(TEXT_CODECS):
            plain_total += size
    if tasks:
        unit_bytes = max(1, min(unit_bytes, math.ceil(plain_total / tasks)))
    units: list[TextUnit] = []
    for path, size in files:
        if path.lower().endswith(TEXT_CODECS):
            units.append(TextUnit(path, 0, -1, max(1, size * _COMPRESSED_WEIGHT), kept[path]))
            continue
        for start in range(0, size, unit_bytes):
            stop = min(size, start + unit_bytes)
            units.append(TextUnit(path, start, stop, stop - start, kept[path]))
    return units, ""


def read_text_units(units: Sequence[TextUnit], text_name: str, malformed_name: str,
                    read_bytes: int = TEXT_READ_BYTES, located: bool = False) -> Iterator[pa.RecordBatch]:
    """Batches (at most ``BATCH_ROWS`` lines) of ``text_name`` (each line's bytes, binary) and ``malformed_name``
    (all false) for ``units`` in order: together, every line of every unit's file exactly once, in file order, the
    lines Spark's text source gives (:func:`pipelines.read.readers.split_lines`). A corrupt compressed file raises
    :class:`~tokenizer.errors.InputError` naming it. ``located``: yield ``(batch, BatchPlace)`` pairs instead, so
    that a bad line can be named by file and line number."""
    from tokenizer.packed import to_arrow

    for unit in units:
        done = 0  # lines of this unit in earlier blocks
        for data, offsets in _unit_line_blocks(unit, read_bytes):
            for first in range(0, len(offsets) - 1, BATCH_ROWS):
                last = min(first + BATCH_ROWS, len(offsets) - 1)
                batch = pa.RecordBatch.from_arrays(
                    [to_arrow(data, offsets[first:last + 1]), pa.array(_falses(last - first))],
                    [text_name, malformed_name])
                yield (batch, BatchPlace(unit, done + first)) if located else batch
            done += len(offsets) - 1


def read_work_units(units: Sequence[ParquetUnit] | Sequence[TextUnit], text_column: str, keep_schema: pa.Schema,
                    text_name: str, malformed_name: str, located: bool = False) -> Iterator[pa.RecordBatch]:
    """The batches of one task's units, all of one kind as a plan makes them: :func:`read_text_units` for text
    units (``text_column`` and ``keep_schema`` unused: lines have no columns), :func:`read_units` for Parquet
    units; ``located``: ``(batch, BatchPlace)`` pairs."""
    if units and isinstance(units[0], TextUnit):
        return read_text_units(units, text_name, malformed_name, located=located)
    return read_units(units, text_column, keep_schema, text_name, malformed_name, located=located)


def lines_before(unit: TextUnit, read_bytes: int = TEXT_READ_BYTES) -> int:
    """Lines of ``unit``'s file that start before the unit's first byte (those earlier units take): 0 for a unit at
    the start of its file or a compressed file, else 1 + the ``\\n`` bytes in ``[0, start - 1)``. Reads the file up
    to the unit. Example: ``a\\nbb\\nc`` with ``start`` 4 (inside ``bb``) -> 2 (``a`` and ``bb``; the unit's
    first line is ``c``, line 3)."""
    if unit.start <= 0 or unit.stop < 0:
        return 0
    filesystem, inner = arrow_filesystem(unit.path, unit.filesystem)
    count, remaining = 1, unit.start - 1
    with filesystem.open_input_file(inner) as handle:
        while remaining > 0:
            chunk = handle.read(min(read_bytes, remaining))
            if not chunk:
                break
            count += chunk.count(b"\n")
            remaining -= len(chunk)
    return count


def _unit_line_blocks(unit: TextUnit, read_bytes: int):
    filesystem, inner = arrow_filesystem(unit.path, unit.filesystem)
    if unit.stop < 0:
        with filesystem.open_input_stream(inner, compression=None) as raw:
            yield from line_blocks(_decompressed_chunks(raw, unit.path, read_bytes), None)
        return
    with filesystem.open_input_file(inner) as handle:
        position = unit.start
        if position > 0:
            handle.seek(position - 1)
            if handle.read(1) != b"\n":  # the line at `position` began in the previous unit: skip its rest
                while True:
                    chunk = handle.read(read_bytes)
                    if not chunk:
                        return
                    newline = chunk.find(b"\n")
                    if newline >= 0:
                        position += newline + 1
                        break
                    position += len(chunk)
        if position >= unit.stop:
            return
        handle.seek(position)
        yield from line_blocks(iter(lambda: handle.read(read_bytes), b""), unit.stop - position)


def line_blocks(chunks, limit: int | None):
    """Complete lines of a byte stream given as ``chunks``: ``(data uint8, offsets int64)`` blocks, newlines
    removed, of the lines whose first byte is before ``limit`` (stream offsets; ``None``: all). A last line without
    ``\\n`` counts when not empty. ``line_blocks([b"a\\nb", b"c\\n\\n"], None)`` -> lines ``a``, ``bc``, ````."""
    import numpy as np

    parts: list[bytes] = []  # the unfinished line (a huge line grows as a list: no quadratic copying)
    base = 0                 # stream offset of parts' first byte
    for chunk in chunks:
        chunk = bytes(chunk)
        last_newline = chunk.rfind(b"\n")
        if last_newline < 0:
            if chunk:
                parts.append(chunk)
            continue
        parts.append(chunk[:last_newline + 1])
        block = b"".join(parts)
        parts = [chunk[last_newline + 1:]] if last_newline + 1 < len(chunk) else []
        array = np.frombuffer(block, np.uint8)
        ends = np.flatnonzero(array == 10)
        starts = np.concatenate([[0], ends[:-1] + 1])
        count = len(ends) if limit is None else int(np.searchsorted(starts, limit - base, side="left"))
        if count:
            keep = np.ones(int(ends[count - 1]) + 1, dtype=bool)
            keep[ends[:count]] = False
            offsets = np.zeros(count + 1, np.int64)
            np.cumsum(ends[:count] - starts[:count], out=offsets[1:])
            yield array[:len(keep)][keep], offsets
        base += len(block)
        if limit is not None and (count < len(ends) or base >= limit):
            return
    tail = b"".join(parts)
    if tail and (limit is None or base < limit):
        yield np.frombuffer(tail, np.uint8), np.array([0, len(tail)], np.int64)


def _decompressed_chunks(raw, path: str, read_bytes: int):
    """Decompressed chunks of a ``.gz`` (every member) or ``.zst`` (every frame) stream; a corrupt or truncated
    file raises :class:`~tokenizer.errors.InputError` naming it and the fix, as the other readers do."""
    import gzip
    import zlib

    from tokenizer.errors import InputError

    if path.lower().endswith(".zst"):
        import zstandard

        try:
            with zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True) as reader:
                yield from iter(lambda: reader.read(read_bytes), b"")
        except zstandard.ZstdError as exc:
            raise InputError(f"{path}: not a valid zstd file ({exc}); re-create or remove it, or rename it if it "
                             "is not compressed") from None
        return
    try:
        with gzip.GzipFile(fileobj=raw, mode="rb") as reader:
            yield from iter(lambda: reader.read(read_bytes), b"")
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(f"cannot read input file {path} ({type(exc).__name__}: {exc}): it is corrupt, truncated "
                         "or not in the format its name says; re-create it, or remove it from --input") from None
