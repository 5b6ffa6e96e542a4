"""Shard writers and readers for tokenized output: Parquet, Megatron indexed datasets and flat npy token streams.

One task writes one shard under a temporary stem (see :mod:`pipelines.tokenize.commit`); the driver publishes it by
renaming every file of the shard. Writers stream Arrow batches (a table of kept columns plus a ``list<int32>`` ids
array), so a partition is never held in memory whole. No Spark here: the same code runs in executors and in tests.

Files per shard, for the stem ``S``:

================  =============================================================================================
format            files
================  =============================================================================================
``parquet``       ``S.parquet``: the kept input columns, ``input_ids`` (``list<int32>``, or ``list<uint16>`` with
                  ``ids_dtype="uint16"``) and ``num_tokens`` (``int32``), one row per document, input order;
                  zstd (level 1, Arrow's default; ``compression`` picks another of ``PARQUET_CODECS``),
                  dictionary pages off for every column, one row group per written batch (at most 10,000
                  documents).
``megatron``      ``S.bin`` + ``S.idx``: a Megatron-LM indexed dataset, one sequence per document
                  (:mod:`tokenizer.interop.megatron`), uint16 tokens below 65,500 pieces, else int32.
``npy``           ``S.tokens.npy``: every document's ids back to back (uint16 when the vocabulary has at most
                  65,536 pieces, else uint32), ``S.offsets.npy``: int64, shape ``(documents + 1,)``; document ``i``
                  is ``tokens[offsets[i]:offsets[i+1]]``. Both load with ``numpy.load(path, mmap_mode="r")``.
================  =============================================================================================

Example (hand-checkable)::

    >>> import pyarrow as pa, tempfile, os
    >>> stem = os.path.join(tempfile.mkdtemp(), "part-00000")
    >>> writer = open_shard_writer("npy", stem, vocab_size=300)
    >>> writer.write(pa.table({"text": ["ab", ""]}), pa.array([[1, 2], []], pa.list_(pa.int32())))
    >>> writer.close()
    ['part-00000.tokens.npy', 'part-00000.offsets.npy']
    >>> [ids.tolist() for ids in read_shard("npy", stem)]
    [[1, 2], []]
"""

from __future__ import annotations

import os
import struct
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tokenizer.errors import ConfigError, InputError
from tokenizer.interop.megatron import MegatronDataset, MegatronWriter

OUTPUT_FORMATS = ("parquet", "megatron", "npy")
#: Codecs of Parquet output (``none``: uncompressed), each one Spark's own reader takes. Their CPU and file size
#: when writing the job's ids, against the time to encode them: see BENCHMARKS.md, parquet_write.py. Left out: gzip
#: (many times the others' CPU for slightly smaller files, same table) and brotli (Spark ships no codec for it).
PARQUET_CODECS = ("zstd", "snappy", "lz4", "none")
IDS_COLUMN = "input_ids"
NUM_TOKENS_COLUMN = "num_tokens"

#: File suffixes of one shard, per format; the stem plus each suffix is one file.
SHARD_SUFFIXES = {
    "parquet": (".parquet",),
    "megatron": (".bin", ".idx"),
    "npy": (".tokens.npy", ".offsets.npy"),
}


def shard_files(output_format: str, stem: str) -> list[str]:
    """Paths of the files of the shard ``stem``: ``shard_files("megatron", "d/p") -> ["d/p.bin", "d/p.idx"]``."""
    check_format(output_format)
    return [stem + suffix for suffix in SHARD_SUFFIXES[output_format]]


def check_format(output_format: str) -> None:
    if output_format not in OUTPUT_FORMATS:
        raise ConfigError(f"unknown output format {output_format!r}: use one of {', '.join(OUTPUT_FORMATS)}")


def check_parquet_codec(codec: str) -> None:
    if codec not in PARQUET_CODECS:
        raise ConfigError(f"Parquet compression {codec!r}: use one of {', '.join(PARQUET_CODECS)}")


def npy_token_dtype(vocab_size: int) -> np.dtype:
    """``uint16`` when every id fits (vocab_size <= 65,536), else ``uint32``."""
    return np.dtype("<u2") if vocab_size <= 1 << 16 else np.dtype("<u4")


