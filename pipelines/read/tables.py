"""Lakehouse tables as inputs: a Delta Lake or Apache Iceberg table at one version, as the data files that hold
exactly its rows, each read directly with pyarrow (on a task as on one machine; no JVM jar).

A table's rows at a version are decided by its log (Delta's ``_delta_log/``) or metadata (Iceberg's snapshots), not
by the files in its folder: a delete, an update, an overwrite or a compaction leaves replaced files behind. So the
table's own library (``deltalake``, ``pyiceberg``: the ``tables`` extra) lists the files of the version, and each file
is read whole. Rows that a library applies outside the files are refused with the feature's name: Delta deletion
vectors, Iceberg delete files (both libraries write copy-on-write rewrites instead, which need nothing).

* :func:`delta_snapshot` / :func:`iceberg_snapshot`: a :class:`TableSnapshot` (the files, their partition values,
  the table's schema) at the current version, a given one, or the one current at a time;
* :func:`read_table_file`: one file's rows with the table's columns: Delta's partition columns (kept in the path, not
  in the file) added as constants, columns the file predates (a schema change that added one) as nulls;
* :func:`refuse_table_folder`: a folder that holds a table given as plain Parquet is refused, naming the option.

Example (a Delta table written by ``deltalake.write_deltalake(path, table, partition_by=["lang"])``)::

    snapshot = delta_snapshot(path)
    snapshot.version, [f.partition for f in snapshot.files]   # -> 0, [(("lang", "en"),), (("lang", "zh"),)]
    read_table_file(snapshot.files[0], ["text", "lang"], snapshot.schema)   # a pyarrow Table
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass
from typing import Any, Mapping, Sequence
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.parquet as pq

from tokenizer.errors import ConfigError, InputError

TABLE_FORMATS = ("delta", "iceberg")
_INSTALL = "install the table libraries: pip install 'shardpiece[tables]' (deltalake, pyiceberg)"


@dataclass(frozen=True)
class TableFile:
    """One data file of a table version: ``path`` (a local path, or a URI for other filesystems), ``size`` in
    bytes, ``rows`` (``None`` when the table does not record it) and ``partition``: ``((column, value as text or
    None), ...)`` for the partition columns not stored in the file (Delta's)."""

    path: str
    size: int
    rows: int | None
    partition: tuple[tuple[str, str | None], ...] = ()


@dataclass(frozen=True)
class TableSnapshot:
    """A table at one version: ``kind`` (``delta`` | ``iceberg``), ``table`` (its path or catalog name),
    ``version`` (Delta's version, Iceberg's snapshot id), ``files``, ``schema`` (every column, partition columns
    included) and ``timestamp_ms`` of the version's commit (``None`` when unknown)."""

    kind: str
    table: str
    version: int
    files: tuple[TableFile, ...]
    schema: pa.Schema
    timestamp_ms: int | None = None

    def describe(self) -> dict[str, Any]:
        """What a manifest records: ``{"format", "table", "version", "files", "rows"}``."""
        rows = [f.rows for f in self.files]
        return {"format": self.kind, "table": self.table, "version": self.version, "files": len(self.files),
                "rows": None if None in rows else sum(rows)}


def local_path(uri: str) -> str:
    """A ``file:`` URI's local path (percent-decoded), other strings unchanged:
    ``local_path("file:///d/t/lang=en%20us/p.parquet")`` -> ``'/d/t/lang=en us/p.parquet'``."""
    if uri.startswith("file:"):
        return unquote(urlparse(uri).path)
    return uri


def _as_of_datetime(as_of: str) -> dt.datetime:
    """``--as-of`` (ISO 8601; a time without a zone is UTC) as an aware datetime."""
    try:
        moment = dt.datetime.fromisoformat(as_of.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"--as-of {as_of!r}: give an ISO 8601 time, e.g. 2026-12-07T02:00:00Z") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.timezone.utc)


