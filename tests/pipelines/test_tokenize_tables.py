"""The tokenize job over Delta Lake and Iceberg tables written by their own libraries, and over Parquet with
``--where``: at each step of a scripted nightly sequence (append, tokenize, append, compact, tokenize) the output
holds, as a multiset of (id, ids), exactly the rows one full run over the table's current version gives; time
travel reads an earlier version; a commit that removed tokenized rows is refused naming its version; the row filter
is applied and recorded."""

from __future__ import annotations

import collections
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.tokenize import TokenizeConfig, run_tokenize
from pipelines.tokenize.commit import read_manifest
from tokenizer import Model, Tokenizer
from tokenizer.errors import ConfigError, InputError

pytest.importorskip("deltalake")
pytest.importorskip("pyiceberg")
pytestmark = pytest.mark.spark

PIECES = [b"do", b"cu", b"ment", b" 1", b"\xe4\xb8\xad\xe6\x96\x87", b"en", b"zh"]


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("model") / "m.shardpiece")
    Model.byte_level(PIECES, [-1.0] * len(PIECES)).save(path)
    return path


def docs(start: int, count: int, lang: str) -> pa.Table:
    ids = range(start, start + count)
    return pa.table({"id": pa.array(ids, pa.int64()), "text": [f"document {i} 中文 {lang}" for i in ids],
                     "lang": [lang] * count, "quality": pa.array([(i % 10) / 10 for i in ids], pa.float64())})


def config(model_path, table, output, **options) -> TokenizeConfig:
    return TokenizeConfig(model=model_path, inputs=[str(table)], output=str(output), keep_columns=["id"],
                          progress_seconds=60, **options)


def output_rows(output) -> collections.Counter:
    """(id, ids) of every committed document, as a multiset."""
    rows = collections.Counter()
    for run in read_manifest(str(output))["runs"]:
        for shard in run["shards"]:
            table = pq.read_table(os.path.join(str(output), shard["stem"] + ".parquet"))
            rows.update(zip(table.column("id").to_pylist(), map(tuple, table.column("input_ids").to_pylist())))
    return rows


def expected_rows(model_path, table: pa.Table) -> collections.Counter:
    tok = Tokenizer.load(model_path)
    return collections.Counter((i, tuple(tok.encode(t))) for i, t in zip(table.column("id").to_pylist(),
                                                                         table.column("text").to_pylist()))


def test_delta_nightly_sequence_time_travel_and_a_refused_delete(spark, tmp_path, model_path):
    from deltalake import DeltaTable, write_deltalake

    table = tmp_path / "docs"
    write_deltalake(str(table), pa.concat_tables([docs(0, 40, "en"), docs(40, 30, "zh")]), partition_by=["lang"])
    out = tmp_path / "out"
    first = run_tokenize(spark, config(model_path, table, out, input_format="delta", mode="incremental"))
    assert first["table"]["version"] == 0 and first["documents"] == 70
    assert output_rows(out) == expected_rows(model_path, DeltaTable(str(table)).to_pyarrow_table())

    write_deltalake(str(table), docs(100, 25, "en"), mode="append", partition_by=["lang"])          # version 1
    second = run_tokenize(spark, config(model_path, table, out, input_format="delta", mode="incremental"))
    assert second["documents"] == 25 and len(second["input_files"]) == 1 and second["table"]["version"] == 1
    assert DeltaTable(str(table)).optimize.compact()["numFilesRemoved"] >= 2                       # version 2
    third = run_tokenize(spark, config(model_path, table, out, input_format="delta", mode="incremental"))
    assert third["status"].startswith("up to date") and third["table"]["covered_files"] >= 1
    assert output_rows(out) == expected_rows(model_path, DeltaTable(str(table)).to_pyarrow_table())
    write_deltalake(str(table), docs(200, 5, "zh"), mode="append", partition_by=["lang"])           # version 3
    fourth = run_tokenize(spark, config(model_path, table, out, input_format="delta", mode="incremental"))
    assert fourth["documents"] == 5 and fourth["table"]["version"] == 3
    full = tmp_path / "full"
    run_tokenize(spark, config(model_path, table, full, input_format="delta"))
    assert output_rows(out) == output_rows(full) == expected_rows(model_path,
                                                                 DeltaTable(str(table)).to_pyarrow_table())

    old = tmp_path / "old"  # time travel: version 0's rows only
    summary = run_tokenize(spark, config(model_path, table, old, input_format="delta", table_version=0))
    assert summary["table"]["version"] == 0
    assert output_rows(old) == expected_rows(model_path, DeltaTable(str(table), version=0).to_pyarrow_table())

    DeltaTable(str(table)).delete("id = 3")                                                          # version 4
    with pytest.raises(InputError, match=r"between version 3 and 4 .*version 4: part-.*--mode overwrite"):
        run_tokenize(spark, config(model_path, table, out, input_format="delta", mode="incremental"))
    assert output_rows(out) == output_rows(full)  # nothing committed


