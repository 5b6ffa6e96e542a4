"""Megatron indexed dataset writer/reader/merger: layout checked byte by byte, round trips, merges, bad files."""

from __future__ import annotations

import os
import struct

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from tokenizer.errors import InputError, ModelFileError
from tokenizer.interop.megatron import (
    MegatronDataset, MegatronWriter, merge_datasets, token_dtype, write_index,
)


def test_token_dtype_follows_the_65500_threshold():
    assert token_dtype(32_000) == np.uint16
    assert token_dtype(65_499) == np.uint16
    assert token_dtype(65_500) == np.int32
    assert token_dtype(128_000) == np.int32


def test_index_layout_byte_by_byte(tmp_path):
    prefix = str(tmp_path / "ds")
    with MegatronWriter(prefix, vocab_size=1000) as writer:
        writer.add_document([5, 6, 7])
        writer.add_document([])
        writer.add_document([999, 0])
    data = open(prefix + ".idx", "rb").read()
    assert data[:9] == b"MMIDIDX\x00\x00"
    assert struct.unpack_from("<Q", data, 9)[0] == 1          # version
    assert data[17] == 8                                        # uint16 code
    assert struct.unpack_from("<QQ", data, 18) == (3, 4)        # 3 sequences, 4 document indices
    assert struct.unpack_from("<3i", data, 34) == (3, 0, 2)     # lengths
    assert struct.unpack_from("<3q", data, 46) == (0, 6, 6)     # byte pointers
    assert struct.unpack_from("<4q", data, 70) == (0, 1, 2, 3)  # document indices
    assert len(data) == 70 + 32
    assert open(prefix + ".bin", "rb").read() == struct.pack("<5H", 5, 6, 7, 999, 0)


def test_large_vocabulary_uses_int32(tmp_path):
    prefix = str(tmp_path / "big")
    with MegatronWriter(prefix, vocab_size=100_000) as writer:
        writer.add_document([70_000, 1])
    dataset = MegatronDataset(prefix)
    assert dataset.dtype == np.int32
    assert dataset[0].tolist() == [70_000, 1]
    assert open(prefix + ".idx", "rb").read()[17] == 4


def test_add_documents_with_arrow_style_offsets(tmp_path):
    prefix = str(tmp_path / "ds")
    flat = np.array([9, 9, 1, 2, 3, 4, 9], dtype=np.int32)
    with MegatronWriter(prefix, vocab_size=10) as writer:
        writer.add_documents(flat, np.array([2, 4, 4, 6]))  # offsets not starting at 0
    assert [d.tolist() for d in MegatronDataset(prefix)] == [[1, 2], [], [3, 4]]


def test_out_of_vocabulary_id_is_refused_and_files_removed(tmp_path):
    prefix = str(tmp_path / "ds")
    with pytest.raises(InputError, match="another model"):
        with MegatronWriter(prefix, vocab_size=10) as writer:
            writer.add_document([10])
    assert not os.path.exists(prefix + ".bin") and not os.path.exists(prefix + ".idx")


def test_empty_dataset(tmp_path):
    prefix = str(tmp_path / "empty")
    MegatronWriter(prefix, vocab_size=10).close()
    dataset = MegatronDataset(prefix)
    assert len(dataset) == 0 and dataset.num_documents == 0
    assert dataset.document_indices.tolist() == [0]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 70_000), max_size=20), max_size=30), st.integers(0, 30))
def test_round_trip_and_merge(tmp_path_factory, documents, split):
    directory = tmp_path_factory.mktemp("mg")
    first, second = documents[:split], documents[split:]
    for name, part in (("a", first), ("b", second)):
        with MegatronWriter(str(directory / name), vocab_size=70_001) as writer:
            for doc in part:
                writer.add_document(doc)
    assert [d.tolist() for d in MegatronDataset(str(directory / "a"))] == first
    merged = merge_datasets([str(directory / "a"), str(directory / "b")], str(directory / "all"))
    assert [d.tolist() for d in merged] == documents
    assert merged.num_documents == len(documents)
    assert merged.document_indices.tolist() == list(range(len(documents) + 1))
    assert [merged.document(i)[0].tolist() for i in range(len(documents))] == documents


def test_merge_refuses_mixed_dtypes(tmp_path):
    for name, vocab in (("small", 100), ("large", 100_000)):
        with MegatronWriter(str(tmp_path / name), vocab_size=vocab) as writer:
            writer.add_document([1])
    with pytest.raises(InputError, match="different token dtypes"):
        merge_datasets([str(tmp_path / "small"), str(tmp_path / "large")], str(tmp_path / "out"))


def test_truncated_or_mismatched_files_are_reported(tmp_path):
    prefix = str(tmp_path / "ds")
    with MegatronWriter(prefix, vocab_size=100) as writer:
        writer.add_document([1, 2, 3])
    data = open(prefix + ".bin", "rb").read()
    open(prefix + ".bin", "wb").write(data[:-2])
    with pytest.raises(ModelFileError, match="truncated or mismatched"):
        MegatronDataset(prefix)
    index = open(prefix + ".idx", "rb").read()
    open(prefix + ".idx", "wb").write(index[:40])
    with pytest.raises(ModelFileError, match="truncated"):
        MegatronDataset(prefix)
    open(prefix + ".idx", "wb").write(b"NOTANIDX" + index[8:])
    with pytest.raises(ModelFileError, match="bad magic"):
        MegatronDataset(prefix)
    with pytest.raises(ModelFileError, match="cannot read"):
        MegatronDataset(str(tmp_path / "missing"))


def test_write_index_validates_document_indices(tmp_path):
    with pytest.raises(InputError, match="document indices"):
        write_index(str(tmp_path / "x.idx"), np.uint16, np.array([1, 2]), np.array([0, 1]))
