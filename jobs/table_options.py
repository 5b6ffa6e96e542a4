"""The input options that pick a table, its version and its rows, defined once for ``shardpiece tokenize`` and
``shardpiece train``: each one's config key, flag, type, help and config-file check. Both jobs build their flags
and config schemas from :data:`TABLE_OPTIONS` and check the values with
:func:`pipelines.read.tables.check_table_options`.

Example: ``[o.flag for o in TABLE_OPTIONS if o.flag]`` -> ``['--table-version', '--snapshot-id', '--as-of',
'--where']`` (``catalog`` is a config file's section only).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

#: every ``--input-format`` (the first three are files, the last two tables)
INPUT_FORMATS = ("text", "jsonl", "parquet", "delta", "iceberg")
INPUT_FORMAT_HELP = ("default: guessed from file names; delta: --input is the table's path; iceberg: --input is "
                     "its namespace.table name, the catalog in --config's catalog: section")


def _optional(check: Callable[[Any], bool]) -> Callable[[Any], bool]:
    return lambda value: value is None or check(value)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class TableOption:
    """One option: ``key`` (the config key), ``type`` (argparse's; ``None``: a config key only), ``metavar``,
    ``help``, ``check`` (of a config value; ``None`` allowed: the default) and ``expected`` (what the check wants,
    for its error)."""

    key: str
    type: Callable | None
    metavar: str | None
    help: str
    check: Callable[[Any], bool]
    expected: str

    @property
    def flag(self) -> str | None:
        return None if self.type is None else "--" + self.key.replace("_", "-")


TABLE_OPTIONS: tuple[TableOption, ...] = (
    TableOption("table_version", int, "N", "a Delta table's version to read (default: the current one)",
                _optional(_is_int), "an integer (a Delta table's version)"),
    TableOption("snapshot_id", int, "ID", "an Iceberg table's snapshot to read (default: the current one)",
                _optional(_is_int), "an integer (an Iceberg table's snapshot id)"),
    TableOption("as_of", str, "TIME", "read the table version current at this time (ISO 8601, e.g. "
                "2026-12-07T02:00:00Z)", _optional(lambda v: isinstance(v, str)),
                "an ISO 8601 time string, e.g. '2026-12-07T02:00:00Z'"),
    TableOption("where", str, "FILTER", "row filter for Parquet and tables, e.g. \"lang = 'en' AND quality >= 0.5\" "
                "(=, !=, <, <=, >, >=, IN, BETWEEN, IS [NOT] NULL, AND, OR, NOT)",
                _optional(lambda v: isinstance(v, str)), "a string (a row filter such as \"lang = 'en'\")"),
    TableOption("catalog", None, None, "the Iceberg catalog's properties (name, type, uri, warehouse, ...)",
                _optional(lambda v: isinstance(v, dict)), "a mapping of the Iceberg catalog's properties"),
)


def table_schema() -> dict[str, tuple[Callable[[Any], bool], str]]:
    """The config-file schema entries of :data:`TABLE_OPTIONS` (``{key: (check, expected)}``, as
    :func:`jobs.config.validate_config` takes them)."""
    return {option.key: (option.check, option.expected) for option in TABLE_OPTIONS}