class ShardWriter:
    """Base class: ``write(columns, ids)`` per batch, then ``close()`` (returns the file names) or ``abort()``."""

    def __init__(self, stem: str, vocab_size: int):
        self.stem = stem
        self.vocab_size = vocab_size
        self.documents = 0
        self.tokens = 0

    def write(self, columns: pa.Table, ids: pa.ListArray) -> None:
        raise NotImplementedError

    def close(self) -> list[str]:
        raise NotImplementedError

    def abort(self) -> None:
        for path in shard_files(self.output_format, self.stem):
            if os.path.exists(path):
                os.unlink(path)

    output_format = ""

    def _account(self, ids: pa.ListArray) -> tuple[np.ndarray, np.ndarray]:
        """Flat ids (int64 view of the values in range) and offsets rebased to 0, counted into the totals."""
        offsets = np.asarray(ids.offsets, dtype=np.int64)
        flat = np.asarray(ids.values)[offsets[0]:offsets[-1]] if len(ids) else np.zeros(0, np.int32)
        self.documents += len(ids)
        self.tokens += len(flat)
        return flat, offsets - offsets[0]

    def _names(self) -> list[str]:
        return [os.path.basename(path) for path in shard_files(self.output_format, self.stem)]


class ParquetShardWriter(ShardWriter):
    output_format = "parquet"

    def __init__(self, stem: str, vocab_size: int, ids_dtype: str = "int32", compression: str = "zstd"):
        super().__init__(stem, vocab_size)
        if ids_dtype not in ("int32", "uint16"):
            raise ConfigError(f"Parquet ids dtype {ids_dtype!r}: use int32 or uint16")
        if ids_dtype == "uint16" and vocab_size > 1 << 16:
            raise ConfigError(f"a vocabulary of {vocab_size} pieces does not fit uint16 ids: use int32")
        check_parquet_codec(compression)
        self.ids_type = pa.list_(pa.int32() if ids_dtype == "int32" else pa.uint16())
        self.compression = compression
        self._writer: pq.ParquetWriter | None = None

    def write(self, columns: pa.Table, ids: pa.ListArray) -> None:
        if len(ids) != columns.num_rows:
            raise InputError(f"{len(ids)} id lists for {columns.num_rows} rows")
        self._account(ids)
        num_tokens = pc.list_value_length(ids).cast(pa.int32()).fill_null(0)
        table = columns.append_column(IDS_COLUMN, ids.cast(self.ids_type)).append_column(NUM_TOKENS_COLUMN, num_tokens)
        if self._writer is None:
            self._writer = self._open(table.schema)
        self._writer.write_table(table)

    def _open(self, schema: pa.Schema) -> pq.ParquetWriter:
        # No dictionary pages: token ids have too many distinct values to gain from them, and kept columns are
        # mostly unique keys (ids, URLs): a dictionary for the id column made the file larger and slower to write.
        # The default codec, zstd: no other saves enough CPU to pay for its larger files (BENCHMARKS.md,
        # parquet_write.py).
        return pq.ParquetWriter(self.stem + ".parquet", schema, compression=self.compression, use_dictionary=False)

    def set_empty_schema(self, columns_schema: pa.Schema) -> None:
        """The schema to write when the shard gets no rows (so an empty shard still reads back)."""
        self._empty_schema = columns_schema

    def close(self) -> list[str]:
        if self._writer is None:
            schema = getattr(self, "_empty_schema", pa.schema([]))
            schema = schema.append(pa.field(IDS_COLUMN, self.ids_type)).append(pa.field(NUM_TOKENS_COLUMN, pa.int32()))
            self._writer = self._open(schema)
        self._writer.close()
        return self._names()

    def abort(self) -> None:
        if self._writer is not None:
            try:
                self._writer.close()
            except Exception:  # noqa: BLE001 - already failing; removing the file is what matters
                pass
        super().abort()


class MegatronShardWriter(ShardWriter):
    output_format = "megatron"

    def __init__(self, stem: str, vocab_size: int):
        super().__init__(stem, vocab_size)
        self._writer = MegatronWriter(stem, vocab_size=vocab_size)

    def write(self, columns: pa.Table, ids: pa.ListArray) -> None:
        flat, offsets = self._account(ids)
        self._writer.add_documents(flat, offsets)

    def close(self) -> list[str]:
        self._writer.close()
        return self._names()

    def abort(self) -> None:
        self._writer.abort()


_NPY_HEADER_SIZE = 128  # fixed, so the header can be rewritten in place once the length is known