# ----------------------------------------------------------------------------------------------------- Delta Lake
def delta_snapshot(path: str, version: int | None = None, as_of: str | None = None) -> TableSnapshot:
    """The Delta table at ``path`` at ``version`` (or the version current at ``as_of``; default: the latest)."""
    try:
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError
    except ImportError:
        raise ConfigError(f"--input-format delta needs the deltalake package: {_INSTALL}") from None
    if version is not None and as_of is not None:
        raise ConfigError("--table-version and --as-of: give one of them")
    moment = None if as_of is None else _as_of_datetime(as_of)
    try:
        table = DeltaTable(path, version=version)
        if moment is not None:
            table.load_as_version(moment)
    except TableNotFoundError:
        raise InputError(f"{path} is not a Delta table (no _delta_log/ there): check the path, or pass the "
                         "input format its files have") from None
    except Exception as exc:  # a version or time the log does not have: the library's own words
        if version is None and as_of is None:
            raise
        wanted = f"version {version}" if version is not None else f"--as-of {as_of}"
        raise InputError(f"Delta table {path} has no {wanted} ({exc}): give a version its log holds (shardpiece "
                         "inspect shows the output's last one)") from None
    if "deletionVectors" in (table.protocol().reader_features or []):
        vectors = pa.table(table.deletion_vectors())
        if vectors.num_rows:
            raise InputError(f"Delta table {path} (version {table.version()}) has deletion vectors, which are not "
                             "applied when its files are read directly: rewrite the affected files (OPTIMIZE, or "
                             "REORG TABLE ... APPLY (PURGE)) and run again")
    actions = pa.table(table.get_add_actions(flatten=True))
    partitions = [name for name in actions.column_names if name.startswith("partition.")]
    uris = {os.path.basename(local_path(uri)): uri for uri in table.file_uris()}
    files = []
    for row in actions.to_pylist():
        name = os.path.basename(unquote(row["path"]))
        uri = uris.get(name) or os.path.join(table.table_uri, row["path"])
        files.append(TableFile(local_path(uri), int(row["size_bytes"]), row.get("num_records"),
                               tuple((p[len("partition."):], None if row[p] is None else str(row[p]))
                                     for p in partitions)))
    history = table.history(1)
    stamp = history[0].get("timestamp") if history else None
    return TableSnapshot("delta", path, int(table.version()), tuple(sorted(files, key=lambda f: f.path)),
                         pa.schema(table.schema().to_arrow()), stamp)


# --------------------------------------------------------------------------------------------------- Apache Iceberg
def load_iceberg_table(name: str, catalog: Mapping[str, Any]):
    """The pyiceberg ``Table`` ``name`` (``namespace.table``) of the catalog whose properties are ``catalog`` (the
    config file's ``catalog:`` section, e.g. ``{"name": "lake", "type": "sql", "uri": "sqlite:///c.db",
    "warehouse": "file:///w"}``)."""
    try:
        from pyiceberg.catalog import load_catalog
        from pyiceberg.exceptions import NoSuchTableError
    except ImportError:
        raise ConfigError(f"--input-format iceberg needs the pyiceberg package: {_INSTALL}") from None
    if not catalog:
        raise ConfigError("--input-format iceberg needs the catalog: a 'catalog:' section in --config with the "
                          "catalog's properties (name, type, uri, warehouse, ...)")
    properties = {str(k): str(v) for k, v in catalog.items() if k != "name"}
    try:
        return load_catalog(str(catalog.get("name", "default")), **properties).load_table(name)
    except NoSuchTableError:
        raise InputError(f"Iceberg table {name!r} is not in the catalog: check the name (namespace.table)") from None


def iceberg_snapshot(name: str, catalog: Mapping[str, Any], snapshot_id: int | None = None,
                     as_of: str | None = None) -> TableSnapshot:
    """The Iceberg table ``name`` of ``catalog`` (:func:`load_iceberg_table`) at ``snapshot_id`` (or the snapshot
    current at ``as_of``; default: the current)."""
    if snapshot_id is not None and as_of is not None:
        raise ConfigError("--snapshot-id and --as-of: give one of them")
    return loaded_iceberg_snapshot(load_iceberg_table(name, catalog), name, snapshot_id, as_of)


