"""Reading a corpus into a DataFrame of documents: one ``text: binary`` column, the raw bytes of each document.

Inputs are paths, globs or directories on any filesystem Spark understands (``/data/*.txt.gz``,
``file:///corpus/``, ``hdfs://nn/corpus/part-*``, ``s3a://bucket/shards/``), in one of three formats:

* ``text`` — one document per line, split on ``\\n`` only (a ``\\r`` before it stays part of the document, so
  nothing is lost). Plain, ``.gz`` (and any other codec Hadoop reads) and ``.zst``. Lines are kept as bytes:
  invalid UTF-8 is neither replaced nor dropped, only counted (``invalid_utf8_rows``), so a lossless (identity)
  model learns the bytes as they are and an NFC run can refuse them up front.
* ``jsonl`` — one JSON object per line, the document in field ``text_column``; ``.gz``/``.zst`` too.
* ``parquet`` — the document in column ``text_column`` (a string or binary column).

Zero-byte files are counted and skipped (Spark would fail on an empty ``.parquet``); null values, empty documents
and malformed JSON lines are counted and skipped; documents that are not valid UTF-8 are counted, and dropped too
when training's bad-row rule says so (``read_corpus(bad_rows=...)``, :mod:`pipelines.train.bad_rows`, which also
decides whether a count stops the run). The counts come back as :class:`ReadStats`. A column or field that does
not exist is an :class:`~tokenizer.errors.InputError` naming it, the available ones and ``--text-column``.

``.zst`` files are always read with the ``zstandard`` module (through Spark's ``binaryFile`` source and a
``mapInArrow`` step), because the Hadoop codec needs a native library that many Spark builds lack. Each ``.zst``
file is therefore read whole by one task: keep compressed shards below ~1 GB.

Example::

    corpus = read_corpus(spark, ["data/sample/*.txt.gz"], partitions=4)
    corpus.compute_stats().documents      # -> number of non-empty documents
    corpus.documents.schema               # -> StructType([StructField('text', BinaryType(), True)])
"""

from __future__ import annotations

import glob
import os
import posixpath
import re
import stat
from dataclasses import asdict, dataclass, field
from typing import Iterator, Sequence

from tokenizer.errors import InputError

TEXT = "text"
FORMATS = ("text", "jsonl", "parquet")
_COMPRESSION_SUFFIXES = (".gz", ".zst", ".bz2", ".deflate", ".lz4", ".snappy")
_LINES_PER_BATCH = 8192


@dataclass
class InputFiles:
    """The files an input specification expands to (sorted, de-duplicated, Hadoop path strings)."""

    files: list[str]
    empty_files: list[str]
    total_bytes: int
    sizes: dict[str, int] = field(default_factory=dict)             # path -> bytes
    modified_ms: dict[str, int] = field(default_factory=dict)       # path -> modification time, ms since the epoch

    @property
    def zstd_files(self) -> list[str]:
        return [f for f in self.files if f.endswith(".zst")]

    @property
    def other_files(self) -> list[str]:
        return [f for f in self.files if not f.endswith(".zst")]


