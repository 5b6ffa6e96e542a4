r"""``shardpiece train``'s bad rows (``--on-bad-row error|skip|keep``, :mod:`tokenizer.bad_rows`'s rule): which rows
are bad for the model being trained, what each policy does to them, the one-line error that names the first one, and
the counts the summary and the manifest show. Both engines' readers (:mod:`pipelines.inprocess.read`,
:mod:`pipelines.read.readers`, :mod:`pipelines.spark.direct_count`) apply it the same way, so they train on the same
documents and count the same rows.

=================  ====================================================  ===========================================
kind               a bad row when                                        ``skip`` / ``keep``
=================  ====================================================  ===========================================
``malformed``      a JSON line that is not a JSON object (any algorithm)  dropped / an empty document: nothing to
                                                                         learn, the same model as ``skip``
``invalid_utf8``   a document that is not valid UTF-8 (for JSONL: its    dropped / trained on with U+FFFD for each
                   line), for a character model: unigram's               invalid sequence (what the SentencePiece
                   ``sentencepiece`` variant, bpe ``--pretokenizer       normalizer, or the JSON reader, does)
                   sentencepiece``
=================  ====================================================  ===========================================

Not bad rows in ``train``: invalid UTF-8 for the byte-level models (BytePiece, byte-level BPE, unigram's byte
variant), which keep text files' bytes as they are (a JSON line is decoded as UTF-8 by the reader, Java's
replacement rule, for every model); a row without text (a null value, a JSON line without the field) or an empty
document, which has nothing to train on: it is skipped and counted under every policy, as ``train`` always did
(``tokenize``, whose output rows follow the input rows, counts a null as a bad row).

``error`` finds bad rows without a second pass over the data: the readers count each kind as they read; when a
count is not zero, the first bad row is looked up on the driver (:func:`first_bad_row`: the files read again in
order, up to that row, by the same rules) and the run stops with one line naming the file and the line (JSONL,
text: counted from 1 in the decompressed file) or row (Parquet); files with a scheme are read again through the
opener that read them (the Beam engine's). A file this process cannot open (another filesystem, a codec other than
gzip and zstd) is named without a line number when Spark can say which one it is.

Example (hand-checkable)::

    >>> rule = TrainBadRows("skip", invalid_utf8=True)
    >>> summary_text(bad_row_report({"malformed_rows": 3, "invalid_utf8_rows": 1, "null_rows": 0}, rule))
    '3 malformed JSON lines skipped; 1 document not valid UTF-8 skipped'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np

from tokenizer.bad_rows import BAD_ROW_CHOICES, INVALID_UTF8, invalid_utf8_mask, keeps_invalid_utf8, valid_utf8
from tokenizer.errors import InputError

#: the read counts (:class:`pipelines.read.readers.ReadStats` fields) of each kind, and how a summary names it
KIND_COUNTS = {"malformed": "malformed_rows", "invalid_utf8": "invalid_utf8_rows", "null": "null_rows"}
_NAMES = {"malformed": ("malformed JSON line", "malformed JSON lines"),
          "invalid_utf8": ("document not valid UTF-8", "documents not valid UTF-8"),
          "null": ("row without text", "rows without text")}
_WHAT = {"malformed": "not a JSON object",
         "invalid_utf8": f"{INVALID_UTF8}; the byte-level algorithms (bytepiece, bpe, unigram --unigram-variant "
                         "byte) keep any bytes"}


def model_pretokenizer(options: dict) -> str:
    """The pre-tokenizer name of the model these train options make (:func:`tokenizer.bad_rows.keeps_invalid_utf8`'s
    argument): ``"sentencepiece"`` for unigram's default variant and ``bpe --pretokenizer sentencepiece``,
    ``"byte_level"`` for byte-level BPE and unigram's byte variant, ``"none"`` for BytePiece.
    ``model_pretokenizer({"algorithm": "unigram"})`` -> ``'sentencepiece'``."""
    algorithm = options.get("algorithm", "bytepiece")
    if algorithm == "unigram":
        return "sentencepiece" if options.get("unigram_variant", "sentencepiece") == "sentencepiece" else "byte_level"
    if algorithm == "bpe":
        return options.get("pretokenizer") or "byte_level"
    return "none"


@dataclass(frozen=True)
class TrainBadRows:
    """The bad-row rule of one training run: ``policy`` (``error``, ``skip``, ``keep``) and whether invalid UTF-8 is a
    bad row (``invalid_utf8``: a character model). ``TrainBadRows.of({"algorithm": "bytepiece"})`` ->
    ``TrainBadRows(policy='error', invalid_utf8=False)``."""

    policy: str = "error"
    invalid_utf8: bool = False

    @classmethod
    def of(cls, options: dict) -> "TrainBadRows":
        return cls(options.get("on_bad_row") or "error", not keeps_invalid_utf8(model_pretokenizer(options)))

    @property
    def drops_invalid_utf8(self) -> bool:
        """Whether the readers drop documents that are not valid UTF-8 (``skip``, and ``error``, which stops anyway
        and so counts without training on them)."""
        return self.invalid_utf8 and self.policy != "keep"

    def kinds(self) -> tuple[str, ...]:
        """The kinds of bad row under this rule, in the order an error looks for them."""
        return ("malformed", "invalid_utf8") if self.invalid_utf8 else ("malformed",)

    def bad_counts(self, counts: dict) -> dict[str, int]:
        """``{kind: rows}`` of the bad rows among read ``counts`` (non-zero ones only)."""
        found = {kind: int(counts.get(KIND_COUNTS[kind]) or 0) for kind in self.kinds()}
        return {kind: rows for kind, rows in found.items() if rows}


# ---------------------------------------------------------------------------------------------- the summary
def bad_row_report(counts: dict, rule: TrainBadRows) -> dict:
    """The manifest's ``bad_rows``: the policy and, for each kind found, its rows and what became of them
    (``skipped``, ``kept as empty documents``, ``kept with U+FFFD``; rows without text too, skipped under every
    policy) and the summary's line (``summary``, when there is something to say).
    ``bad_row_report({"malformed_rows": 2}, TrainBadRows("keep"))`` -> ``{"policy": "keep", "malformed": {"rows":
    2, "action": "kept as empty documents"}, "summary": "2 malformed JSON lines kept as empty documents"}``."""
    report: dict = {"policy": rule.policy}
    for kind, rows in rule.bad_counts(counts).items():
        if rule.policy == "skip":
            action = "skipped"
        elif kind == "malformed":
            action = "kept as empty documents"
        else:
            action = "kept with U+FFFD replacements"
        report[kind] = {"rows": rows, "action": action}
    nulls = int(counts.get("null_rows") or 0)
    if nulls:
        report["null"] = {"rows": nulls, "action": "skipped (no text to train on)"}
    text = summary_text(report)
    if text:
        report["summary"] = text
    return report


def summary_text(report: dict | None) -> str | None:
    """The summary's ``bad rows`` line for a :func:`bad_row_report` (``None``: nothing to say).
    ``summary_text({"policy": "skip", "malformed": {"rows": 1, "action": "skipped"}})`` ->
    ``'1 malformed JSON line skipped'``."""
    parts = []
    for kind in ("malformed", "invalid_utf8", "null"):
        entry = (report or {}).get(kind)
        if entry:
            singular, plural = _NAMES[kind]
            action = entry["action"].split(" (")[0]
            parts.append(f"{entry['rows']:,} {singular if entry['rows'] == 1 else plural} {action}")
    return "; ".join(parts) or None


# ---------------------------------------------------------------------------------------------- the error
def check_bad_rows(counts: dict, rule: TrainBadRows, files: Sequence[str], input_format: str, text_column: str,
                   find_file=None, remote_files=None) -> None:
    """Under ``error``, raise the one-line :class:`InputError` for the first bad row when ``counts`` (read counts)
    hold any: :func:`first_bad_row` over ``files`` (in reading order; ``remote_files`` opens those with a scheme);
    for a file it cannot open, ``find_file(kinds)`` (Spark: the path of a file holding one, or ``None``) names the
    file alone."""
    found = rule.bad_counts(counts)
    if rule.policy != "error" or not found:
        return
    kinds = tuple(found)
    location = first_bad_row(files, input_format, text_column, kinds, remote_files)
    if location is not None:
        raise bad_row_error(*location, input_format)
    path = find_file(kinds) if find_file is not None else None
    kind = kinds[0]
    singular, plural = _NAMES[kind]
    where = f"{_display(path)} (no line number: this process finds it in local plain, .gz and .zst files only)" \
        if path else "the corpus"
    raise InputError(f"{where}: {found[kind]:,} {singular if found[kind] == 1 else plural} ({_WHAT[kind]}); "
                     f"{BAD_ROW_CHOICES}")


def bad_row_error(kind: str, path: str, number: int, input_format: str) -> InputError:
    """The error for the bad row at ``path``, line (row, for Parquet) ``number`` (from 1).
    ``str(bad_row_error("malformed", "/d/a.jsonl", 3, "jsonl")).startswith("/d/a.jsonl, line 3: not a JSON
    object; pass --on-bad-row skip")`` -> ``True``."""
    unit = "row" if input_format == "parquet" else "line"
    return InputError(f"{_display(path)}, {unit} {number}: {_WHAT[kind]}; {BAD_ROW_CHOICES}")


def _display(path: str) -> str:
    """A local path without its ``file:`` scheme (``file:/d/a.txt``, ``file:///d/a.txt`` -> ``/d/a.txt``); other
    URIs as they are."""
    if path.startswith("file://") and path[len("file://"):].startswith("/"):
        return path[len("file://"):]
    if path.startswith("file:") and not path.startswith("file://"):
        return path[len("file:"):]
    return path


def first_bad_row(files: Sequence[str], input_format: str, text_column: str, kinds: Sequence[str],
                  remote_files=None) -> tuple[str, str, int] | None:
    """``(kind, path, number)`` of the first row of one of ``kinds`` in ``files`` (paths or ``file:`` URIs, in
    reading order; ``remote_files`` opens URIs of other schemes: :mod:`pipelines.read.arrow_read`), classified as
    the readers classify it: ``number`` counts lines (text, JSONL: every line of the decompressed file, blank ones
    too) or rows (Parquet) from 1. ``None`` when a file that may hold it cannot be opened here (another filesystem
    without ``remote_files``, or a codec other than gzip and zstd) or none is found."""
    from pipelines.read.arrow_read import _SPARK_CODECS, has_scheme

    for name in files:
        path = _display(name)
        if ("://" in path and not (remote_files is not None and has_scheme(path))) or path.endswith(_SPARK_CODECS):
            return None
        rows = _parquet_rows(path, text_column, remote_files) if input_format == "parquet" else \
            _line_rows(path, input_format, text_column, remote_files)
        for number, kind in rows:
            if kind in kinds:
                return kind, path, number
    return None


def _line_rows(path: str, input_format: str, text_column: str, remote_files=None) -> Iterator[tuple[int, str]]:
    """``(line number, kind)`` of the lines of a text or JSONL file (local, or with a scheme ``remote_files``
    opens) that are bad rows of some kind."""
    from pipelines.read.readers import read_local_text_file, split_lines

    lines = _remote_lines(path, remote_files) if "://" in path else split_lines(read_local_text_file(path))
    for number, line in enumerate(lines, 1):
        if input_format == "text":
            if not valid_utf8(line):
                yield number, "invalid_utf8"
            continue
        if not line.strip(b" "):
            continue  # not a row (Spark's reader keeps a line when length(trim(line)) > 0)
        from pipelines.inprocess.jsonl import json_field

        value, names = json_field(line, text_column)
        if names is None:
            yield number, "malformed"
        elif value and not valid_utf8(line):
            yield number, "invalid_utf8"


def _remote_lines(path: str, remote_files) -> Iterator[bytes]:
    """The lines of a text file with a scheme, opened by ``remote_files`` (the readers' lines: split at ``\n``)."""
    from pipelines.read.arrow_read import plan_text, read_text_units

    units, _ = plan_text([(path, remote_files.get_file_info(path).size)], None, remote_files=remote_files)
    for batch in read_text_units(units, "line", "malformed"):
        yield from batch.column(0).to_pylist()


def _parquet_rows(path: str, text_column: str, remote_files=None) -> Iterator[tuple[int, str]]:
    """``(row number, "invalid_utf8")`` of the documents of a Parquet file (local, or with a scheme
    ``remote_files`` opens) that are not valid UTF-8."""
    import contextlib

    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipelines.read.shards import binary_buffers

    first = 1
    opened = remote_files.open_input_file(path) if "://" in path else contextlib.nullcontext(path)
    with opened as source, pq.ParquetFile(source) as parquet:
        if text_column not in parquet.schema_arrow.names:
            return
        for batch in parquet.iter_batches(batch_size=8192, columns=[text_column], use_threads=False):
            column = batch.column(0)
            if pa.types.is_dictionary(column.type):
                column = column.dictionary_decode()
            column = column.cast(pa.large_binary())  # a string or binary column's bytes
            if column.null_count:
                column = column.fill_null(pa.scalar(b"", column.type))
            mask = invalid_utf8_mask(*binary_buffers(column))
            for index in np.flatnonzero(mask).tolist():
                yield first + index, "invalid_utf8"
            first += len(column)

