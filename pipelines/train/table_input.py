"""Training from a table (``--input-format delta|iceberg``) or from Parquet files with a row filter (``--where``):
the version read, pinned once per run, as the work units both engines read with pyarrow
(:mod:`pipelines.read.table_units`), and what the run's key and manifest record of it.

The table's version is decided once, on the driver, before anything is read: the fingerprint, the work
directory's key and every read of the run see the same files, so a commit to the table while a run goes on, or a
time-travel option, can never mix two versions in one model, and a resumed run finds the stages of its own
version only. A Delta or Iceberg data file is never rewritten in place (a new version adds new files), so a table
version is fingerprinted by the table, the version and its files' paths and sizes without reading them; plain
Parquet files are fingerprinted by content (:func:`pipelines.manifest.input_fingerprint`), as any input.

Example (a Delta table at version 3, filtered)::

    table = table_input({"input_format": "delta", "input": ["/lake/docs"], "where": "lang = 'en'",
                         "text_column": "text"})
    table.key()    # -> {"format": "delta", "table": "/lake/docs", "version": 3, "where": "lang = 'en'"}
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from pipelines.read.table_units import TableUnit, files_snapshot, plan_table
from pipelines.read.tables import TABLE_FORMATS, TableSnapshot, open_snapshot
from tokenizer.errors import ConfigError, InputError


@dataclass
class TableInput:
    """``snapshot`` (a table version, or Parquet files as a table of kind ``parquet``), its work ``units``,
    ``where`` (the filter in its normal spelling, or ``None``) and the ``text_column`` read."""

    snapshot: TableSnapshot
    units: list[TableUnit]
    where: str | None
    text_column: str

    @property
    def is_table(self) -> bool:
        return self.snapshot.kind in TABLE_FORMATS

    @property
    def paths(self) -> list[str]:
        """The data files read, in reading order."""
        return [f.path for f in self.snapshot.files]

    @property
    def input_bytes(self) -> int:
        return sum(f.size for f in self.snapshot.files)

    @property
    def local_bytes(self) -> int | None:
        """:attr:`input_bytes` when every file is local (``--master auto`` may then train in this process), else
        ``None``."""
        return None if any("://" in path for path in self.paths) else self.input_bytes

    def key(self) -> dict[str, Any]:
        """What the work directory's key adds: the table, its version and the filter (``version`` is ``None``
        for Parquet files, whose content the input fingerprint covers)."""
        return {"format": self.snapshot.kind, "table": self.snapshot.table if self.is_table else None,
                "version": self.snapshot.version if self.is_table else None, "where": self.where}

    def fingerprint(self) -> dict[str, Any]:
        """A table version's input fingerprint, in :func:`pipelines.manifest.input_fingerprint`'s layout:
        ``files`` (path, size, ``hash`` None), ``total_bytes`` and ``digest``, SHA-256 over the table, its version
        and its files' names and sizes (``table`` and ``version`` given too)."""
        files = [{"path": f.path, "size": f.size, "hash": None} for f in self.snapshot.files]
        material = json.dumps({"format": self.snapshot.kind, "table": self.snapshot.table,
                               "version": self.snapshot.version, "files": [[f["path"], f["size"]] for f in files]},
                              sort_keys=True)
        return {"files": files, "total_bytes": self.input_bytes, "table": self.snapshot.table,
                "version": self.snapshot.version, "digest": "sha256:" + hashlib.sha256(material.encode()).hexdigest()}

    def describe(self) -> str:
        """``"Delta table /lake/docs at version 3 with --where (lang = 'en')"``: how an error names the selection."""
        what = {"delta": "Delta table", "iceberg": "Iceberg table"}.get(self.snapshot.kind)
        text = f"{what} {self.snapshot.table} at version {self.snapshot.version}" if what else \
            f"the Parquet files of --input ({len(self.snapshot.files)})"
        return text + (f" with --where {self.where}" if self.where else "")

    def check_selected(self, documents: int) -> None:
        """Raise the one-line :class:`InputError` when the selection gave no document to train on."""
        if documents:
            return
        fix = "check --where" if self.where else "check --text-column"
        if self.is_table:
            fix += ", and the version (--table-version, --snapshot-id, --as-of)"
        raise InputError(f"{self.describe()} gives no text to train on (no row selected has text in column "
                         f"{self.text_column!r}): {fix}")


def table_input(options: dict[str, Any], spark=None) -> TableInput | None:
    """The :class:`TableInput` of train ``options`` (``input_format``, ``input``, ``text_column``, ``where`` and
    the table options): a table's version, or the Parquet files of ``input`` when ``where`` is given (listed with
    ``spark``, ``None`` for local files); ``None`` for files without a filter. A missing text or filter column, a
    version the table does not have or a table without files is a one-line error naming the fix."""
    from pipelines.read.row_filter import parse_row_filter

    input_format, where = options.get("input_format"), options.get("where")
    if input_format in TABLE_FORMATS:
        snapshot = open_snapshot(input_format, options["input"][0], options.get("catalog"),
                                 options.get("table_version"), options.get("snapshot_id"), options.get("as_of"))
    elif where is None:
        return None
    else:
        from pipelines.read.readers import detect_format, list_input_files

        listed = list_input_files(spark, list(options["input"]))
        input_format = input_format or detect_format(listed.files + listed.empty_files)
        if input_format != "parquet":
            raise ConfigError(f"--where filters Parquet files and tables, not {input_format} input")
        if not listed.files:
            raise InputError(f"every file of --input {' '.join(options['input'])} is empty (0 bytes): check --input")
        snapshot = files_snapshot([(path, listed.sizes[path]) for path in listed.files])
    plan, _ = plan_table(snapshot, options["text_column"], [], where)
    table = TableInput(snapshot, plan.units, parse_row_filter(where).text if where else None,
                       options["text_column"])
    if not plan.units:
        raise InputError(f"{table.describe()} holds no rows: check the table"
                         + (" and its version (--table-version, --snapshot-id, --as-of)" if table.is_table else ""))
    return table