@dataclass
class ReadStats:
    """What reading the corpus found. ``documents`` counts what training sees (non-null, non-empty, not dropped by
    the bad-row rule); ``invalid_utf8_rows`` counts documents that are not valid UTF-8 (for JSONL: whose line is
    not, the reader having replaced its invalid sequences by U+FFFD)."""

    files: int = 0
    empty_files: int = 0
    input_bytes: int = 0
    rows: int = 0
    null_rows: int = 0
    empty_rows: int = 0
    malformed_rows: int = 0
    invalid_utf8_rows: int = 0
    documents: int = 0
    document_bytes: int = 0

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass
class Corpus:
    """A read corpus: ``documents`` (``text: binary``, no nulls, no empty rows, none the bad-row rule drops) and how
    it was read. ``bad_rows``: a :class:`pipelines.train.bad_rows.TrainBadRows` (``None``: keep every document)."""

    raw: object  # DataFrame with columns text (binary, nullable) and malformed (boolean); JSONL: line (string)
    input_files: InputFiles
    input_format: str
    text_column: str
    stats: ReadStats | None = field(default=None)
    bad_rows: object = None

    @property
    def documents(self):
        from pyspark.sql import functions as F

        kept = F.col(TEXT).isNotNull() & (F.length(TEXT) > 0)
        if self.bad_rows is not None and self.bad_rows.drops_invalid_utf8:
            kept = kept & ~self._invalid_utf8()
        return self.raw.where(kept).select(TEXT)

    def _invalid_utf8(self):
        """Whether a row's bytes are not valid UTF-8: a JSON line's (the reader replaced what its document took from
        them by U+FFFD), otherwise the document's."""
        from pyspark.sql import functions as F

        jsonl = self.input_format == "jsonl" and "line" in self.raw.columns
        source = "line" if jsonl else f"cast({TEXT} as string)"
        return ~F.expr(f"is_valid_utf8({source})")

    def compute_stats(self) -> ReadStats:
        """Count rows, nulls, empty and malformed rows, invalid UTF-8 and bytes in one Spark aggregation
        (``invalid_utf8_rows`` counts documents; ``documents`` and ``document_bytes`` leave out the ones the bad-row
        rule drops).

        For JSONL input whose every row lacks ``text_column`` this raises the missing-field error.
        """
        if self.stats is not None:
            return self.stats
        from pyspark.sql import functions as F

        text, malformed = F.col(TEXT), F.col("malformed")
        document = text.isNotNull() & (F.length(text) > 0)
        invalid = document & self._invalid_utf8()
        drops = self.bad_rows is not None and self.bad_rows.drops_invalid_utf8

        def count_if(condition):
            return F.sum(F.when(condition, 1).otherwise(0))

        row = self.raw.agg(
            F.count(F.lit(1)).alias("rows"),
            count_if(text.isNull() & ~malformed).alias("null_rows"),
            count_if(malformed).alias("malformed_rows"),
            count_if(text.isNotNull() & (F.length(text) == 0)).alias("empty_rows"),
            count_if(invalid).alias("invalid_utf8_rows"),
            F.sum(F.when(~invalid, F.length(text)) if drops else F.length(text)).alias("document_bytes"),
        ).collect()[0]
        rows = int(row["rows"] or 0)
        null_rows = int(row["null_rows"] or 0)
        empty_rows = int(row["empty_rows"] or 0)
        malformed_rows = int(row["malformed_rows"] or 0)
        invalid_rows = int(row["invalid_utf8_rows"] or 0)
        stats = ReadStats(
            files=len(self.input_files.files) + len(self.input_files.empty_files),
            empty_files=len(self.input_files.empty_files),
            input_bytes=self.input_files.total_bytes,
            rows=rows,
            null_rows=null_rows,
            empty_rows=empty_rows,
            malformed_rows=malformed_rows,
            invalid_utf8_rows=invalid_rows,
            documents=rows - null_rows - empty_rows - malformed_rows - (invalid_rows if drops else 0),
            document_bytes=int(row["document_bytes"] or 0),
        )
        if self.input_format == "jsonl" and stats.rows > stats.malformed_rows and stats.null_rows == (
            stats.rows - stats.malformed_rows
        ):
            self._raise_if_field_missing()
        self.stats = stats
        return stats

    def _raise_if_field_missing(self) -> None:
        from pyspark.sql import functions as F

        keys_rows = (
            self.raw.where(~F.col("malformed")).select(F.explode(F.expr("json_object_keys(line)")).alias("k"))
            .distinct().limit(50).collect()
        )
        available = sorted(r["k"] for r in keys_rows)
        if self.text_column not in available:
            raise missing_column_error(self.text_column, available, "field", self.input_files.files[:3])


def missing_column_error(column: str, available: Sequence[str], kind: str, files: Sequence[str]) -> InputError:
    shown = ", ".join(repr(a) for a in available) or "none"
    return InputError(
        f"the input has no {kind} {column!r} (in {', '.join(files)}{' ...' if len(files) >= 3 else ''}); "
        f"available {kind}s: {shown}. Pass the right one with --text-column NAME (text_column: in a config file)"
    )