def loaded_iceberg_snapshot(table, name: str, snapshot_id: int | None = None,
                            as_of: str | None = None) -> TableSnapshot:
    """:func:`iceberg_snapshot` of a pyiceberg ``Table`` already loaded (several snapshots of one table read with
    one catalog lookup)."""
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    if as_of is not None:
        moment = int(_as_of_datetime(as_of).timestamp() * 1000)
        found = table.snapshot_as_of_timestamp(moment)
        if found is None:
            raise InputError(f"Iceberg table {name!r} has no snapshot at or before --as-of {as_of}")
        snapshot_id = found.snapshot_id
    snapshot = table.snapshot_by_id(snapshot_id) if snapshot_id is not None else table.current_snapshot()
    if snapshot is None:
        if snapshot_id is not None:
            raise InputError(f"Iceberg table {name!r} has no snapshot {snapshot_id}: give one its history holds")
        return TableSnapshot("iceberg", name, 0, (), schema_to_pyarrow(table.schema(), include_field_ids=False))
    files = []
    for task in table.scan(snapshot_id=snapshot.snapshot_id).plan_files():
        if task.delete_files:
            raise InputError(f"Iceberg table {name!r} (snapshot {snapshot.snapshot_id}) has delete files for "
                             f"{task.file.file_path}, which are not applied when its files are read directly: "
                             "rewrite the data files (rewrite_data_files) and run again")
        files.append(TableFile(local_path(task.file.file_path), int(task.file.file_size_in_bytes),
                               int(task.file.record_count)))
    schemas = {schema.schema_id: schema for schema in table.metadata.schemas}
    schema = schema_to_pyarrow(schemas.get(snapshot.schema_id, table.schema()), include_field_ids=False)
    return TableSnapshot("iceberg", name, int(snapshot.snapshot_id), tuple(sorted(files, key=lambda f: f.path)),
                         schema, int(snapshot.timestamp_ms))


def open_snapshot(input_format: str, table: str, catalog: Mapping[str, Any] | None = None,
                  table_version: int | None = None, snapshot_id: int | None = None,
                  as_of: str | None = None) -> TableSnapshot:
    """The version of the table ``table`` (a Delta table's path, an Iceberg table's ``namespace.table`` in
    ``catalog``) that the options pick: :func:`delta_snapshot` or :func:`iceberg_snapshot`."""
    if input_format == "delta":
        return delta_snapshot(table, table_version, as_of)
    if input_format == "iceberg":
        return iceberg_snapshot(table, catalog or {}, snapshot_id, as_of)
    raise ConfigError(f"input format {input_format!r} is no table format: use one of {', '.join(TABLE_FORMATS)}")


def check_table_options(input_format: str | None, inputs: Sequence[str], reader: str | None = None, *,
                        table_version: int | None = None, snapshot_id: int | None = None, as_of: str | None = None,
                        catalog: Mapping[str, Any] | None = None, where: str | None = None) -> None:
    """The checks of the table and row-filter options that ``tokenize`` and ``train`` share, before anything is
    read: each option only with the input it applies to, one table per run, and ``where``'s syntax. Raises a
    one-line :class:`ConfigError` naming the option. Example: ``check_table_options("parquet", ["d"],
    table_version=3)`` -> ``ConfigError("--table-version is for --input-format delta (a delta table)")``."""
    from pipelines.read.row_filter import parse_row_filter

    for name, value, kind in (("table_version", table_version, "delta"), ("snapshot_id", snapshot_id, "iceberg"),
                              ("catalog", catalog, "iceberg")):
        if value is not None and input_format != kind:
            raise ConfigError(f"--{name.replace('_', '-')} is for --input-format {kind} (a {kind} table)")
    if as_of is not None and input_format not in TABLE_FORMATS:
        raise ConfigError("--as-of picks a table version: use it with --input-format delta or iceberg")
    if input_format in TABLE_FORMATS:
        if len(inputs) != 1:
            what = "path" if input_format == "delta" else "name (namespace.table)"
            raise ConfigError(f"--input-format {input_format} reads one table: give its {what} as the one "
                              f"--input, not {len(inputs)}")
        if reader == "spark":
            raise ConfigError("reader: spark cannot read tables (their files are read with pyarrow); use reader: "
                              "auto")
    if where is not None:
        parse_row_filter(where)  # a syntax error: its own message
        if input_format in ("text", "jsonl") or reader == "spark":
            raise ConfigError("--where filters Parquet files and tables (read with pyarrow): not text or JSONL "
                              "input, nor reader: spark")


