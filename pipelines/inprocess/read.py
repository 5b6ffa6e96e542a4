r"""Reading a local corpus in this process with pyarrow, without Spark or a JVM: the documents and the
:class:`~pipelines.read.readers.ReadStats` that Spark's :func:`~pipelines.read.readers.read_corpus` and
``Corpus.compute_stats()`` give for the same input, kept as Arrow arrays.

Inputs are local paths, globs, directories or ``file:`` URIs, listed exactly as the Spark path lists them
(:func:`list_local_inputs`); files listed elsewhere (the Beam engine's tasks: paths on any filesystem Beam's
``FileSystems`` reads) are read by :func:`read_listed_corpus` through the opener given. Formats as on Spark:

* ``text`` — lines split at ``\n`` only (:mod:`pipelines.read.arrow_read`'s text units), plain, ``.gz`` or ``.zst``;
  other codecs (``.bz2``, ``.xz``, ...) are a :class:`~tokenizer.errors.ConfigError`: those go through Spark;
* ``jsonl`` — lines of only spaces skipped, the field read as Spark's ``get_json_object`` reads it
  (:mod:`pipelines.inprocess.jsonl`);
* ``parquet`` — the text column (string or binary) as its bytes, read with ``pyarrow.parquet``.

Documents are the non-null, non-empty rows, in input order, in arrays of at most
:data:`~pipelines.read.arrow_read.BATCH_ROWS`; the held-out ones (``holdout_fraction``) are those Spark's
``split_holdout`` holds out (:func:`tokenizer.kernels.xxhash.held_out_documents`). This module never imports pyspark.

Example (hand-checkable): a file ``a.txt`` holding ``b"a\n\nb\xff\n"`` ->
``read_local_corpus(["a.txt"])``: ``training`` one array ``[b"a", b"b\xff"]``, ``held_out`` ``[]``, ``stats``
``rows=3, empty_rows=1, invalid_utf8_rows=1, documents=2, document_bytes=3, input_bytes=6``.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa

from pipelines.read.arrow_read import BATCH_ROWS, has_scheme, plan_text, read_text_units
from pipelines.read.readers import (FORMATS, TEXT, ReadStats, _no_match, detect_format, list_local_files,
                                    missing_column_error)
from pipelines.read.shards import binary_buffers, check_holdout_fraction
from pipelines.train.bad_rows import TrainBadRows, check_bad_rows
from tokenizer.bad_rows import invalid_utf8_mask
from tokenizer.errors import ConfigError, InputError
from tokenizer.packed import from_arrow

_KEY_SAMPLE = 50        # field names a missing-field error lists, as Spark's check collects


@dataclass
class LocalCorpus:
    """A corpus read in this process.

    ``training``: binary (``large_binary`` past 2 GiB) Arrow arrays of the training documents, input order, no
    nulls, no empty documents, at most ``BATCH_ROWS`` each; ``held_out``: the held-out documents, input order;
    ``stats``: what Spark's ``compute_stats`` gives for the same input (``documents`` counts both parts);
    ``input_format``: ``"text"``, ``"jsonl"`` or ``"parquet"``; ``files``: the local paths read, sorted as the
    Spark listing sorts them (empty files are only counted)."""

    training: list[pa.Array]
    held_out: list[bytes]
    stats: ReadStats
    input_format: str
    files: list[str]

    def batches(self) -> Iterator[pa.RecordBatch]:
        """The training documents as record batches of one ``text`` column, in input order (again at each call).
        Example: training ``[pa.array([b"a", b"b"])]`` -> one batch, ``text: binary``, 2 rows."""
        for array in self.training:
            yield pa.RecordBatch.from_arrays([array], [TEXT])

    @property
    def training_bytes(self) -> int:
        """Bytes of all training documents."""
        return sum(_value_bytes(array) for array in self.training)


def list_local_inputs(inputs: Sequence[str] | str) -> tuple[list[tuple[str, int]], list[str]] | None:
    """``([(path, bytes) of the non-empty files], [the empty files])`` for local inputs: the files, in the order,
    that :func:`pipelines.read.readers.list_input_files` lists (``file:`` prefix dropped); ``None`` when some input
    is not one the local lister takes (``s3a://``, ``hdfs://``, or characters whose Hadoop glob meaning differs
    such as ``{a,b}`` or a space): read those with Spark. An input matching nothing raises the Spark path's
    :class:`InputError`. Example: a directory ``d`` holding ``b.txt`` (3 bytes), ``a.txt`` (0) and ``_SUCCESS`` ->
    ``([("/abs/d/b.txt", 3)], ["/abs/d/a.txt"])``."""
    if isinstance(inputs, str):
        inputs = [inputs]
    if not inputs:
        raise InputError("no input given: pass --input PATH [PATH ...] (files, globs or directories)")
    listings = [list_local_files(str(spec)) for spec in inputs]
    if any(listing is None for listing in listings):
        return None
    sizes: dict[str, int] = {}
    for spec, listing in zip(inputs, listings):
        if not listing:
            raise _no_match(spec)
        sizes.update((path, size) for path, (size, _) in listing.items())
    files = [(_local(path), size) for path, size in sorted(sizes.items()) if size > 0]
    return files, [_local(path) for path, size in sorted(sizes.items()) if size == 0]


def read_local_corpus(inputs: Sequence[str] | str, input_format: str | None = None, text_column: str = TEXT,
                      holdout_fraction: float = 0.0, bad_rows: TrainBadRows | None = None) -> LocalCorpus:
    """Read local ``inputs`` (paths, globs, directories) into a :class:`LocalCorpus`: the documents and statistics
    Spark's ``read_corpus(...)`` and ``compute_stats()`` give, with ``holdout_fraction`` (0..0.5) of the documents
    held out as Spark's ``split_holdout`` holds them out. ``input_format`` is guessed from the file names when
    ``None``. Errors are the Spark path's (a missing column or field, an input matching nothing); an input that is
    not local, or compressed with a codec other than gzip and zstd, is a :class:`ConfigError` saying to run with
    Spark. ``bad_rows`` (:class:`~pipelines.train.bad_rows.TrainBadRows`, default ``keep``: every document read,
    nothing is an error) decides what happens to bad rows: ``skip`` drops the documents that are not valid UTF-8
    for a character model (``documents`` and ``document_bytes`` then leave them out; ``invalid_utf8_rows`` counts
    them), ``error`` stops at the first batch holding a bad row with the one-line error naming its file and line."""
    check_holdout_fraction(holdout_fraction)
    if input_format is not None and input_format not in FORMATS:
        raise InputError(f"unknown input format {input_format!r}: use one of {', '.join(FORMATS)}")
    listed = list_local_inputs(inputs)
    if listed is None:
        raise ConfigError(f"--input {' '.join(map(str, [inputs] if isinstance(inputs, str) else inputs))}: the "
                          "in-process reader takes local paths only (and globs of * and ?); run with Spark "
                          "(--master local[*] or a cluster URL) or --engine beam for other filesystems or patterns")
    return read_listed_corpus(*listed, input_format, text_column, holdout_fraction, bad_rows)


def read_listed_corpus(files: list[tuple[str, int]], empty: list[str], input_format: str | None = None,
                       text_column: str = TEXT, holdout_fraction: float = 0.0, bad_rows: TrainBadRows | None = None,
                       remote_files=None) -> LocalCorpus:
    """:func:`read_local_corpus` of files already listed: ``files`` ``(path, bytes)`` (non-empty, in reading
    order) and ``empty`` paths, as :func:`list_local_inputs` gives them, or paths with a scheme that
    ``remote_files`` opens (:class:`pipelines.beam.files.BeamFiles`: the Beam engine's tasks)."""
    check_holdout_fraction(holdout_fraction)
    names = [path if has_scheme(path) else "file:" + path for path, _ in files]  # as Spark names them in errors
    input_format = input_format or detect_format(names + [path if has_scheme(path) else "file:" + path
                                                          for path in empty])
    stats = ReadStats(files=len(files) + len(empty), empty_files=len(empty), input_bytes=sum(n for _, n in files))
    split = _Split(holdout_fraction)
    fields = _FieldNames(text_column)
    rule = bad_rows or TrainBadRows("keep")
    dropped = 0
    if files:
        if input_format == "parquet":
            arrays = ((array, malformed, None)
                      for array, malformed in _parquet_arrays(files, names, text_column, remote_files))
        elif input_format == "text":
            arrays = ((lines, 0, None) for lines in _line_arrays(files, remote_files))
        else:
            arrays = _jsonl_arrays(_line_arrays(files, remote_files), text_column, fields)
        dropped = _read_arrays(arrays, stats, split, rule, [path for path, _ in files], input_format, text_column,
                               remote_files)
    stats.documents = stats.rows - stats.null_rows - stats.empty_rows - stats.malformed_rows - dropped
    if (input_format == "jsonl" and stats.rows > stats.malformed_rows
            and stats.null_rows == stats.rows - stats.malformed_rows and not fields.found):
        raise missing_column_error(text_column, sorted(fields.sample), "field", names[:3])
    return LocalCorpus(split.training, split.held_out, stats, input_format, [path for path, _ in files])


def read_table_corpus(table, holdout_fraction: float = 0.0, bad_rows: TrainBadRows | None = None) -> LocalCorpus:
    """Read a table version or filtered Parquet files (a :class:`pipelines.train.table_input.TableInput`: its
    units, :func:`pipelines.read.table_units.read_table_units`) into a :class:`LocalCorpus`, counted, split and
    with bad rows handled as :func:`read_local_corpus` does; ``input_format`` is the table's kind (``delta``,
    ``iceberg``; ``parquet`` for files), ``files`` its data files in reading order."""
    from pipelines.read.table_units import read_table_units

    check_holdout_fraction(holdout_fraction)
    stats = ReadStats(files=len(table.paths), input_bytes=table.input_bytes)
    split, rule = _Split(holdout_fraction), bad_rows or TrainBadRows("keep")
    batches = read_table_units(table.units, table.text_column, pa.schema([]), TEXT, "malformed")
    arrays = ((_as_binary(batch.column(0)), 0, None) for batch in batches)
    dropped = _read_arrays(arrays, stats, split, rule, table.paths, "parquet", table.text_column)
    stats.documents = stats.rows - stats.null_rows - stats.empty_rows - dropped
    return LocalCorpus(split.training, split.held_out, stats, table.snapshot.kind, table.paths)


def _read_arrays(arrays, stats: ReadStats, split: "_Split", rule: TrainBadRows, paths: list[str], input_format: str,
                 text_column: str, remote_files=None) -> int:
    """Count and split every ``(array, malformed rows, line_invalid)`` of ``arrays`` (:func:`_account`), stopping
    at the first batch with a bad row under ``--on-bad-row error`` (its error names the row in ``paths``, read as
    ``input_format``; ``remote_files`` opens those with a scheme). Returns the documents dropped."""
    dropped = 0
    for array, malformed, line_invalid in arrays:
        dropped += _account(array, malformed, stats, split, rule, line_invalid)
        if rule.policy == "error" and rule.bad_counts(stats.to_dict()):  # stop at the first bad batch
            check_bad_rows(stats.to_dict(), rule, paths, input_format, text_column, remote_files=remote_files)
    return dropped


def _local(path: str) -> str:
    return path[len("file:"):] if path.startswith("file:") else path


def _value_bytes(array: pa.Array) -> int:
    _, offsets = binary_buffers(array)
    return int(offsets[-1] - offsets[0])


# ---------------------------------------------------------------------------------------------- counting
class _Split:
    """Documents into training arrays and held-out bytes, by Spark's ``split_holdout`` rule."""

    def __init__(self, fraction: float):
        self.fraction = fraction
        self.training: list[pa.Array] = []
        self.held_out: list[bytes] = []

    def add(self, documents: pa.Array) -> None:
        if self.fraction > 0 and len(documents):
            from tokenizer.kernels.xxhash import held_out_documents

            held = held_out_documents(*binary_buffers(documents), self.fraction)
            if held.any():
                self.held_out.extend(documents.filter(pa.array(held)).to_pylist())
                documents = documents.filter(pa.array(~held))
        if len(documents):
            self.training.append(documents)


def _account(array: pa.Array, malformed: int, stats: ReadStats, split: _Split, rule: TrainBadRows,
             line_invalid: np.ndarray | None = None) -> int:
    """Count one batch's rows as ``Corpus.compute_stats`` does (``array``: binary, null for null and malformed
    rows; ``malformed`` of its nulls are malformed rows; ``line_invalid``: for JSON lines, which rows' lines are not
    valid UTF-8) and pass its documents to ``split``, without those ``rule`` drops. Returns the documents dropped."""
    if not len(array):
        return 0
    lengths = np.diff(from_arrow(array)[1])  # null rows' lengths are masked out below
    valid = np.asarray(array.is_valid()) if array.null_count else np.ones(len(array), bool)
    documents = valid & (lengths > 0)
    stats.rows += len(array)
    stats.malformed_rows += malformed
    stats.null_rows += array.null_count - malformed
    stats.empty_rows += int(np.count_nonzero(valid & (lengths == 0)))
    if line_invalid is not None:
        invalid = documents & line_invalid
    else:
        invalid = np.zeros(len(array), bool)
        if documents.all():
            invalid = invalid_utf8_mask(*binary_buffers(array))
        elif documents.any():
            invalid[documents] = invalid_utf8_mask(*binary_buffers(array.filter(pa.array(documents))))
    stats.invalid_utf8_rows += int(np.count_nonzero(invalid))
    dropped = 0
    if rule.drops_invalid_utf8 and invalid.any():
        documents &= ~invalid
        dropped = int(np.count_nonzero(invalid))
    stats.document_bytes += int(lengths[documents].sum())
    if not documents.all():
        array = array.filter(pa.array(documents))
    split.add(array)
    return dropped


def invalid_utf8_rows(array: pa.Array) -> int:
    """Rows of a binary array without nulls that are not valid UTF-8, as Spark's ``is_valid_utf8`` counts them
    (:func:`tokenizer.bad_rows.invalid_utf8_mask`). ``invalid_utf8_rows(pa.array([b"ok", b"\\xe4\\xb8",
    b"\\xad"]))`` -> ``2`` (though their bytes join into valid UTF-8)."""
    if not len(array):
        return 0
    return int(np.count_nonzero(invalid_utf8_mask(*binary_buffers(array))))


# ---------------------------------------------------------------------------------------------- formats
def _line_arrays(files: list[tuple[str, int]], remote_files=None) -> Iterator[pa.Array]:
    """The lines of text files (binary arrays of at most ``BATCH_ROWS``), in file and line order."""
    units, reason = plan_text(files, None, remote_files=remote_files)
    if units is None:
        raise ConfigError(f"the in-process reader cannot read this input ({reason}): run with Spark "
                          "(--master local[*] or a cluster URL), or recompress the files as .gz or .zst")
    for batch in read_text_units(units, TEXT, "malformed"):
        yield batch.column(0)


class _FieldNames:
    """Whether any well-formed JSON line names the text field, and a sample of the names seen (for the error)."""

    def __init__(self, field: str):
        self.field, self.found, self.sample = field, False, {}

    def add(self, names: list[str]) -> None:
        if not self.found:
            self.found = self.field in names
            for name in names:
                if len(self.sample) < _KEY_SAMPLE:
                    self.sample.setdefault(name, None)


def _jsonl_arrays(lines: Iterator[pa.Array], text_column: str, fields: _FieldNames
                  ) -> Iterator[tuple[pa.Array, int, np.ndarray]]:
    """``(field values: binary, malformed rows, whose lines are not valid UTF-8)`` per batch of JSON lines; lines of
    only spaces are no rows (Spark keeps a line when ``length(trim(line)) > 0``, and ``trim`` strips spaces only)."""
    from pipelines.inprocess.jsonl import json_field

    if "'" in text_column or "\\" in text_column:
        raise InputError(f"--text-column {text_column!r}: field names with quotes or backslashes are not supported")
    for array in lines:
        values, malformed, rows = [], 0, []
        for index, line in enumerate(array.to_pylist()):
            if not line.strip(b" "):
                continue
            value, names = json_field(line, text_column)
            if names is None:
                malformed += 1
            else:
                fields.add(names)
            values.append(value)
            rows.append(index)
        invalid = invalid_utf8_mask(*binary_buffers(array))[np.asarray(rows, dtype=np.int64)]
        yield pa.array(values, pa.binary()), malformed, invalid


def _parquet_arrays(files: list[tuple[str, int]], names: list[str], text_column: str, remote_files=None
                    ) -> Iterator[tuple[pa.Array, int]]:
    """The text column of Parquet files as binary arrays, in file, row group and row order. The first file's schema
    decides, as Spark's reader takes one file's: a later file without the column gives null rows."""
    import pyarrow.parquet as pq

    for index, ((path, _), name) in enumerate(zip(files, names)):
        try:
            opened = contextlib.nullcontext(path) if remote_files is None or not has_scheme(path) else \
                remote_files.open_input_file(path)
            with opened as source, pq.ParquetFile(source) as parquet:
                schema = parquet.schema_arrow
                if text_column not in schema.names:
                    if index == 0:
                        raise missing_column_error(text_column, schema.names, "column", names[:3])
                    for start in range(0, parquet.metadata.num_rows, BATCH_ROWS):
                        yield pa.nulls(min(BATCH_ROWS, parquet.metadata.num_rows - start), pa.binary()), 0
                    continue
                kind = spark_type_name(schema.field(text_column).type)
                if kind not in ("string", "binary"):
                    raise InputError(f"column {text_column!r} has type {kind}, not string or binary: pass the "
                                     "column that holds the text with --text-column NAME"
                                     + (f" (in {name})" if index else ""))
                for batch in parquet.iter_batches(batch_size=BATCH_ROWS, columns=[text_column], use_threads=False):
                    yield _as_binary(batch.column(0)), 0
        except (pa.ArrowException, OSError) as exc:
            raise InputError(f"cannot read input file {name} as Parquet ({type(exc).__name__}: {exc}): it is "
                             "corrupt, truncated or not Parquet; re-create it, or remove it from --input") from None


def _as_binary(array: pa.Array) -> pa.Array:
    """A string or binary column's values as ``binary`` (``large_binary`` for the large types), without copying
    where Arrow's layouts agree."""
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    if pa.types.is_string(array.type):
        return array.view(pa.binary())
    if pa.types.is_large_string(array.type):
        return array.view(pa.large_binary())
    if pa.types.is_binary(array.type) or pa.types.is_large_binary(array.type):
        return array
    return array.cast(pa.binary())


_SPARK_NAMES = {pa.int8(): "tinyint", pa.int16(): "smallint", pa.int32(): "int", pa.int64(): "bigint",
                pa.uint8(): "smallint", pa.uint16(): "int", pa.uint32(): "bigint", pa.uint64(): "decimal(20,0)",
                pa.float32(): "float", pa.float64(): "double", pa.bool_(): "boolean", pa.date32(): "date",
                pa.date64(): "date", pa.null(): "void"}


def spark_type_name(data_type: pa.DataType) -> str:
    """The name Spark's reader gives (``simpleString``) a Parquet column pyarrow reads as ``data_type``: text types
    -> ``"string"`` or ``"binary"``, ``pa.int64()`` -> ``"bigint"``, ``pa.list_(pa.int32())`` -> ``"array<int>"``;
    an Arrow type not mapped here keeps its Arrow name."""
    types = pa.types
    if types.is_dictionary(data_type):
        return spark_type_name(data_type.value_type)
    if types.is_string(data_type) or types.is_large_string(data_type) or types.is_string_view(data_type):
        return "string"
    if (types.is_binary(data_type) or types.is_large_binary(data_type) or types.is_binary_view(data_type)
            or types.is_fixed_size_binary(data_type)):
        return "binary"
    if data_type in _SPARK_NAMES:
        return _SPARK_NAMES[data_type]
    if types.is_decimal(data_type):
        return f"decimal({data_type.precision},{data_type.scale})"
    if types.is_timestamp(data_type):
        return "timestamp" if data_type.tz else "timestamp_ntz"
    if types.is_list(data_type) or types.is_large_list(data_type) or types.is_fixed_size_list(data_type):
        return f"array<{spark_type_name(data_type.value_type)}>"
    if types.is_map(data_type):
        return f"map<{spark_type_name(data_type.key_type)},{spark_type_name(data_type.item_type)}>"
    if types.is_struct(data_type):
        return "struct<" + ",".join(f"{f.name}:{spark_type_name(f.type)}" for f in data_type) + ">"
    return str(data_type)


def local_input_bytes(inputs: Sequence[str]) -> int | None:
    """The total size of ``inputs`` when every one is a local file the in-process reader opens (text, JSONL,
    Parquet; plain, ``.gz`` or ``.zst``), else ``None``; an input that matches nothing counts as 0 (the reader
    then says so). ``local_input_bytes(["s3a://b/x.txt"])`` -> ``None``."""
    from pipelines.read.arrow_read import _SPARK_CODECS

    try:
        listed = list_local_inputs(list(inputs))
    except InputError:
        return 0
    if listed is None:
        return None
    files, _ = listed
    if any(path.endswith(_SPARK_CODECS) for path, _ in files):
        return None
    return sum(size for _, size in files)
