"""A Parquet tokenize output is a dataset directory: pyarrow, Spark, duckdb, polars and Hugging Face datasets read
``OUT/`` by its path (no glob) and see every document once, after two incremental runs and a retried task."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.tokenize.commit import read_manifest
from pipelines.tokenize import TokenizeConfig, run_tokenize
from tokenizer import Model, Tokenizer

pytestmark = pytest.mark.spark
PIECES = [b"th", b"the", b" the", b"in", b"ing", "中文".encode(), b"  "]


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("model") / "m.shardpiece")
    Model.byte_level(PIECES, [-2.0, -1.5, -1.0, -2.5, -1.2, -1.0, -3.0], specials=("<s>", "</s>")).save(path)
    return path


def _write_lake(folder, day: int, count: int) -> list[tuple[int, str]]:
    rows = [(day * 1000 + i, f"the thing {i} 中文 " * (i % 5) + ("naïve" if i % 3 else "")) for i in range(count)]
    pq.write_table(pa.table({"id": pa.array([r[0] for r in rows], pa.int64()),
                             "text": pa.array([r[1] for r in rows], pa.string())}),
                   str(folder / f"day-{day}.parquet"), row_group_size=50)
    return rows


@pytest.fixture(scope="module")
def output(spark, tmp_path_factory, model_path):
    """Two incremental runs over a growing lake, three partitions each; returns (OUT, expected {id: text})."""
    lake = tmp_path_factory.mktemp("lake")
    out = tmp_path_factory.mktemp("tokens") / "out"
    expected = dict(_write_lake(lake, 1, 120))
    config = dict(model=model_path, output=str(out), keep_columns=["id"], partitions=3, mode="incremental",
                  progress_seconds=5)
    run_tokenize(spark, TokenizeConfig(inputs=[str(lake)], **config))
    expected.update(_write_lake(lake, 2, 80))
    run_tokenize(spark, TokenizeConfig(inputs=[str(lake)], **config))
    assert len(read_manifest(out)["runs"]) == 2
    return str(out), expected


def _check(rows: list[tuple[int, list[int]]], expected: dict[int, str], tokenizer: Tokenizer) -> None:
    assert sorted(r[0] for r in rows) == sorted(expected)   # every document, once
    for doc_id, ids in rows:
        assert tokenizer.decode(list(ids)) == expected[doc_id]


def test_pyarrow_dataset_reads_the_directory(output, model_path):
    import pyarrow.dataset as ds

    path, expected = output
    table = ds.dataset(path, format="parquet").to_table(columns=["id", "input_ids"])
    _check(list(zip(table["id"].to_pylist(), table["input_ids"].to_pylist())), expected, Tokenizer.load(model_path))


def test_spark_reads_the_directory(spark, output, model_path):
    path, expected = output
    rows = spark.read.parquet(path).select("id", "input_ids").collect()
    _check([(r["id"], r["input_ids"]) for r in rows], expected, Tokenizer.load(model_path))


def test_duckdb_reads_the_directory(output, model_path):
    duckdb = pytest.importorskip("duckdb")
    path, expected = output
    rows = duckdb.sql(f"SELECT id, input_ids FROM read_parquet('{path}')").fetchall()
    _check(rows, expected, Tokenizer.load(model_path))


def test_polars_reads_the_directory(output, model_path):
    polars = pytest.importorskip("polars")
    path, expected = output
    frame = polars.read_parquet(path, columns=["id", "input_ids"])
    _check(list(zip(frame["id"].to_list(), frame["input_ids"].to_list())), expected, Tokenizer.load(model_path))


def test_hugging_face_datasets_reads_the_directory(output, model_path, tmp_path):
    datasets = pytest.importorskip("datasets")
    path, expected = output
    for loaded in (datasets.load_dataset("parquet", data_dir=path, split="train", cache_dir=str(tmp_path / "a")),
                   datasets.load_dataset(path, split="train", cache_dir=str(tmp_path / "b"))):
        _check(list(zip(loaded["id"], loaded["input_ids"])), expected, Tokenizer.load(model_path))


def test_control_tokens_in_text_are_ordinary_text_unless_the_job_opts_in(spark, tmp_path, model_path):
    text = tmp_path / "in.txt"
    text.write_text("a <s> b </s>\n")
    tokenizer = Tokenizer.load(model_path)
    found = {}
    for opt_in in (False, True):
        out = tmp_path / f"out-{opt_in}"
        run_tokenize(spark, TokenizeConfig(model=model_path, inputs=[str(text)], output=str(out),
                                           control_tokens_in_text=opt_in, verify=True, progress_seconds=5))
        found[opt_in] = pq.read_table(str(out))["input_ids"].to_pylist()[0]
    assert tokenizer.bos_id not in found[False] and tokenizer.decode(found[False]) == "a <s> b </s>"
    assert tokenizer.bos_id in found[True] and tokenizer.eos_id in found[True]