def test_delta_where_on_a_partition_and_a_data_column_and_its_folder_refused_as_parquet(spark, tmp_path,
                                                                                          model_path):
    from deltalake import DeltaTable, write_deltalake

    table = tmp_path / "docs"
    write_deltalake(str(table), pa.concat_tables([docs(0, 50, "en"), docs(50, 50, "zh")]), partition_by=["lang"])
    where = "lang = 'zh' AND quality >= 0.5"
    summary = run_tokenize(spark, config(model_path, table, tmp_path / "zh", input_format="delta", where=where))
    assert summary["where"] == "(lang = 'zh' AND quality >= 0.5)"
    wanted = DeltaTable(str(table)).to_pyarrow_table().filter(
        (pa.compute.field("lang") == "zh") & (pa.compute.field("quality") >= 0.5))
    assert summary["documents"] == wanted.num_rows == 25
    assert output_rows(tmp_path / "zh") == expected_rows(model_path, wanted)
    with pytest.raises(InputError, match="is a Delta table: pass --input-format delta"):
        run_tokenize(spark, config(model_path, table, tmp_path / "x", input_format="parquet"))
    with pytest.raises(InputError, match="no column 'nope'.*fix --where"):
        run_tokenize(spark, config(model_path, table, tmp_path / "y", input_format="delta", where="nope = 1"))
    with pytest.raises(ConfigError, match="--where filters Parquet files and tables"):
        config(model_path, table, tmp_path / "z", input_format="jsonl", where="lang = 'en'").validate()


def test_parquet_files_with_where(spark, tmp_path, model_path):
    folder = tmp_path / "pq"
    folder.mkdir()
    pq.write_table(docs(0, 40, "en"), folder / "a.parquet", row_group_size=15)
    pq.write_table(docs(40, 40, "zh"), folder / "b.parquet", row_group_size=15)
    summary = run_tokenize(spark, config(model_path, folder, tmp_path / "out", where="id BETWEEN 10 AND 59"))
    assert summary["documents"] == 50 and summary["where"] == "id BETWEEN 10 AND 59"
    both = pa.concat_tables([docs(0, 40, "en"), docs(40, 40, "zh")])
    assert output_rows(tmp_path / "out") == expected_rows(
        model_path, both.filter((pa.compute.field("id") >= 10) & (pa.compute.field("id") <= 59)))


