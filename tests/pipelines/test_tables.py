"""Delta Lake and Iceberg tables written by their own libraries (deltalake, pyiceberg with a SQL catalog on SQLite):
at every step of a scripted history (append, delete, update, overwrite, compaction, a schema change that adds a
column) and at earlier versions (time travel), the rows read file by file with :func:`read_table_file` equal, as a
multiset, the rows the table's library itself gives for that version; a table folder given as files is refused."""

from __future__ import annotations

import collections
import datetime as dt

import pyarrow as pa
import pytest

from pipelines.read.tables import (delta_snapshot, iceberg_snapshot, read_table_file, refuse_table_folder,
                                   table_folder_kind)
from tokenizer.errors import ConfigError, InputError

deltalake = pytest.importorskip("deltalake")
pytest.importorskip("pyiceberg")


def docs(start: int, count: int, lang: str) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + count), pa.int64()),
                     "text": [f"document {i} 中文 {lang}" for i in range(start, start + count)],
                     "lang": [lang] * count})


def rows_of(snapshot, columns) -> collections.Counter:
    if not snapshot.files:
        return collections.Counter()
    table = pa.concat_tables([read_table_file(f, columns, snapshot.schema) for f in snapshot.files])
    return collections.Counter(zip(*(table.column(c).to_pylist() for c in columns)))


def counter(table: pa.Table, columns) -> collections.Counter:
    return collections.Counter(zip(*(table.column(c).to_pylist() for c in columns)))


def test_delta_table_at_every_version_is_what_deltalake_reads(tmp_path):
    from deltalake import DeltaTable, write_deltalake

    path = str(tmp_path / "docs")
    write_deltalake(path, pa.concat_tables([docs(0, 30, "en"), docs(30, 20, "zh")]), partition_by=["lang"])
    write_deltalake(path, docs(50, 10, "en"), mode="append", partition_by=["lang"])
    DeltaTable(path).delete("id % 7 = 0")                                    # rewrites files
    DeltaTable(path).update(predicate="id = 8", updates={"text": "'changed text'"})
    write_deltalake(path, pa.concat_tables([docs(70, 5, "en"), docs(80, 5, "zh")]), mode="append",
                    partition_by=["lang"])
    assert DeltaTable(path).optimize.compact()["numFilesRemoved"] >= 2     # dataChange=false rewrite
    with_topic = docs(60, 5, "ja").append_column("topic", pa.array(["news"] * 5))
    write_deltalake(path, with_topic, mode="append", partition_by=["lang"], schema_mode="merge")
    latest = DeltaTable(path).version()
    assert latest == 6 and DeltaTable(path).history(2)[1]["operation"] == "OPTIMIZE"
    for version in range(latest + 1):
        snapshot = delta_snapshot(path, version=version)
        expected = DeltaTable(path, version=version).to_pyarrow_table()
        columns = expected.column_names
        assert snapshot.version == version and snapshot.schema.names == columns
        assert rows_of(snapshot, columns) == counter(expected, columns), f"version {version}"
        assert snapshot.describe()["rows"] == expected.num_rows
    newest = delta_snapshot(path)
    assert newest.version == latest and {f.partition for f in newest.files} == {
        (("lang", "en"),), (("lang", "zh"),), (("lang", "ja"),)}
    older = rows_of(delta_snapshot(path, version=1), ["id", "text", "lang"])
    assert sum(older.values()) == 60 and ("changed text" not in {text for _, text, _ in older})


def test_delta_time_travel_by_time_and_the_errors(tmp_path):
    from deltalake import write_deltalake

    path = str(tmp_path / "docs")
    write_deltalake(path, docs(0, 5, "en"))
    middle = dt.datetime.now(dt.timezone.utc).isoformat()
    write_deltalake(path, docs(5, 5, "en"), mode="append")
    assert sum(rows_of(delta_snapshot(path, as_of=middle), ["id"]).values()) == 5
    assert sum(rows_of(delta_snapshot(path), ["id"]).values()) == 10
    with pytest.raises(InputError, match="has no version 9"):
        delta_snapshot(path, version=9)
    with pytest.raises(ConfigError, match="give one of them"):
        delta_snapshot(path, version=0, as_of=middle)
    with pytest.raises(ConfigError, match="ISO 8601"):
        delta_snapshot(path, as_of="yesterday")
    with pytest.raises(InputError, match="is not a Delta table"):
        delta_snapshot(str(tmp_path))
    with pytest.raises(InputError, match="column 'body' is not in the table"):
        read_table_file(delta_snapshot(path).files[0], ["body"], delta_snapshot(path).schema)


@pytest.fixture
def catalog(tmp_path):
    return {"name": "lake", "type": "sql", "uri": f"sqlite:///{tmp_path}/catalog.db",
            "warehouse": f"file://{tmp_path}/warehouse"}


def test_iceberg_table_at_every_snapshot_is_what_pyiceberg_reads(catalog):
    from pyiceberg.catalog import load_catalog
    from pyiceberg.types import StringType

    lake = load_catalog(catalog["name"], **{k: v for k, v in catalog.items() if k != "name"})
    lake.create_namespace("web")
    table = lake.create_table("web.docs", schema=docs(0, 1, "en").schema)
    assert iceberg_snapshot("web.docs", catalog).files == ()  # a table without a snapshot: no rows
    table.append(pa.concat_tables([docs(0, 30, "en"), docs(30, 20, "zh")]))
    table.append(docs(50, 10, "en"))
    table.delete("id = 7")                                                   # copy-on-write rewrite
    table.overwrite(docs(100, 8, "ja"), overwrite_filter="lang == 'zh'")
    with table.update_schema() as update:
        update.add_column("topic", StringType())
    table = lake.load_table("web.docs")
    table.append(docs(200, 4, "en").append_column("topic", pa.array(["news"] * 4, pa.large_string())))
    table = lake.load_table("web.docs")
    for snapshot in table.snapshots():
        ours = iceberg_snapshot("web.docs", catalog, snapshot_id=snapshot.snapshot_id)
        expected = table.scan(snapshot_id=snapshot.snapshot_id).to_arrow()
        columns = ["id", "text", "lang"]
        assert ours.version == snapshot.snapshot_id
        assert rows_of(ours, columns) == counter(expected, columns), f"snapshot {snapshot.snapshot_id}"
    current = iceberg_snapshot("web.docs", catalog)
    read = rows_of(current, ["id", "topic"])
    assert read[(200, "news")] == 1 and read[(0, None)] == 1  # the added column: null in the older files
    with pytest.raises(InputError, match="no snapshot 12345"):
        iceberg_snapshot("web.docs", catalog, snapshot_id=12345)
    with pytest.raises(InputError, match="not in the catalog"):
        iceberg_snapshot("web.missing", catalog)
    with pytest.raises(ConfigError, match="catalog:"):
        iceberg_snapshot("web.docs", {})


def test_a_table_folder_read_as_files_is_refused(tmp_path, catalog):
    from deltalake import write_deltalake

    path = str(tmp_path / "delta")
    write_deltalake(path, docs(0, 3, "en"))
    assert table_folder_kind(path) == "delta" and table_folder_kind(str(tmp_path)) is None
    with pytest.raises(InputError, match="is a Delta table: pass --input-format delta"):
        refuse_table_folder([path], "parquet")
    refuse_table_folder([path], "delta")  # the right format: no error
    refuse_table_folder([str(tmp_path / "missing")], "parquet")
