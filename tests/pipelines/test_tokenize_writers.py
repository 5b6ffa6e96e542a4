"""Shard writers and readers (no Spark): every format round-trips ids and kept columns, in order, across batches."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings, strategies as st

from pipelines.tokenize.writers import (
    OUTPUT_FORMATS, PARQUET_CODECS, npy_header, npy_token_dtype, open_shard_writer, read_shard, shard_document_count,
    shard_files,
)
from tokenizer.errors import ConfigError, InputError
from tokenizer.interop.megatron import MegatronDataset

LIST_INT32 = pa.list_(pa.int32())


def _write(output_format, stem, batches, vocab_size, **options):
    writer = open_shard_writer(output_format, stem, vocab_size=vocab_size, **options)
    for docs in batches:
        columns = pa.table({"doc_id": pa.array([f"d{len(d)}" for d in docs], pa.string())})
        writer.write(columns, pa.array(docs, LIST_INT32))
    return writer, writer.close()


@pytest.mark.parametrize("output_format", OUTPUT_FORMATS)
@settings(max_examples=40, deadline=None)
@given(batches=st.lists(st.lists(st.lists(st.integers(0, 69_999), max_size=12), max_size=8), max_size=5),
       vocab_size=st.sampled_from([300, 70_000]))
def test_round_trip_every_format(tmp_path_factory, output_format, batches, vocab_size):
    batches = [[[i % vocab_size for i in doc] for doc in docs] for docs in batches]
    stem = str(tmp_path_factory.mktemp("shard") / "part-00000")
    writer, names = _write(output_format, stem, batches, vocab_size)
    expected = [doc for docs in batches for doc in docs]
    assert names == [os.path.basename(p) for p in shard_files(output_format, stem)]
    assert all(os.path.exists(p) for p in shard_files(output_format, stem))
    assert [ids.tolist() for ids in read_shard(output_format, stem)] == expected
    assert shard_document_count(output_format, stem) == len(expected) == writer.documents
    assert writer.tokens == sum(map(len, expected))


def test_parquet_schema_and_kept_columns(tmp_path):
    stem = str(tmp_path / "p")
    _write("parquet", stem, [[[1, 2], []], [[3]]], 300)
    table = pq.read_table(stem + ".parquet")
    assert table.schema.names == ["doc_id", "input_ids", "num_tokens"]
    assert table.schema.field("input_ids").type == LIST_INT32
    assert table.column("num_tokens").to_pylist() == [2, 0, 1]
    assert table.column("doc_id").to_pylist() == ["d2", "d0", "d1"]


def test_parquet_shards_are_zstd_without_dictionary_pages_one_row_group_per_batch(tmp_path):
    stem = str(tmp_path / "p")
    _write("parquet", stem, [[[1, 2], [1, 2]], [[3]] * 5], 300)
    metadata = pq.ParquetFile(stem + ".parquet").metadata
    assert [metadata.row_group(g).num_rows for g in range(metadata.num_row_groups)] == [2, 5]
    for group in range(metadata.num_row_groups):
        for column in range(metadata.num_columns):
            chunk = metadata.row_group(group).column(column)
            assert chunk.compression == "ZSTD" and chunk.dictionary_page_offset is None, chunk.path_in_schema


@pytest.mark.parametrize("codec", PARQUET_CODECS)
def test_parquet_compression_option(tmp_path, codec):
    """Every codec of --parquet-compression is the codec of every column chunk, and the ids read back the same."""
    stem = str(tmp_path / "p")
    docs = [[i % 300 for i in range(n * 7, n * 7 + n)] for n in range(40)]
    _write("parquet", stem, [docs[:25], docs[25:]], 300, compression=codec)
    metadata = pq.ParquetFile(stem + ".parquet").metadata
    names = {metadata.row_group(g).column(c).compression for g in range(metadata.num_row_groups)
             for c in range(metadata.num_columns)}
    assert names == {"UNCOMPRESSED" if codec == "none" else codec.upper()}
    assert [ids.tolist() for ids in read_shard("parquet", stem)] == docs


def test_unknown_parquet_codec_names_the_choices(tmp_path):
    with pytest.raises(ConfigError, match="zstd, snappy, lz4, none"):
        open_shard_writer("parquet", str(tmp_path / "p"), vocab_size=10, compression="lzo")
    assert not os.path.exists(str(tmp_path / "p.parquet"))


def test_parquet_uint16_ids_option(tmp_path):
    stem = str(tmp_path / "p")
    _write("parquet", stem, [[[65_535, 0]]], 65_536, ids_dtype="uint16")
    table = pq.read_table(stem + ".parquet")
    assert table.schema.field("input_ids").type == pa.list_(pa.uint16())
    assert table.column("input_ids").to_pylist() == [[65_535, 0]]
    with pytest.raises(ConfigError, match="use int32"):
        open_shard_writer("parquet", str(tmp_path / "q"), vocab_size=70_000, ids_dtype="uint16")


def test_empty_parquet_shard_keeps_its_schema(tmp_path):
    stem = str(tmp_path / "p")
    writer = open_shard_writer("parquet", stem, vocab_size=300)
    writer.set_empty_schema(pa.schema([("doc_id", pa.string())]))
    writer.close()
    assert pq.read_table(stem + ".parquet").schema.names == ["doc_id", "input_ids", "num_tokens"]
    assert shard_document_count("parquet", stem) == 0


def test_npy_files_load_with_numpy_memmap(tmp_path):
    stem = str(tmp_path / "n")
    _write("npy", stem, [[[1, 2, 3], [], [299]]], 300)
    tokens = np.load(stem + ".tokens.npy", mmap_mode="r")
    offsets = np.load(stem + ".offsets.npy", mmap_mode="r")
    assert tokens.dtype == np.uint16 and tokens.tolist() == [1, 2, 3, 299]
    assert offsets.dtype == np.int64 and offsets.tolist() == [0, 3, 3, 4]
    assert npy_token_dtype(65_536) == np.uint16 and npy_token_dtype(65_537) == np.uint32


def test_npy_header_is_numpy_compatible(tmp_path):
    path = tmp_path / "x.npy"
    path.write_bytes(npy_header(np.dtype("<u4"), 3) + np.array([7, 8, 9], "<u4").tobytes())
    assert np.load(path).tolist() == [7, 8, 9]
    assert len(npy_header(np.dtype("<i8"), 10**15)) == 128


def test_megatron_shard_is_a_megatron_dataset(tmp_path):
    stem = str(tmp_path / "m")
    _write("megatron", stem, [[[5, 6], [7]]], 100_000)
    dataset = MegatronDataset(stem)
    assert dataset.dtype == np.int32 and [d.tolist() for d in dataset] == [[5, 6], [7]]


@pytest.mark.parametrize("output_format", ["megatron", "npy"])
def test_ids_outside_the_vocabulary_are_refused(tmp_path, output_format):
    writer = open_shard_writer(output_format, str(tmp_path / "s"), vocab_size=10)
    with pytest.raises(InputError, match="model"):
        writer.write(pa.table({"x": [1]}), pa.array([[10]], LIST_INT32))
    writer.abort()
    assert not any(os.path.exists(p) for p in shard_files(output_format, str(tmp_path / "s")))


def test_unknown_format_names_the_choices(tmp_path):
    with pytest.raises(ConfigError, match="parquet, megatron, npy"):
        open_shard_writer("csv", str(tmp_path / "s"), vocab_size=10)
