"""The tokenize job's direct Parquet read path (pyarrow in the Python tasks) and its fallback to Spark's reader."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.read.arrow_read import ParquetUnit, arrow_filesystem, assign_units, default_tasks, plan_parquet, \
    read_units, split_units
from pipelines.tokenize.commit import OutputDirectory, read_manifest
from pipelines.tokenize import TokenizeConfig
from pipelines.tokenize.writers import read_shard
from tokenizer import Model, Tokenizer

EMPTY = pa.schema([])
PIECES = [b"th", b"the", b" the", b"in", b"ing", b"\xe4\xb8\xad\xe6\x96\x87", b"  ", b"\xf0\x9f\x98\x80"]


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("model") / "test.shardpiece")
    Model.byte_level(PIECES, [-2.0, -1.5, -1.0, -2.5, -1.2, -1.0, -3.0, -1.0], specials=("<s>", "</s>")).save(path)
    return path


@pytest.fixture(scope="module")
def tok(model_path):
    return Tokenizer.load(model_path)


def _config(model_path, inputs, output, **options) -> TokenizeConfig:
    return TokenizeConfig(model=model_path, inputs=list(inputs), output=str(output), progress_seconds=5, **options)


def make_documents(count: int, seed: int) -> list[str | None]:
    """Empty documents, nulls, emoji, CJK and plain words."""
    import random

    rng = random.Random(seed)
    words = ["the", "thing", "中文", "😀", "a\tb", "e\u0301", "x\x00y", "  ", "ok\r"]
    return ["" if i % 97 == 0 else None if i % 101 == 1 else " ".join(rng.choice(words) for _ in range(i % 30 + 1))
            for i in range(count)]


def write_parquet(path: str, documents, first_id: int) -> None:
    ids = range(first_id, first_id + len(documents))
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "tag": pa.array([f"#{i}" for i in ids], pa.large_string()),
                             "text": pa.array(documents, pa.string())}), path, row_group_size=300)


def decoded_documents(tokenizer, output_dir: str, strip_front: int) -> list[bytes]:
    manifest = read_manifest(output_dir)
    return [tokenizer.decode_bytes([int(i) for i in ids][strip_front:])
            for run in manifest["runs"] for shard in run["shards"]
            for ids in read_shard("parquet", os.path.join(output_dir, shard["stem"]))]


def _files(tmp_path, sizes, row_group_size=7):
    paths, first = [], 0
    for index, size in enumerate(sizes):
        path = str(tmp_path / f"part-{index}.parquet")
        documents = [f"doc {first + i}" for i in range(size)]
        pq.write_table(pa.table({"id": pa.array(range(first, first + size), pa.int64()),
                                 "text": pa.array(documents, pa.string())}), path, row_group_size=row_group_size)
        paths.append((path, os.path.getsize(path)))
        first += size
    return paths


# ---------------------------------------------------------------------------------------------- planning (no Spark)
def test_plan_lists_row_groups_in_input_order(tmp_path):
    files = _files(tmp_path, [20, 0, 9])
    plan, keep, reason = plan_parquet(files, "text", [], None)
    assert reason == "" and plan.rows == 29 and keep == EMPTY
    assert [(os.path.basename(u.path), u.row_group, u.rows) for u in plan.units] == [
        ("part-0.parquet", 0, 7), ("part-0.parquet", 1, 7), ("part-0.parquet", 2, 6),
        ("part-2.parquet", 0, 7), ("part-2.parquet", 1, 2)]


def test_units_read_back_every_row_once_in_order(tmp_path):
    files = _files(tmp_path, [20, 13])
    plan, keep, _ = plan_parquet(files, "text", ["id"], 11)
    assert keep == pa.schema([("id", pa.int64())])
    assert len(plan.units) >= 11 and sum(u.rows for u in plan.units) == 33
    for tasks in (1, 2, 5, 11):
        groups = assign_units(plan.units, tasks)
        assert len(groups) == tasks and [u for g in groups for u in g] == plan.units
        ids = []
        for group in groups:
            for batch in read_units(group, "text", pa.schema([("id", pa.int64())]), "__text", "__malformed"):
                assert batch.schema.names == ["__text", "__malformed", "id"]
                assert not any(batch.column("__malformed").to_pylist())
                assert batch.column("__text").to_pylist() == [f"doc {i}" for i in batch.column("id").to_pylist()]
                ids += batch.column("id").to_pylist()
        assert ids == list(range(33))


def test_split_and_assign_by_weight():
    units = [ParquetUnit("a", 0, 0, 10, 1000), ParquetUnit("a", 1, 0, 10, 10), ParquetUnit("b", 0, 0, 10, 10)]
    assert [[u.row_group for u in g] for g in assign_units(units, 2)] == [[0], [1, 0]]
    halves = split_units([ParquetUnit("a", 0, 0, 9, 90)], 2)
    assert [(u.row_start, u.row_stop, u.weight) for u in halves] == [(0, 4, 40), (4, 9, 50)]
    assert split_units([ParquetUnit("a", 0, 0, 1, 9)], 4) == [ParquetUnit("a", 0, 0, 1, 9)]  # one row: no split
    assert default_tasks(units, parallelism=4) == 3 and default_tasks(units, parallelism=1) == 2


def test_files_pyarrow_cannot_take_are_left_to_spark(tmp_path):
    assert arrow_filesystem("s3a://bucket/part-0.parquet") is None
    assert arrow_filesystem("file://otherhost/data/x.parquet") is None
    assert arrow_filesystem("file:///data/x.parquet")[1] == "/data/x.parquet"
    plan, keep, reason = plan_parquet([("s3a://bucket/part-0.parquet", 10)], "text", [], None)
    assert plan is None and keep is None and "s3a://bucket/part-0.parquet" in reason
    (path, size), = _files(tmp_path, [3])
    plan, _, reason = plan_parquet([(path, size + 1)], "text", [], None)
    assert plan is None and "bytes" in reason
    (tmp_path / "bad.parquet").write_bytes(b"not parquet at all")
    plan, _, reason = plan_parquet([(str(tmp_path / "bad.parquet"), 18)], "text", [], None)
    assert plan is None and "footer" in reason
    other = str(tmp_path / "types.parquet")
    pq.write_table(pa.table({"n": pa.array([1], pa.uint32()), "t": pa.array([pa.scalar(0, pa.timestamp("ns"))]),
                             "text": ["a"]}), other)
    for column in ("n", "t"):
        plan, _, reason = plan_parquet([(other, os.path.getsize(other))], "text", [column], None)
        assert plan is None and f"{column!r}" in reason


def test_missing_or_non_text_columns_raise_the_spark_paths_errors(tmp_path):
    from tokenizer.errors import InputError

    (path, size), = _files(tmp_path, [3])
    with pytest.raises(InputError, match="no column 'body' .*'id', 'text'.*--text-column"):
        plan_parquet([(path, size)], "body", [], None)
    with pytest.raises(InputError, match="no column 'url' .*--keep-columns"):
        plan_parquet([(path, size)], "text", ["url"], None)
    with pytest.raises(InputError, match="column 'id' has type int64, not string or binary"):
        plan_parquet([(path, size)], "id", [], None)


# ---------------------------------------------------------------------------------------------- the job

def _read_output(output):
    manifest = read_manifest(output)
    tables = [pq.read_table(str(output / f"{shard['stem']}.parquet"))
              for run in manifest["runs"] for shard in run["shards"]]
    return pa.concat_tables(tables)


@pytest.mark.spark
def test_direct_read_writes_what_the_spark_reader_writes_in_input_order(spark, tmp_path, model_path, tok):
    documents = make_documents(1500, seed=5)
    for part in range(3):
        write_parquet(str(tmp_path / f"in-{part}.parquet"), documents[part * 500:(part + 1) * 500], part * 500)
    inputs = [str(tmp_path / f"in-{part}.parquet") for part in range(3)]
    options = dict(keep_columns=["id", "tag"], on_bad_row="keep", verify=True, add_bos=True)
    direct = run_tokenize_checked(spark, _config(model_path, inputs, tmp_path / "a", **options), "arrow")
    through_spark = run_tokenize_checked(spark, _config(model_path, inputs, tmp_path / "s", reader="spark",
                                                        **options), "spark")
    assert direct["verify"]["documents_checked"] == 1500 and direct["bad_rows"]["null"] == \
        through_spark["bad_rows"]["null"] > 0
    a, s = _read_output(tmp_path / "a"), _read_output(tmp_path / "s")
    assert a.schema == s.schema
    assert a.column("id").to_pylist() == list(range(1500))          # manifest order is input order
    assert a.sort_by("id").equals(s.sort_by("id"))
    assert decoded_documents(tok, str(tmp_path / "a"), strip_front=1) == \
        [(d or "").encode() for d in documents]
    explicit = run_tokenize_checked(spark, _config(model_path, inputs[:1], tmp_path / "p", partitions=4,
                                                   **options), "arrow")
    assert explicit["partitions"] == 4 and _read_output(tmp_path / "p").column("id").to_pylist() == list(range(500))


@pytest.mark.spark
def test_columns_spark_would_convert_fall_back_to_the_spark_reader(spark, tmp_path, model_path, tok):
    path = str(tmp_path / "in.parquet")
    pq.write_table(pa.table({"n": pa.array([1, 2, 3], pa.uint32()), "text": ["a", "the", ""]}), path)
    summary = run_tokenize_checked(spark, _config(model_path, [path], tmp_path / "o", keep_columns=["n"]), "spark")
    table = _read_output(tmp_path / "o")
    assert table.schema.field("n").type == pa.int64() and sorted(table.column("n").to_pylist()) == [1, 2, 3]
    assert summary["documents"] == 3
    from tokenizer.errors import InputError
    from pipelines.tokenize import run_tokenize

    with pytest.raises(InputError, match="reader: arrow cannot read the input: .*'n'"):
        run_tokenize(spark, _config(model_path, [path], tmp_path / "x", keep_columns=["n"], reader="arrow"))


@pytest.mark.spark
def test_a_bad_row_in_a_direct_read_task_stops_the_job_with_the_fix(spark, tmp_path, model_path):
    from pipelines.tokenize import run_tokenize

    path = str(tmp_path / "in.parquet")
    pq.write_table(pa.table({"text": pa.array([b"ok", None], pa.binary())}), path)
    with pytest.raises(Exception, match="--on-bad-row skip") as raised:
        run_tokenize(spark, _config(model_path, [path], tmp_path / "o"))
    assert str(raised.value).startswith(f"file:{path}, row group 0, row 1 (both from 0): no text")
    assert "nothing was committed" in str(raised.value)
    assert not OutputDirectory(tmp_path / "o").is_complete()


def run_tokenize_checked(spark, config, reader):
    from pipelines.tokenize import run_tokenize

    summary = run_tokenize(spark, config)
    assert summary["status"] == "committed" and summary["reader"] == reader
    return summary


@pytest.mark.spark
def test_parquet_files_without_rows_commit_no_shards(spark, tmp_path, model_path):
    path = str(tmp_path / "in.parquet")
    pq.write_table(pa.table({"text": pa.array([], pa.string())}), path)
    summary = run_tokenize_checked(spark, _config(model_path, [path], tmp_path / "o"), "arrow")
    assert summary["documents"] == 0 and summary["partitions"] == 0
    assert read_manifest(tmp_path / "o")["runs"][0]["shards"] == []


# ---------------------------------------------------------------------------------------------- text files
from hypothesis import given, settings, strategies as st  # noqa: E402

from pipelines.read.arrow_read import TextUnit, line_blocks, plan_text, read_text_units  # noqa: E402
from pipelines.read.readers import split_lines  # noqa: E402


def _lines_of(units) -> list[bytes]:
    return [line for batch in read_text_units(units, "t", "m", read_bytes=7) for line in batch.column(0).to_pylist()]


@settings(max_examples=200, deadline=None)
@given(content=st.lists(st.sampled_from([b"a", b"\n", b"\r", b"\r\n", b"\xc3\xa9", b"\xff", b"\x00", b"xyz"]),
                        max_size=60).map(b"".join),
       unit_bytes=st.integers(1, 40), read_bytes=st.integers(1, 16))
def test_text_units_give_every_line_once_in_order(tmp_path_factory, content, unit_bytes, read_bytes):
    """However a file is cut into byte ranges and read in chunks, the units' lines are Spark's lines of the file."""
    path = str(tmp_path_factory.mktemp("t") / "f.txt")
    with open(path, "wb") as handle:
        handle.write(content)
    units, reason = plan_text([(path, len(content))], None, unit_bytes=unit_bytes)
    assert reason == "" and sum(u.stop - u.start for u in units) == len(content)
    lines = [line for batch in read_text_units(units, "t", "m", read_bytes=read_bytes)
             for line in batch.column(0).to_pylist()]
    assert lines == split_lines(content)
    blocks = list(line_blocks([content[i:i + read_bytes] for i in range(0, len(content), read_bytes)], None))
    assert [bytes(d[o[k]:o[k + 1]]) for d, o in blocks for k in range(len(o) - 1)] == split_lines(content)


def test_compressed_text_is_one_unit_read_as_a_stream(tmp_path):
    import gzip

    import zstandard

    content = b"first\r\n\nsecond \xff\n" + b"long " * 5000 + b"\nlast"
    gz, zst = tmp_path / "a.txt.gz", tmp_path / "b.txt.zst"
    gz.write_bytes(gzip.compress(content[:20]) + gzip.compress(content[20:]))        # two gzip members
    compressor = zstandard.ZstdCompressor()
    zst.write_bytes(compressor.compress(content[:9]) + compressor.compress(content[9:]))  # two zstd frames
    units, _ = plan_text([(str(gz), gz.stat().st_size), (str(zst), zst.stat().st_size)], 8, unit_bytes=4)
    assert [(u.start, u.stop) for u in units] == [(0, -1), (0, -1)]
    assert _lines_of(units) == split_lines(content) * 2
    (tmp_path / "bad.txt.gz").write_bytes(gzip.compress(content)[:-9])
    from tokenizer.errors import InputError

    with pytest.raises(InputError, match="bad.txt.gz.*corrupt, truncated"):
        _lines_of(plan_text([(str(tmp_path / "bad.txt.gz"), 10)], None)[0] or
                  [TextUnit(str(tmp_path / "bad.txt.gz"), 0, -1, 1)])
    assert plan_text([(str(tmp_path / "c.txt.bz2"), 3)], None)[0] is None


@pytest.mark.spark
def test_direct_text_read_writes_what_the_spark_reader_writes(spark, tmp_path, model_path, tok, monkeypatch):
    """Text files (plain, cut into several units; gzip; zstd; an empty one) read by the tasks give the same
    documents, in input order, as Spark's text source; --verify and other codecs go to Spark's reader."""
    import gzip

    import zstandard

    import pipelines.read.arrow_read as arrow_read

    monkeypatch.setattr(arrow_read, "TEXT_UNIT_BYTES", 1000)  # lines straddle unit boundaries
    documents = [d if d is not None else "" for d in make_documents(900, seed=9)]
    lake = tmp_path / "lake"
    lake.mkdir()
    (lake / "a.txt").write_bytes(("\n".join(documents[:400]) + "\n").encode())
    (lake / "b.txt.gz").write_bytes(gzip.compress("\r\n".join(documents[400:600]).encode()))
    (lake / "c.txt.zst").write_bytes(zstandard.ZstdCompressor().compress(("\n".join(documents[600:]) + "\n\n").encode()))
    (lake / "d.txt").write_bytes(b"")
    direct = run_tokenize_checked(spark, _config(model_path, [str(lake)], tmp_path / "a", on_bad_row="keep"),
                                  "arrow")
    through_spark = run_tokenize_checked(spark, _config(model_path, [str(lake)], tmp_path / "s", reader="spark",
                                                        on_bad_row="keep"), "spark")
    expected = [d.encode() for d in documents[:400]] + split_lines("\r\n".join(documents[400:600]).encode()) + \
        [d.encode() for d in documents[600:]] + [b""]
    assert decoded_documents(tok, str(tmp_path / "a"), strip_front=0) == expected
    assert sorted(decoded_documents(tok, str(tmp_path / "s"), strip_front=0)) == sorted(expected)
    assert direct["documents"] == through_spark["documents"] == len(expected)
    assert direct["tokens"] == through_spark["tokens"] and direct["partitions"] > 2
    run_tokenize_checked(spark, _config(model_path, [str(lake / "a.txt")], tmp_path / "v", verify=True), "spark")
    from pipelines.tokenize import run_tokenize
    from tokenizer.errors import ConfigError

    with pytest.raises(ConfigError, match="text input has no columns"):
        run_tokenize(spark, _config(model_path, [str(lake / "a.txt")], tmp_path / "k", keep_columns=["id"]))


class SchemeFiles:
    """A ``remote_files`` opener for ``mem://NAME`` paths (files of a local directory), with pyarrow's calls: what
    the Beam engine's :class:`pipelines.beam.files.BeamFiles` is to Beam's ``FileSystems``."""

    def __init__(self, root: str):
        from pyarrow import fs

        self.root, self.local = root, fs.LocalFileSystem()

    def _path(self, path: str) -> str:
        assert path.startswith("mem://"), path
        return os.path.join(self.root, path[len("mem://"):])

    def get_file_info(self, path):
        return self.local.get_file_info(self._path(path))

    def open_input_file(self, path):
        return self.local.open_input_file(self._path(path))

    def open_input_stream(self, path, compression=None):
        return self.local.open_input_stream(self._path(path), compression=compression)


def test_paths_with_a_scheme_are_planned_and_read_through_remote_files(tmp_path):
    """``remote_files`` opens the paths with a scheme (the units keep it, through splits and pickling): the same
    lines and rows as the local paths; without it pyarrow cannot open them and the plan says so."""
    import gzip
    import pickle

    from pipelines.read.arrow_read import BatchPlace, read_work_units

    content = b"alpha\nbeta gamma\n\xff delta\n" * 40
    (tmp_path / "a.txt").write_bytes(content)
    (tmp_path / "b.txt.gz").write_bytes(gzip.compress(content))
    (path, size), = _files(tmp_path, [20])
    files = SchemeFiles(str(tmp_path))
    text = [(name, os.path.getsize(tmp_path / name)) for name in ("a.txt", "b.txt.gz")]
    local_units, _ = plan_text([(str(tmp_path / name), n) for name, n in text], 5)
    units, reason = plan_text([(f"mem://{name}", n) for name, n in text], 5, remote_files=files)
    assert reason == "" and len(units) == len(local_units) > 2 and all(u.filesystem is files for u in units)
    units = pickle.loads(pickle.dumps(units))
    assert _lines_of(units) == _lines_of(local_units) == split_lines(content) * 2
    batch, place = next(read_work_units(units[1:], "text", EMPTY, "t", "m", located=True))
    assert isinstance(place, BatchPlace) and place.describe(0) == \
        next(read_work_units(local_units[1:], "text", EMPTY, "t", "m", located=True))[1].describe(0).replace(
            str(tmp_path) + "/", "mem://")
    assert plan_text([("mem://a.txt", len(content))], None)[0] is None  # pyarrow alone cannot open mem://
    name = os.path.basename(path)
    local_plan, keep, _ = plan_parquet([(path, size)], "text", ["id"], 4)
    plan, _, reason = plan_parquet([(f"mem://{name}", size)], "text", ["id"], 4, files)
    assert reason == "" and all(u.filesystem is files for u in plan.units)
    assert [(u.row_group, u.row_start, u.row_stop) for u in plan.units] == \
        [(u.row_group, u.row_start, u.row_stop) for u in local_plan.units] and len(plan.units) == 4
    assert [b.to_pydict() for b in read_units(pickle.loads(pickle.dumps(plan.units)), "text", keep, "t", "m")] == \
        [b.to_pydict() for b in read_units(local_plan.units, "text", keep, "t", "m")]
    assert plan_parquet([(f"mem://{name}", size)], "text", [], None)[0] is None
