r"""Reading JSONL inputs in the Python tasks themselves (pyarrow for the lines, Python for the JSON), giving the rows
Spark's JSONL read gives the tokenize job (:func:`pipelines.tokenize.inputs.jsonl_rows`), so that an engine
without Spark's reader (Apache Beam) tokenizes JSONL too.

The driver plans the files as text files (:func:`pipelines.read.arrow_read.plan_text`: byte ranges of a plain
file, each taking the lines that start in it; whole ``.gz`` and ``.zst`` files); a :class:`JsonlUnit` wraps one
such range. Each task reads its units' lines (:func:`pipelines.read.arrow_read.read_text_units`) and turns every
line into one row, as Spark's ``get_json_object``/``json_object_keys`` do (reproduced without a JVM by
:func:`pipelines.inprocess.jsonl.json_fields`, which parses each line once):

* a line of only spaces is no row (Spark keeps a line when ``length(trim(line)) > 0``; ``trim`` strips spaces
  only, so a line of tabs is a row, a malformed one);
* the text column (binary): the text field's value, a string as its UTF-8 bytes, any other value as JSON text
  (``{"a":1}``, ``7``); null when the field is missing or null;
* the malformed flag (bool): the line is not a JSON object (``json_object_keys(line) IS NULL``);
* each kept column (string): that field's value the same way.

A line is decoded as Spark decodes it (Java's UTF-8 decoder: each invalid sequence one U+FFFD), so the values
read from a line that is not valid UTF-8 are valid UTF-8: as on Spark, such a line is no ``invalid_utf8`` bad row.

Example (hand-checkable): the lines ``{"text": "a", "id": 7}``, a line of one space, ``[1]`` and ``{"id": "x"}``,
text column ``text``, kept column ``id`` -> three rows, ``(b"a", False, "7")``, ``(None, True, None)`` and
``(None, False, "x")``, lines 1, 3 and 4 of the file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np
import pyarrow as pa

from pipelines.read.arrow_read import BatchPlace, TextUnit, plan_text, read_text_units


@dataclass(frozen=True)
class JsonlUnit:
    """The JSON lines of ``lines``, a text unit (the lines of a file that start in a byte range, or a whole
    compressed file): ``path`` and ``weight`` are its own."""

    lines: TextUnit

    @property
    def path(self) -> str:
        return self.lines.path

    @property
    def weight(self) -> int:
        return self.lines.weight


@dataclass
class JsonlPlan:
    """Work units of JSONL files in input order (their row count is known only once read)."""

    units: list[JsonlUnit]
    rows: None = None


def plan_jsonl(files: Sequence[tuple[str, int]], tasks: int | None,
               remote_files: Any = None) -> tuple[list[JsonlUnit] | None, str]:
    """``(units in input order, "")`` for JSONL files given as ``(path, size)`` pairs, planned as
    :func:`pipelines.read.arrow_read.plan_text` plans text (``remote_files`` opens paths with a scheme), or
    ``(None, reason)`` when pyarrow cannot read them (another filesystem or codec). Example: a 10-byte
    ``a.jsonl``, ``tasks`` 3 -> units of bytes ``(0, 4)``, ``(4, 8)``, ``(8, 10)``."""
    units, reason = plan_text(files, tasks, remote_files=remote_files)
    if units is None:
        return None, reason
    return [JsonlUnit(unit) for unit in units], ""


def jsonl_columns(lines: Sequence[bytes], text_column: str, keep_columns: Sequence[str]
                  ) -> tuple[np.ndarray, pa.Array, np.ndarray, list[pa.Array]]:
    """``(rows, text, malformed, kept)`` of JSON ``lines``: ``rows`` the indices (int64) of the lines that are rows
    (not blank), and for each of them the text field (binary), whether it is malformed (bool array) and each kept
    field (one string array per kept column), as the module docstring says.
    ``jsonl_columns([b'{"text": "a"}', b" ", b"[1]"], "text", [])`` -> rows ``[0, 2]``, text ``[b"a", None]``,
    malformed ``[False, True]``, kept ``[]``."""
    from pipelines.inprocess.jsonl import json_fields

    fields = [text_column, *keep_columns]
    rows: list[int] = []
    malformed: list[bool] = []
    values: list[list[bytes | None]] = [[] for _ in fields]
    for index, line in enumerate(lines):
        if not line.strip(b" "):
            continue
        found, names = json_fields(line, fields)
        rows.append(index)
        malformed.append(names is None)
        for column, value in zip(values, found):
            column.append(value)
    kept = [pa.array(column, pa.binary()).cast(pa.string()) for column in values[1:]]
    return (np.asarray(rows, dtype=np.int64), pa.array(values[0], pa.binary()), np.asarray(malformed, dtype=bool),
            kept)


def read_jsonl_units(units: Sequence[JsonlUnit], text_column: str, keep_schema: pa.Schema, text_name: str,
                     malformed_name: str, located: bool = False) -> Iterator[pa.RecordBatch]:
    """Batches of ``text_name`` (the text field, binary), ``malformed_name`` (bool) and the kept columns
    (``keep_schema``: strings) for ``units`` in order: one row per non-blank line, in file and line order, the
    rows Spark's JSONL read gives (the module docstring). ``located``: yield ``(batch, BatchPlace)`` pairs
    instead, the place naming each row's line (``PATH, line N``)."""
    for batch, place in read_text_units([unit.lines for unit in units], "line", "blank", located=True):
        rows, text, malformed, kept = jsonl_columns(batch.column(0).to_pylist(), text_column, keep_schema.names)
        if not len(rows):
            continue
        arrays = [text, pa.array(malformed), *[array.cast(f.type) for array, f in zip(kept, keep_schema)]]
        batch = pa.RecordBatch.from_arrays(arrays, [text_name, malformed_name, *keep_schema.names])
        yield (batch, BatchPlace(place.unit, place.first_row, place.first_row + rows)) if located else batch
