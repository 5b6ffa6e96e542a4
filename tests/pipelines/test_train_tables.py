"""``shardpiece train`` from Delta Lake and Iceberg tables written by their own libraries (and Parquet with
``--where``), from lines of the repository's sample corpus: a model trained from a table has the bytes of the one
trained from the same lines as a text file, in this process and on Spark (BytePiece reads a corpus of the table's
documents, BPE counts the table's units in its tasks); ``--where`` and time travel select the right rows; the work
directory's key and the fingerprint follow the table's version; a missing column, a filter on one and an empty
selection stop with one line naming the fix."""

from __future__ import annotations

import gzip
import hashlib
import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

pytest.importorskip("deltalake")
pytest.importorskip("pyiceberg")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ALGORITHMS = {  # small vocabularies; bytepiece reads a corpus on Spark, bpe counts the units in its tasks
    "bytepiece": ["--algorithm", "bytepiece", "--min-count", "2", "--order", "4", "--vocab-size", "400"],
    "bpe": ["--algorithm", "bpe", "--vocab-size", "400"],
}


def sample_lines(lang: str, count: int = 800) -> list[str]:
    with gzip.open(os.path.join(REPO, "data", "sample", f"{lang}.txt.gz"), "rt", encoding="utf-8") as handle:
        lines = [line.rstrip("\n") for line in handle]
    return [line for line in lines if line][:count]


def documents(lines: list[str], lang: str, first_id: int) -> pa.Table:
    return pa.table({"id": pa.array(range(first_id, first_id + len(lines)), pa.int64()), "text": lines,
                     "lang": [lang] * len(lines)})


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> dict:
    """Version 0 of a Delta table and of an Iceberg table holds the English lines, version 1 adds the Chinese
    ones; the same lines as text files (all, English only) and as Parquet files."""
    from deltalake import write_deltalake
    from pyiceberg.catalog import load_catalog

    root = tmp_path_factory.mktemp("lake")
    en, zh = documents(sample_lines("en"), "en", 0), documents(sample_lines("zh"), "zh", 10_000)
    write_deltalake(str(root / "delta"), en, partition_by=["lang"])
    write_deltalake(str(root / "delta"), zh, mode="append", partition_by=["lang"])
    catalog = {"name": "lake", "type": "sql", "uri": f"sqlite:///{root}/catalog.db",
               "warehouse": f"file://{root}/warehouse"}
    iceberg = load_catalog("lake", **{k: v for k, v in catalog.items() if k != "name"})
    iceberg.create_namespace("web")
    iceberg.create_table("web.docs", schema=en.schema).append(en)
    iceberg.load_table("web.docs").append(zh)
    (root / "iceberg.yaml").write_text(json.dumps({"catalog": catalog}), encoding="utf-8")  # YAML reads JSON
    for name, tables in (("all", [en, zh]), ("en", [en])):
        text = "".join(line + "\n" for table in tables for line in table.column("text").to_pylist())
        (root / f"{name}.txt").write_text(text, encoding="utf-8")
    (root / "parquet").mkdir()
    pq.write_table(en, root / "parquet" / "a.parquet", row_group_size=300)
    pq.write_table(zh, root / "parquet" / "b.parquet", row_group_size=300)
    return {"root": root, "delta": str(root / "delta"), "iceberg": ["web.docs", "--config", str(root / "iceberg.yaml")],
            "text": str(root / "all.txt"), "en": str(root / "en.txt"), "parquet": str(root / "parquet")}


def train(flags: list[str], source: list[str], out, *extra: str) -> tuple[str, dict]:
    from jobs.train import main

    model = out / "m.model"
    argv = ["train", *flags, "--input", *source, "--output", str(model), "--holdout-fraction", "0.1", "--quiet",
            "--work-dir", str(out / "work"), *extra]
    assert main(argv) == 0
    manifest = json.loads((out / "m.model.manifest.json").read_text())
    return hashlib.sha256(model.read_bytes()).hexdigest(), manifest


def table_source(lake: dict, kind: str) -> list[str]:
    return [lake["delta"], "--input-format", "delta"] if kind == "delta" else \
        [*lake["iceberg"][:1], "--input-format", "iceberg", *lake["iceberg"][1:]]


@pytest.mark.spark
@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_a_model_from_a_table_equals_the_model_from_its_text_on_both_engines(spark, lake, tmp_path, name):
    flags = ALGORITHMS[name]
    text_hash, text_manifest = train(flags, [lake["text"]], tmp_path / "text", "--master", "none")
    for kind in ("delta", "iceberg"):
        for engine in ("none", "local[2]"):
            out = tmp_path / f"{kind}-{engine[:5]}"
            model_hash, manifest = train(flags, table_source(lake, kind), out, "--master", engine)
            assert model_hash == text_hash, (kind, engine)
            assert manifest["engine"] == ("in-process" if engine == "none" else "spark")
            assert manifest["input_format"] == kind and manifest["table"]["format"] == kind
            assert manifest["table"]["version"] == manifest["input_fingerprint"]["version"]
            assert manifest["training_documents"] == text_manifest["training_documents"]
            if engine == "none" or name == "bytepiece":  # bytepiece on Spark reads a corpus of the table first
                assert manifest["read"]["documents"] == 1600 and manifest["read"]["files"] == 2