def test_iceberg_incremental_time_travel_and_a_refused_overwrite(spark, tmp_path, model_path):
    from pyiceberg.catalog import load_catalog

    catalog = {"name": "lake", "type": "sql", "uri": f"sqlite:///{tmp_path}/catalog.db",
               "warehouse": f"file://{tmp_path}/warehouse"}
    lake = load_catalog("lake", **{k: v for k, v in catalog.items() if k != "name"})
    lake.create_namespace("web")
    table = lake.create_table("web.docs", schema=docs(0, 1, "en").schema)
    table.append(docs(0, 30, "en"))
    first_snapshot = lake.load_table("web.docs").current_snapshot().snapshot_id
    out = tmp_path / "out"
    options = dict(input_format="iceberg", catalog=catalog, mode="incremental")
    first = run_tokenize(spark, config(model_path, "web.docs", out, **options))
    assert first["documents"] == 30 and first["table"]["version"] == first_snapshot
    table = lake.load_table("web.docs")
    table.append(docs(30, 12, "zh"))
    second = run_tokenize(spark, config(model_path, "web.docs", out, **options))
    assert second["documents"] == 12
    assert output_rows(out) == expected_rows(model_path, lake.load_table("web.docs").scan().to_arrow())

    old = tmp_path / "old"
    run_tokenize(spark, config(model_path, "web.docs", old, input_format="iceberg", catalog=catalog,
                               snapshot_id=first_snapshot))
    assert output_rows(old) == expected_rows(model_path, docs(0, 30, "en"))

    lake.load_table("web.docs").delete("id = 5")
    with pytest.raises(InputError, match="changed rows already tokenized.*--mode overwrite"):
        run_tokenize(spark, config(model_path, "web.docs", out, **options))
    redone = run_tokenize(spark, config(model_path, "web.docs", out, **options, on_table_change="retokenize"))
    assert redone["retokenized"]["shards"] >= 1
    assert output_rows(out) == expected_rows(model_path, lake.load_table("web.docs").scan().to_arrow())
    assert sum(output_rows(out).values()) == 41


def test_delta_nightly_sequence_with_retokenize_equals_a_full_run_at_every_step(spark, tmp_path, model_path):
    """append, tokenize, delete, tokenize, append, compact, tokenize, update, tokenize: after each run the output
    holds exactly the current version's rows (as a full run does), shards holding removed rows rebuilt."""
    from deltalake import DeltaTable, write_deltalake

    table, out = tmp_path / "docs", tmp_path / "out"
    nightly = dict(input_format="delta", mode="incremental", on_table_change="retokenize", partitions=3)

    def tokenize_and_check(step: str) -> dict:
        summary = run_tokenize(spark, config(model_path, table, out, **nightly))
        current = DeltaTable(str(table)).to_pyarrow_table()
        assert output_rows(out) == expected_rows(model_path, current), step
        return summary

    write_deltalake(str(table), pa.concat_tables([docs(0, 40, "en"), docs(40, 30, "zh")]), partition_by=["lang"])
    write_deltalake(str(table), docs(100, 20, "en"), mode="append", partition_by=["lang"])
    tokenize_and_check("first run")
    DeltaTable(str(table)).delete("id = 3 OR id = 105")
    summary = tokenize_and_check("after a delete")
    assert summary["retokenized"]["shards"] >= 1
    write_deltalake(str(table), docs(200, 10, "zh"), mode="append", partition_by=["lang"])
    assert DeltaTable(str(table)).optimize.compact()["numFilesRemoved"] >= 2
    tokenize_and_check("after an append and a compaction")  # the compaction mixed new and tokenized rows
    DeltaTable(str(table)).update(predicate="id = 7 OR id = 201", updates={"text": "'changed text'"})
    tokenize_and_check("after an update of compacted files")
    full = tmp_path / "full"
    run_tokenize(spark, config(model_path, table, full, input_format="delta"))
    assert output_rows(out) == output_rows(full)
    kept = {shard["stem"] for run in read_manifest(str(out))["runs"] for shard in run["shards"]}
    on_disk = {name.split(".")[0] for name in os.listdir(out) if name.startswith("run-")}
    assert on_disk == kept  # the replaced shards' files are gone


def test_retokenize_plan_follows_shards_and_compactions_to_a_closure():
    from pipelines.tokenize.retokenize import plan_retokenize

    runs = [{"shards": [{"stem": "s1", "inputs": ["a", "b"]}, {"stem": "s2", "inputs": ["c"]},
                        {"stem": "s3", "inputs": ["d"]}]}]
    # a was rewritten (a2 is new); b and c were compacted into bc, which covers them
    plan = plan_retokenize(runs, ["a"], {"bc": ["b", "c"]}, ["a2", "bc", "d"])
    assert plan.replaced.stems == {"s1", "s2"}  # s2 holds c, whose rows bc holds with b's
    assert plan.reread == ["bc"] and plan.replaced.inputs == {"a", "b", "c", "bc"}
    with pytest.raises(InputError, match="do not record which input files"):
        plan_retokenize([{"shards": [{"stem": "s1"}]}], ["a"], {}, [])