# ---------------------------------------------------------------------------------------------- listing files
def list_input_files(spark, inputs: Sequence[str]) -> InputFiles:
    """Expand paths, globs and directories (recursively; names starting with ``_`` or ``.`` are skipped, as
    Spark does) with the Hadoop FileSystem of each URI. Raises :class:`InputError` for an input matching nothing.

    Local paths made of plain characters (letters, digits, ``/._-+=,@~``, globs with ``*`` and ``?`` only) are
    listed by this process directly (:func:`list_local_files`): the same path strings (``file:/...``), sizes and
    millisecond modification times as Hadoop's local FileSystem gives, without a JVM round trip per file.
    """
    if isinstance(inputs, str):
        inputs = [inputs]
    if not inputs:
        raise InputError("no input given: pass --input PATH [PATH ...] (files, globs or directories)")
    sizes: dict[str, int] = {}
    modified: dict[str, int] = {}
    hadoop_specs = []
    for spec in inputs:
        local = list_local_files(str(spec))
        if local is None:
            hadoop_specs.append(spec)
            continue
        if not local:
            raise _no_match(spec)
        for path, (size, mtime_ms) in local.items():
            sizes[path], modified[path] = size, mtime_ms
    if hadoop_specs:
        _list_hadoop(spark, hadoop_specs, sizes, modified)
    files = sorted(p for p, n in sizes.items() if n > 0)
    empty = sorted(p for p, n in sizes.items() if n == 0)
    return InputFiles(files=files, empty_files=empty, total_bytes=sum(sizes.values()), sizes=sizes,
                      modified_ms=modified)


def _no_match(spec) -> InputError:
    return InputError(
        f"input {spec!r} matches no file: check the path (globs like 'dir/*.txt.gz' and directories work; "
        "quote globs so the shell does not expand them)"
    )


def _list_hadoop(spark, inputs: Sequence[str], sizes: dict[str, int], modified: dict[str, int]) -> None:
    jvm = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    for spec in inputs:
        path = jvm.org.apache.hadoop.fs.Path(str(spec))
        try:
            fs = path.getFileSystem(conf)
        except Exception as exc:  # noqa: BLE001 - py4j's error; only a missing filesystem is answered here
            if not any(name in str(exc) for name in ("UnsupportedFileSystemException", "ClassNotFoundException")):
                raise
            raise unsupported_scheme_error(str(spec)) from None
        statuses = fs.globStatus(path)
        if statuses is None or len(statuses) == 0:
            raise _no_match(spec)
        for status in statuses:
            if status.isDirectory():
                iterator = fs.listFiles(status.getPath(), True)
                while iterator.hasNext():
                    child = iterator.next()
                    relative = child.getPath().toString()[len(status.getPath().toString()):]
                    if any(part.startswith(("_", ".")) for part in relative.split("/") if part):
                        continue
                    name = child.getPath().toString()
                    sizes[name], modified[name] = int(child.getLen()), int(child.getModificationTime())
            else:
                name = status.getPath().toString()
                sizes[name], modified[name] = int(status.getLen()), int(status.getModificationTime())


def unsupported_scheme_error(spec: str):
    """The error for an input whose scheme Spark's Hadoop has no filesystem for (``gs://`` without the connector,
    a Beam-only scheme). ``unsupported_scheme_error("gs://b/a.txt")`` names ``gs://`` and ``--engine beam``."""
    from tokenizer.errors import ConfigError

    scheme = spec.split("://", 1)[0]
    return ConfigError(f"--input {spec}: Spark has no filesystem for {scheme}:// on this machine: use --engine beam "
                       "(Apache Beam's FileSystems read gs://, s3://, hdfs:// ...), or a local or HDFS path (or a "
                       "scheme whose Hadoop connector Spark has, such as s3a:// with hadoop-aws)")


_PLAIN_LOCAL_PATH = re.compile(r"[A-Za-z0-9/._+=,@~*?-]+")


def list_local_files(spec: str) -> dict[str, tuple[int, int]] | None:
    """``{"file:/abs/path": (bytes, modification ms)}`` for a local input spec, as :func:`list_input_files` lists
    it through Hadoop; ``{}`` when it matches nothing; ``None`` when the spec is not one this function takes
    (another filesystem's URI, or characters whose Hadoop meaning differs: ``{}``, ``[]``, ``\\``, ``:``,
    ``//``, spaces, ``%``, non-ASCII): the caller then asks Hadoop.

    Files matched directly by the spec are kept whatever their name; inside a matched directory, every file
    below it is listed except those with a path component starting with ``_`` or ``.``. Example: a directory
    ``d`` holding ``a.txt`` and ``_SUCCESS`` -> ``{"file:/.../d/a.txt": (size, mtime)}``.
    """
    path = spec
    if path.startswith("file://"):
        path = path[len("file://"):]
        if not path.startswith("/"):
            return None  # file://host/...: not a local path
    elif path.startswith("file:"):
        path = path[len("file:"):]
    if not path or not _PLAIN_LOCAL_PATH.fullmatch(path) or "//" in path:
        return None
    path = os.path.abspath(path)  # relative to the working directory, "." and ".." resolved: as Hadoop's Path
    matches = sorted(glob.glob(path, include_hidden=True)) if ("*" in path or "?" in path) else \
        ([path] if os.path.lexists(path) else [])
    listed: dict[str, tuple[int, int]] = {}
    for match in matches:
        if os.path.isdir(match):
            for root, dirs, names in os.walk(match, followlinks=True):
                dirs[:] = sorted(d for d in dirs if not d.startswith(("_", ".")))
                for name in sorted(names):
                    if name.startswith(("_", ".")):
                        continue
                    _stat_into(listed, os.path.join(root, name))
        else:
            _stat_into(listed, match)
    return listed