@pytest.mark.spark
def test_where_and_time_travel_select_the_rows_of_the_model_trained_on_them(spark, lake, tmp_path):
    flags = ALGORITHMS["bpe"]
    en_hash, _ = train(flags, [lake["en"]], tmp_path / "en", "--master", "none")
    where = ["--where", "lang = 'en' AND id < 10000"]
    assert train(flags, [lake["delta"], "--input-format", "delta", *where], tmp_path / "dw", "--master", "none")[0] \
        == en_hash
    assert train(flags, table_source(lake, "iceberg") + where, tmp_path / "iw", "--master", "local[2]")[0] == en_hash
    model_hash, manifest = train(flags, [lake["parquet"], *where], tmp_path / "pw", "--master", "local[2]")
    assert model_hash == en_hash and manifest["table"] == {"format": "parquet", "table": None, "version": None,
                                                           "where": "(lang = 'en' AND id < 10000)"}
    assert train(flags, [lake["parquet"], "--where", "id < 10000"], tmp_path / "pw1", "--master", "none")[0] \
        == en_hash
    old_hash, manifest = train(flags, [lake["delta"], "--input-format", "delta", "--table-version", "0"],
                               tmp_path / "d0", "--master", "none")
    assert old_hash == en_hash and manifest["table"]["version"] == 0


def test_the_work_directory_follows_the_table_version_and_the_filter(lake, tmp_path):
    """One work directory: the same table version resumes; another version, or another filter, gets a key of its
    own (nothing of the other corpus is reused), with another input fingerprint."""
    from deltalake import DeltaTable, write_deltalake

    table = str(tmp_path / "docs")
    write_deltalake(table, DeltaTable(lake["delta"]).to_pyarrow_table(), partition_by=["lang"])
    flags = [*ALGORITHMS["bpe"], "--input-format", "delta", "--master", "none"]
    _, first = train(flags, [table], tmp_path / "a")
    _, again = train(flags, [table], tmp_path / "a")
    assert all(stage["resumed"] for stage in again["stages"] if stage["name"] == "chunks")
    assert again["work_dir"]["path"] == first["work_dir"]["path"]
    write_deltalake(table, documents(["one more line"], "en", 99_999), mode="append", partition_by=["lang"])
    _, newer = train(flags, [table], tmp_path / "a")
    assert newer["table"]["version"] == 1 and first["table"]["version"] == 0
    assert newer["input_fingerprint"]["digest"] != first["input_fingerprint"]["digest"]
    assert newer["work_dir"]["path"] != first["work_dir"]["path"]
    assert not any(stage.get("resumed") for stage in newer["stages"])
    _, filtered = train(flags, [table, "--where", "lang = 'zh'"], tmp_path / "a")
    assert filtered["work_dir"]["path"] not in (first["work_dir"]["path"], newer["work_dir"]["path"])
    assert filtered["input_fingerprint"]["digest"] == newer["input_fingerprint"]["digest"]


@pytest.mark.parametrize("extra, message", [
    (["--text-column", "body"], r"table .* has no column 'body' \(its columns: id, text, lang\): fix --text-column"),
    (["--where", "quality > 0.5"], r"has no column 'quality' .*: fix --where"),
    (["--where", "lang = 'fr'"], r"Delta table .* at version 1 with --where lang = 'fr' gives no text to train on "
                                 r".*check --where"),
    (["--table-version", "7"], r"has no version 7"),
    (["--snapshot-id", "7"], r"--snapshot-id is for --input-format iceberg"),
])
def test_a_table_input_that_cannot_train_stops_with_one_line_naming_the_fix(lake, tmp_path, capsys, extra,
                                                                              message):
    import re

    from jobs.train import main

    argv = ["train", *ALGORITHMS["bpe"], "--input", lake["delta"], "--input-format", "delta", "--output",
            str(tmp_path / "m.model"), "--master", "none", *extra]
    assert main(argv) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and re.search(message, error[0]), error


def test_a_table_folder_given_as_files_and_an_iceberg_table_without_its_catalog_are_refused(lake, tmp_path, capsys):
    from jobs.train import main

    base = ["train", *ALGORITHMS["bpe"], "--output", str(tmp_path / "m.model"), "--master", "none"]
    assert main([*base, "--input", lake["delta"]]) == 2
    assert "is a Delta table: pass --input-format delta" in capsys.readouterr().err
    assert main([*base, "--input", "web.docs", "--input-format", "iceberg"]) == 2
    assert "needs the catalog: a 'catalog:' section in --config" in capsys.readouterr().err
    assert main([*base, "--input", lake["text"], "--where", "lang = 'en'"]) == 2
    assert "--where filters Parquet files and tables" in capsys.readouterr().err