# ------------------------------------------------------------------------------------------------------- reading
def read_table_file(file: TableFile, columns: Sequence[str], schema: pa.Schema) -> pa.Table:
    """``columns`` of ``file`` as the table's ``schema`` types them (:func:`table_columns`)."""
    missing = [name for name in columns if name not in schema.names]
    if missing:
        raise InputError(f"column {missing[0]!r} is not in the table (its columns: {', '.join(schema.names)}): "
                         "pass the column that holds the text with --text-column NAME")
    stored = pq.ParquetFile(file.path).schema_arrow.names
    partition = dict(file.partition)
    table = pq.read_table(file.path, columns=[c for c in columns if c in stored and c not in partition])
    return pa.table(table_columns(table, file, columns, schema), names=list(columns))


def table_columns(read: pa.Table | pa.RecordBatch, file: TableFile, names: Sequence[str], schema: pa.Schema) -> list:
    """The arrays of columns ``names`` for rows ``read`` from ``file``, typed as the table's ``schema``: stored
    columns cast, partition columns (Delta keeps them in the path, not in the file) from ``file.partition``, columns
    the file predates (a schema change that added one) as nulls."""
    partition = dict(file.partition)
    arrays = []
    for name in names:
        field = schema.field(name)
        if name in partition:
            value = pa.array([partition[name]] * read.num_rows, pa.string())
            arrays.append(value if field.type == pa.string() else value.cast(field.type))
        elif name in read.schema.names:
            column = read.column(name)
            arrays.append(column if column.type == field.type else column.cast(field.type))
        else:
            arrays.append(pa.nulls(read.num_rows, field.type))
    return arrays


def table_folder_kind(path: str) -> str | None:
    """``"delta"`` when the local folder ``path`` holds a Delta table (``_delta_log/``), ``"iceberg"`` when it
    holds an Iceberg table's ``metadata/*.metadata.json``, else ``None``."""
    if not os.path.isdir(path):
        return None
    if os.path.isdir(os.path.join(path, "_delta_log")):
        return "delta"
    metadata = os.path.join(path, "metadata")
    if os.path.isdir(metadata) and any(n.endswith(".metadata.json") for n in os.listdir(metadata)):
        return "iceberg"
    return None


def refuse_table_folder(inputs: Sequence[str], input_format: str | None) -> None:
    """Raise :class:`InputError` when a local input folder holds a table and the format is not the table's (its
    folder keeps files that deletes, updates and compactions replaced, so reading it as files would tokenize removed
    rows and double rewritten ones), or when ``--input-format delta`` names a local folder that holds none."""
    for path in inputs:
        kind = table_folder_kind(path)
        if input_format == "delta" and kind != "delta" and os.path.isdir(path):
            raise InputError(f"{path} is no Delta table (it has no _delta_log/ folder): give the table's own folder "
                             "with --input-format delta, or the format its files have")
        if kind is not None and input_format != kind:
            option = "--input-format delta (the table's path)" if kind == "delta" else \
                "--input-format iceberg (the table's name, with its catalog in --config)"
            raise InputError(f"{path} is {'a Delta' if kind == 'delta' else 'an Iceberg'} table: pass {option}; "
                             "read as files it would give rows its deletes, updates and compactions removed")