def _stat_into(listed: dict[str, tuple[int, int]], path: str) -> None:
    try:
        info = os.stat(path)
    except OSError:
        return  # a dangling symlink or a file removed meanwhile: Hadoop does not list it either
    if stat.S_ISREG(info.st_mode):
        listed["file:" + path] = (int(info.st_size), int(info.st_mtime_ns // 1_000_000))


def detect_format(files: Sequence[str]) -> str:
    """Guess the format from file names: ``*.parquet`` -> parquet, ``*.jsonl``/``*.json`` (optionally compressed)
    -> jsonl, anything else -> text. Mixed formats are an error asking for ``--input-format``."""
    kinds = set()
    for name in files:
        base = posixpath.basename(name).lower()
        for suffix in _COMPRESSION_SUFFIXES:
            if base.endswith(suffix):
                base = base[: -len(suffix)]
                break
        if base.endswith(".parquet"):
            kinds.add("parquet")
        elif base.endswith((".jsonl", ".json", ".ndjson")):
            kinds.add("jsonl")
        else:
            kinds.add("text")
    if len(kinds) > 1:
        raise InputError(
            f"the inputs mix formats ({', '.join(sorted(kinds))}): read them in separate runs or pass "
            "--input-format text|jsonl|parquet to read all of them one way"
        )
    return kinds.pop() if kinds else "text"


# ---------------------------------------------------------------------------------------------- reading
def read_corpus(
    spark,
    inputs: Sequence[str],
    *,
    input_format: str | None = None,
    text_column: str = TEXT,
    partitions: int | None = None,
    persist: bool = True,
    bad_rows=None,
) -> Corpus:
    """Read ``inputs`` into a :class:`Corpus` whose ``documents`` DataFrame has one ``text: binary`` column.

    ``input_format`` is guessed from the file names when ``None``. ``partitions`` repartitions the documents
    (default: as read). ``persist`` caches them (memory, then disk): training reads the corpus twice.
    ``bad_rows``: training's :class:`~pipelines.train.bad_rows.TrainBadRows` (which documents to drop;
    ``None``: none).
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    if input_format is not None and input_format not in FORMATS:
        raise InputError(f"unknown input format {input_format!r}: use one of {', '.join(FORMATS)}")
    if partitions is not None and int(partitions) < 1:
        raise InputError(f"--partitions must be at least 1, got {partitions}")
    listed = list_input_files(spark, inputs)
    input_format = input_format or detect_format(listed.files + listed.empty_files)
    if not listed.files:
        raw = spark.createDataFrame([], f"{TEXT} binary, malformed boolean")
    elif input_format == "parquet":
        raw = _read_parquet(spark, listed, text_column)
    else:
        lines = _read_lines(spark, listed)
        if input_format == "text":
            raw = lines.select(F.col("line").alias(TEXT), F.lit(False).alias("malformed"))
        else:
            raw = _parse_jsonl(lines, text_column)
    if partitions is not None:
        raw = raw.repartition(int(partitions))
    if persist:
        raw = raw.persist(StorageLevel.MEMORY_AND_DISK)
    return Corpus(raw=raw, input_files=listed, input_format=input_format, text_column=text_column,
                  bad_rows=bad_rows)


def _read_lines(spark, listed: InputFiles):
    """Lines (``line: binary``) of every text-like file: Spark's text source for plain/.gz, zstandard for .zst."""
    from pyspark.sql import functions as F

    frames = []
    if listed.other_files:
        frames.append(
            spark.read.option("lineSep", "\n").text(listed.other_files)
            .select(F.col("value").cast("binary").alias("line"))
        )
    if listed.zstd_files:
        frames.append(
            spark.read.format("binaryFile").load(listed.zstd_files)
            .select("path", "content").mapInArrow(zstd_lines, "line binary")
        )
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result


def split_lines(data: bytes) -> list[bytes]:
    """Split a decompressed file into lines the way Spark's text source does with ``lineSep='\\n'``.

    >>> split_lines(b"a\\r\\n\\nb")
    [b'a\\r', b'', b'b']
    >>> split_lines(b"a\\n"), split_lines(b"")
    ([b'a'], [])
    """
    if not data:
        return []
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    return lines


def decompress_zstd(blob: bytes, path: str) -> bytes:
    """The content of a ``.zst`` file (every frame); an invalid one is an :class:`InputError` naming ``path``."""
    import io

    import zstandard

    try:
        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(blob), read_across_frames=True) as reader:
            return reader.read()
    except zstandard.ZstdError as exc:
        raise InputError(
            f"{path}: not a valid zstd file ({exc}); re-create or remove it, or rename it if it is not compressed"
        ) from None


def read_local_text_file(path: str) -> bytes:
    """The decompressed bytes of one local text file (plain, ``.gz`` or ``.zst``), for the readers that run without
    Spark. An unreadable, corrupt or truncated file is an :class:`InputError` naming it and the fix, as on the
    Spark path."""
    import gzip
    import zlib

    try:
        with open(path, "rb") as handle:
            blob = handle.read()
    except OSError as exc:
        raise InputError(
            f"cannot read input file {path}: {exc.strerror or exc}; fix its permissions or remove it from --input"
        ) from None
    if path.endswith(".zst"):
        return decompress_zstd(blob, path)
    if path.endswith(".gz"):
        try:
            return gzip.decompress(blob)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(f"cannot read input file {path} ({type(exc).__name__}: {exc}): it is corrupt, truncated "
                             "or not in the format its name says; re-create it, or remove it from --input") from None
    return blob


def zstd_lines(batches: Iterator) -> Iterator:
    """``mapInArrow`` step: (path, content) rows of ``.zst`` files -> ``line: binary`` rows, in batches."""
    import pyarrow as pa

    schema = pa.schema([("line", pa.binary())])
    for batch in batches:
        paths = batch.column("path").to_pylist()
        contents = batch.column("content")
        for i, path in enumerate(paths):
            data = decompress_zstd(contents[i].as_py() or b"", path)
            lines = split_lines(data)
            del data
            for start in range(0, len(lines), _LINES_PER_BATCH):
                yield pa.RecordBatch.from_arrays([pa.array(lines[start:start + _LINES_PER_BATCH], pa.binary())],
                                                 schema=schema)


def _parse_jsonl(lines, text_column: str, keep: Sequence[str] = ()):
    """JSON lines -> (text: binary, malformed: bool, line: string, and the ``keep`` columns of ``lines``). Blank
    lines are skipped; a line that is not a JSON object is ``malformed``; a missing or null field gives a null
    ``text``."""
    from pyspark.sql import functions as F

    if "'" in text_column or "\\" in text_column:
        raise InputError(f"--text-column {text_column!r}: field names with quotes or backslashes are not supported")
    line = F.col("line").cast("string")
    frame = lines.select(line.alias("line"), *keep).where(F.length(F.trim(F.col("line"))) > 0)
    return frame.select(
        F.expr(f"get_json_object(line, '$[\\'{text_column}\\']')").cast("binary").alias(TEXT),
        F.expr("json_object_keys(line)").isNull().alias("malformed"),
        F.col("line"),
        *keep,
    )


def _read_parquet(spark, listed: InputFiles, text_column: str):
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType, StringType

    frame = spark.read.parquet(*listed.files)
    fields = {f.name: f for f in frame.schema.fields}
    if text_column not in fields:
        raise missing_column_error(text_column, list(fields), "column", listed.files[:3])
    data_type = fields[text_column].dataType
    if not isinstance(data_type, (StringType, BinaryType)):
        raise InputError(
            f"column {text_column!r} has type {data_type.simpleString()}, not string or binary: pass the column "
            "that holds the text with --text-column NAME"
        )
    return frame.select(F.col(text_column).cast("binary").alias(TEXT), F.lit(False).alias("malformed"))
