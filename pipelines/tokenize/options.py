"""The tokenize job's options: :class:`TokenizeConfig` (the CLI flags and YAML keys), the column names and policies
its steps share, the schema of a task's result row, and the options a task reads or the summary records."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import pyarrow as pa

from pipelines.tokenize.writers import check_format, check_parquet_codec
from tokenizer.bad_rows import BAD_ROW_KINDS, BAD_ROW_POLICIES
from tokenizer.errors import ConfigError

__all__ = ["BAD_ROW_KINDS", "BAD_ROW_POLICIES", "MALFORMED", "READERS", "RESULT_SCHEMA", "TASK_OPTIONS", "TEXT",
           "TokenizeConfig", "resolved_options", "task_options"]

TEXT = "__text"
MALFORMED = "__malformed"
READERS = ("auto", "arrow", "spark")
INPUT_FORMATS = ("text", "jsonl", "parquet", "delta", "iceberg")
#: One row of counts per task (both read paths); the Spark path's ``mapInArrow`` gets it as a Spark schema.
RESULT_SCHEMA = pa.schema([("partition", pa.int32()), ("attempt", pa.int64()), ("stem", pa.string()),
                           ("documents", pa.int64()), ("tokens", pa.int64()), ("bytes", pa.int64()),
                           ("file_sizes", pa.string()), ("stats", pa.string())])


@dataclass
class TokenizeConfig:
    """Everything a tokenize run needs; the CLI flags and the YAML keys have these names (``-`` for ``_``)."""

    model: str
    inputs: list[str]
    output: str
    input_format: str | None = None          # text | jsonl | parquet | delta | iceberg; default: from file names
    #: Tables (``delta``: the input is the table's path; ``iceberg``: its ``namespace.table`` name in ``catalog``,
    #: the catalog's properties, given in the config file): the version read, by default the current one.
    table_version: int | None = None          # Delta's version
    snapshot_id: int | None = None            # Iceberg's snapshot id
    as_of: str | None = None                  # either: the version current at this time (ISO 8601, UTC by default)
    catalog: dict | None = None
    #: When a table commit removed rows already tokenized: ``error`` (refuse, naming it) or ``retokenize`` (rebuild
    #: the shards holding them in this run's commit: :mod:`pipelines.tokenize.retokenize`).
    on_table_change: str = "error"
    #: A row filter (``lang = 'en' AND quality >= 0.5``: :mod:`pipelines.read.row_filter`) for Parquet and tables.
    where: str | None = None
    text_column: str = "text"
    keep_columns: list[str] = field(default_factory=list)
    output_format: str = "parquet"            # parquet | megatron | npy
    parquet_ids_dtype: str = "int32"          # int32 | uint16 (Parquet's input_ids element type)
    parquet_compression: str = "zstd"         # one of pipelines.tokenize.writers.PARQUET_CODECS
    add_bos: bool = False
    add_eos: bool = False
    #: Match control tokens spelled in the text (``<s>``) as their ids; default: such text is ordinary text.
    control_tokens_in_text: bool = False
    partitions: int | None = None             # repartition the documents (default: as read)
    mode: str = "error"                       # error | overwrite | skip | incremental
    verify: bool = False
    verify_rate: float = 1.0                  # share of documents decoded and compared when verify is on
    on_bad_row: str = "error"                 # error | skip | keep
    max_document_bytes: int = 64 << 20
    progress_seconds: float = 10.0            # between progress lines (on a terminal only)
    quiet: bool = False                       # no progress lines
    #: How Parquet and text inputs are read: ``auto`` (pyarrow in the Python tasks where it can open the files, else
    #: Spark's reader), ``arrow`` (pyarrow or an error saying why not), ``spark`` (Spark's reader). JSONL inputs
    #: go through Spark's reader unless ``arrow`` (each line parsed in the task: :mod:`pipelines.read.jsonl_read`);
    #: the Beam engine, which has no Spark reader, always reads them so.
    reader: str = "auto"
    #: Testing aid for the commit protocol: {"partition": P, "marker": PATH, "action": "fail" | "hang"}. The first
    #: attempt of partition P that finds no file at PATH creates it after writing one batch, then dies or hangs.
    fault_injection: dict | None = None

    def validate(self) -> None:
        check_format(self.output_format)
        check_parquet_codec(self.parquet_compression)
        if self.on_bad_row not in BAD_ROW_POLICIES:
            raise ConfigError(f"--on-bad-row {self.on_bad_row!r}: use one of {', '.join(BAD_ROW_POLICIES)}")
        if not 0 < self.verify_rate <= 1:
            raise ConfigError(f"verify_rate {self.verify_rate} must be in (0, 1]")
        if self.partitions is not None and self.partitions < 1:
            raise ConfigError(f"--partitions must be at least 1, got {self.partitions}")
        if self.reader not in READERS:
            raise ConfigError(f"reader {self.reader!r}: use one of {', '.join(READERS)}")
        if not self.progress_seconds > 0:
            raise ConfigError(f"--progress-seconds {self.progress_seconds}: give a positive number of seconds")
        if self.max_document_bytes < 1:
            raise ConfigError("max_document_bytes must be positive")
        if not self.inputs:
            raise ConfigError("no input given: pass --input PATH [PATH ...]")
        if self.text_column in self.keep_columns:
            raise ConfigError(f"--keep-columns names the text column {self.text_column!r}; its tokens are "
                              "input_ids already (keep a copy under another name in the input if you need it)")
        if self.keep_columns and self.output_format != "parquet":
            raise ConfigError("--keep-columns needs --output-format parquet (Megatron and npy shards hold ids only)")
        self._validate_table_options()

    def _validate_table_options(self) -> None:
        from pipelines.read.tables import check_table_options

        if self.input_format is not None and self.input_format not in INPUT_FORMATS:
            raise ConfigError(f"input format {self.input_format!r}: use one of {', '.join(INPUT_FORMATS)}")
        if self.on_table_change not in ("error", "retokenize"):
            raise ConfigError(f"--on-table-change {self.on_table_change!r}: use error or retokenize")
        check_table_options(self.input_format, self.inputs, self.reader, table_version=self.table_version,
                            snapshot_id=self.snapshot_id, as_of=self.as_of, catalog=self.catalog, where=self.where)

    def settings(self, model_sha256: str) -> dict[str, Any]:
        """What must not change between runs appending to one output (checked in incremental and skip modes): also
        the row filter and the table, when given.

        The bad-row policy may change from run to run (each run's summary records it)."""
        return {
            "model_sha256": model_sha256, "output_format": self.output_format, "text_column": self.text_column,
            "keep_columns": list(self.keep_columns), "parquet_ids_dtype": self.parquet_ids_dtype,
            "add_bos": self.add_bos, "add_eos": self.add_eos,
            # only when on, so that outputs written before the option existed keep their settings
            **({"control_tokens_in_text": True} if self.control_tokens_in_text else {}),
            **({"where": _normal_where(self.where)} if self.where is not None else {}),
            **({"table": {"format": self.input_format, "table": self.inputs[0]}}
               if self.input_format in ("delta", "iceberg") else {}),
        }


def _normal_where(where: str) -> str:
    """The filter in its normal spelling (what two runs into one output must agree on)."""
    from pipelines.read.row_filter import parse_row_filter

    return parse_row_filter(where).text


#: The :class:`TokenizeConfig` fields a task reads (:func:`encode_task`'s ``config``).
TASK_OPTIONS = ("add_bos", "add_eos", "control_tokens_in_text", "output_format", "parquet_ids_dtype",
                "parquet_compression", "keep_columns",
                "verify", "verify_rate", "on_bad_row", "max_document_bytes", "fault_injection")


def task_options(config: TokenizeConfig) -> dict[str, Any]:
    """The settings :func:`encode_task` takes as ``config``: the fields of ``TASK_OPTIONS``, as a plain dict (it is
    pickled into every task)."""
    return {name: value for name, value in asdict(config).items() if name in TASK_OPTIONS}


def resolved_options(config: TokenizeConfig, master: str | None) -> dict[str, Any]:
    """Every option of a run, as the summary records it: ``config``'s fields (defaults included) plus ``master``;
    the testing-only ``fault_injection`` appears only when set.

    >>> resolved_options(TokenizeConfig(model="m", inputs=["a.txt"], output="o"), "local[2]")["output_format"]
    'parquet'
    """
    options = asdict(config)
    if options.get("fault_injection") is None:
        options.pop("fault_injection", None)
    options["master"] = master
    return options