def npy_header(dtype: np.dtype, length: int) -> bytes:
    """A version 1.0 ``.npy`` header for a 1-D array, padded to 128 bytes (numpy's format: magic, version, uint16
    header length, a Python dict literal padded with spaces and ending in a newline)."""
    text = f"{{'descr': '{np.dtype(dtype).str}', 'fortran_order': False, 'shape': ({length},), }}"
    room = _NPY_HEADER_SIZE - 10
    if len(text) + 1 > room:
        raise InputError(f"npy header for {length} items does not fit {_NPY_HEADER_SIZE} bytes")
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", room) + (text.ljust(room - 1) + "\n").encode("latin1")


class _NpyStream:
    """Append-only 1-D ``.npy`` file: writes a placeholder header, then the data, then the real header."""

    def __init__(self, path: str, dtype: np.dtype):
        self.path, self.dtype, self.length = path, np.dtype(dtype), 0
        self._handle = open(path, "wb")
        self._handle.write(npy_header(self.dtype, 0))

    def append(self, values: np.ndarray) -> None:
        self._handle.write(np.ascontiguousarray(values, dtype=self.dtype).tobytes())
        self.length += len(values)

    def close(self) -> None:
        self._handle.seek(0)
        self._handle.write(npy_header(self.dtype, self.length))
        self._handle.close()


class NpyShardWriter(ShardWriter):
    output_format = "npy"

    def __init__(self, stem: str, vocab_size: int):
        super().__init__(stem, vocab_size)
        self._tokens = _NpyStream(stem + ".tokens.npy", npy_token_dtype(vocab_size))
        self._offsets = _NpyStream(stem + ".offsets.npy", np.dtype("<i8"))
        self._offsets.append(np.zeros(1, np.int64))

    def write(self, columns: pa.Table, ids: pa.ListArray) -> None:
        flat, offsets = self._account(ids)
        if len(flat) and (int(flat.min()) < 0 or int(flat.max()) >= self.vocab_size):
            raise InputError(f"a token id is outside the vocabulary of {self.vocab_size}: wrong model?")
        base = self._tokens.length
        self._tokens.append(flat)
        self._offsets.append(offsets[1:] + base)

    def close(self) -> list[str]:
        self._tokens.close()
        self._offsets.close()
        return self._names()

    def abort(self) -> None:
        for stream in (self._tokens, self._offsets):
            if not stream._handle.closed:
                stream._handle.close()
        super().abort()


def open_shard_writer(
    output_format: str, stem: str, *, vocab_size: int, ids_dtype: str = "int32", compression: str = "zstd",
) -> ShardWriter:
    """A writer for one shard in ``output_format`` (see the module docstring for the files); ``ids_dtype`` and
    ``compression`` apply to Parquet output."""
    check_format(output_format)
    if output_format == "parquet":
        return ParquetShardWriter(stem, vocab_size, ids_dtype=ids_dtype, compression=compression)
    if output_format == "megatron":
        return MegatronShardWriter(stem, vocab_size)
    return NpyShardWriter(stem, vocab_size)


def read_shard(output_format: str, stem: str) -> Iterator[np.ndarray]:
    """Yield each document's ids (a numpy array) of the shard ``stem``, in order."""
    check_format(output_format)
    if output_format == "parquet":
        parquet = pq.ParquetFile(stem + ".parquet")
        for batch in parquet.iter_batches(columns=[IDS_COLUMN], batch_size=4096):
            ids = batch.column(0)
            offsets = np.asarray(ids.offsets, dtype=np.int64)
            values = np.asarray(ids.values)
            for i in range(len(ids)):
                yield values[offsets[i]:offsets[i + 1]]
    elif output_format == "megatron":
        yield from MegatronDataset(stem)
    else:
        tokens = np.load(stem + ".tokens.npy", mmap_mode="r")
        offsets = np.load(stem + ".offsets.npy", mmap_mode="r")
        for i in range(len(offsets) - 1):
            yield tokens[offsets[i]:offsets[i + 1]]


def shard_document_count(output_format: str, stem: str) -> int:
    """Documents in the shard, read from its metadata only (Parquet footer, Megatron index, npy offsets header)."""
    check_format(output_format)
    if output_format == "parquet":
        return pq.ParquetFile(stem + ".parquet").metadata.num_rows
    if output_format == "megatron":
        return MegatronDataset(stem).num_documents
    return len(np.load(stem + ".offsets.npy", mmap_mode="r")) - 1
