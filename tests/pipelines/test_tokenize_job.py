"""Test data for the tokenize job tests: documents with the awkward cases, written as Parquet, JSONL and text."""

from __future__ import annotations

import json
import os
import random

import pyarrow as pa
import pyarrow.parquet as pq

from pipelines.tokenize.commit import OutputDirectory, read_manifest, read_summary
from pipelines.tokenize.writers import read_shard

PIECES = [b"th", b"the", b" the", b"in", b"ing", b"\xe4\xb8\xad\xe6\x96\x87", b"  ", b"\xf0\x9f\x98\x80"]
WORDS = ["the", "thing", "sing", "中文", "字符", "日本語", "😀", "🎉🎉", "a\tb", "e\u0301", "x\x00y", "  ", "ok\r",
         "Ω", "naïve"]


def make_documents(count: int, seed: int, huge_bytes: int = 0) -> list[str | None]:
    """``count`` documents: empty ones, nulls (None), emoji, CJK, combining marks, NUL, and optionally one
    document of ``huge_bytes`` bytes. No newlines (text input is one document per line)."""
    rng = random.Random(seed)
    documents: list[str | None] = []
    for i in range(count):
        if i % 97 == 0:
            documents.append("")
        elif i % 101 == 1:
            documents.append(None)
        else:
            documents.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 40))))
    if huge_bytes:
        unit = "長い文書 with emoji 😀 and words. "
        documents[count // 2] = (unit * (huge_bytes // len(unit.encode()) + 1))
    return documents


def write_parquet(path: str, documents: list[str | None], first_id: int = 0) -> None:
    pq.write_table(pa.table({"id": pa.array(range(first_id, first_id + len(documents)), pa.int64()),
                             "text": pa.array(documents, pa.string())}), path, row_group_size=700)


def write_jsonl(path: str, documents: list[str | None], first_id: int = 0) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        for i, doc in enumerate(documents):
            record = {"id": first_id + i} if doc is None else {"id": first_id + i, "text": doc}
            handle.write(json.dumps(record, ensure_ascii=bool(i % 2)) + "\n")


def write_text(path: str, documents: list[str | None]) -> None:
    with open(path, "w", encoding="utf-8", newline="") as handle:
        for doc in documents:
            if doc is not None:
                handle.write(doc + "\n")


def decoded_documents(tokenizer, output_dir: str, output_format: str, strip: tuple[int, int] = (0, 0)) -> list[bytes]:
    """Every document of a committed output, decoded to bytes, in manifest order."""
    manifest = read_manifest(output_dir)
    decoded = []
    for run in manifest["runs"]:
        for shard in run["shards"]:
            for ids in read_shard(output_format, os.path.join(output_dir, shard["stem"])):
                ids = [int(i) for i in ids]
                decoded.append(tokenizer.decode_bytes(ids[strip[0]:len(ids) - strip[1]]))
    return decoded


# ---------------------------------------------------------------------------------------------- fixtures
import platform
import signal
import subprocess
import sys
import time
from dataclasses import fields

import pytest

from pipelines.tokenize import TokenizeConfig, run_tokenize
from tokenizer import Model
from tokenizer.errors import ConfigError, InputError
from tokenizer.interop.megatron import MegatronDataset

pytestmark = pytest.mark.spark
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("model") / "test.shardpiece")
    scores = [-2.0, -1.5, -1.0, -2.5, -1.2, -1.0, -3.0, -1.0]
    Model.byte_level(PIECES, scores, specials=("<s>", "</s>")).save(path)
    return path


@pytest.fixture(scope="module")
def tok(model_path):
    from tokenizer import Tokenizer

    return Tokenizer.load(model_path)


def _expected(documents, skip_null: bool) -> list[bytes]:
    return sorted((d or "").encode() for d in documents if not (skip_null and d is None))


def _config(model_path, inputs, output, **options) -> TokenizeConfig:
    return TokenizeConfig(model=model_path, inputs=list(inputs), output=str(output), progress_seconds=5, **options)


# ---------------------------------------------------------------------------------------------- round trips
CASES = [
    ("parquet", "parquet"), ("parquet", "megatron"), ("parquet", "npy"),
    ("jsonl", "megatron"), ("jsonl", "parquet"), ("text", "npy"),
]


@pytest.mark.slow
@pytest.mark.parametrize("input_format,output_format", CASES)
def test_every_document_decodes_to_its_input(spark, tmp_path, model_path, tok, input_format, output_format):
    documents = make_documents(2500, seed=len(input_format) * 7 + len(output_format), huge_bytes=3_000_000)
    inputs = []
    for part in range(2):
        chunk = documents[part * 1250:(part + 1) * 1250]
        path = str(tmp_path / f"in-{part}.{ {'text': 'txt'}.get(input_format, input_format) }")
        writer = {"parquet": write_parquet, "jsonl": write_jsonl, "text": write_text}[input_format]
        writer(path, chunk) if input_format == "text" else writer(path, chunk, part * 1250)
        inputs.append(path)
    keep = ["id"] if output_format == "parquet" else []
    output = tmp_path / "out"
    summary = run_tokenize(spark, _config(model_path, inputs, output, output_format=output_format,
                                          keep_columns=keep, on_bad_row="keep", add_eos=True, verify=True))
    nulls = sum(d is None for d in documents) if input_format != "text" else 0
    expected = _expected([d for d in documents if not (input_format == "text" and d is None)], skip_null=False)
    assert summary["documents"] == len(expected)
    assert summary["bad_rows"]["null"] == nulls and summary["bad_rows"]["kept"] == nulls
    assert summary["verify"]["documents_checked"] == len(expected)
    assert summary["tokens_per_document"]["max"] > 100_000  # the multi-megabyte document
    decoded = decoded_documents(tok, str(output), output_format, strip=(0, 1))
    assert sorted(decoded) == expected
    assert sorted(os.listdir(output))[0] == "_manifest.parquet"
    assert not os.path.exists(output / "_temporary")
    if output_format == "parquet":
        table = pq.read_table(str(output), columns=["id", "input_ids", "num_tokens"])
        by_id = dict(zip(table.column("id").to_pylist(), table.column("input_ids").to_pylist()))
        for i, doc in enumerate(documents):
            if doc is None and input_format == "text":
                continue
            ids = by_id[str(i)] if input_format == "jsonl" else by_id[i]
            assert tok.decode_bytes(ids[:-1]) == (doc or "").encode()
        assert table.column("num_tokens").to_pylist() == [len(ids) for ids in table.column("input_ids").to_pylist()]
    if output_format == "megatron":
        total = sum(len(MegatronDataset(str(output / s))) for s in
                    [sh["stem"] for run in read_manifest(output)["runs"] for sh in run["shards"]])
        assert total == len(expected)


def test_bad_rows_skip_error_keep(spark, tmp_path, model_path, tok):
    documents = ["fine", None, "too large " * 20, "also fine", ""]
    path = str(tmp_path / "in.parquet")
    pq.write_table(pa.table({"text": pa.array(documents, pa.string())}), path)
    with pytest.raises(Exception, match="--on-bad-row"):
        run_tokenize(spark, _config(model_path, [path], tmp_path / "e", max_document_bytes=100))
    summary = run_tokenize(spark, _config(model_path, [path], tmp_path / "s", output_format="npy",
                                          on_bad_row="skip", max_document_bytes=100))
    assert summary["bad_rows"] | {} == {**summary["bad_rows"], "null": 1, "too_large": 1, "skipped": 2, "kept": 0}
    assert summary["documents"] == 3 and summary["rows_read"] == 5
    assert sorted(decoded_documents(tok, str(tmp_path / "s"), "npy")) == [b"", b"also fine", b"fine"]


def test_invalid_utf8_in_a_binary_column(spark, tmp_path, model_path, tok):
    """A byte-level model encodes invalid UTF-8 as the bytes it is: no bad row, lossless."""
    path = str(tmp_path / "in.parquet")
    pq.write_table(pa.table({"text": pa.array([b"ok", b"bad \xff byte"], pa.binary())}), path)
    summary = run_tokenize(spark, _config(model_path, [path], tmp_path / "k", output_format="npy", verify=True))
    assert summary["bad_rows"]["invalid_utf8"] == 0 and summary["bad_rows"]["altered_text"] == 0
    assert sorted(decoded_documents(tok, str(tmp_path / "k"), "npy")) == [b"bad \xff byte", b"ok"]


def test_missing_column_names_the_available_ones(spark, tmp_path, model_path):
    path = str(tmp_path / "in.parquet")
    write_parquet(path, ["a"])
    with pytest.raises(InputError, match="'id', 'text'"):
        run_tokenize(spark, _config(model_path, [path], tmp_path / "o", text_column="body"))


def test_modes_error_skip_overwrite(spark, tmp_path, model_path):
    path = str(tmp_path / "in.parquet")
    write_parquet(path, ["one", "two"])
    output = tmp_path / "out"
    run_tokenize(spark, _config(model_path, [path], output))
    with pytest.raises(ConfigError, match="--mode"):
        run_tokenize(spark, _config(model_path, [path], output))
    assert run_tokenize(spark, _config(model_path, [path], output, mode="skip"))["status"] == "skipped"
    summary = run_tokenize(spark, _config(model_path, [path], output, mode="overwrite", output_format="megatron"))
    assert summary["documents"] == 2 and summary["run_id"] == "run-00000"


def test_the_job_summary_records_the_resolved_options_and_versions(spark, tmp_path, model_path, capsys):
    import numpy
    import pyspark

    from jobs.tokenize import main
    from tokenizer import __version__

    path = str(tmp_path / "in.parquet")
    write_parquet(path, ["one", "two"])
    config = tmp_path / "t.yaml"
    config.write_text("output_format: megatron\nverify: true\nverify_rate: 0.5\non-bad-row: skip\n")
    output = tmp_path / "out"
    assert main(["tokenize", "--config", str(config), "--model", model_path, "--input", path, "--output",
                 str(output), "--output-format", "npy", "--progress-seconds", "5"]) == 0
    printed = json.loads(capsys.readouterr().out)
    written = read_summary(output)
    assert written == printed
    resolved = written["config"]
    # the file's values, the command line's over them, and the defaults of everything neither gave
    assert resolved["output_format"] == "npy" and resolved["verify"] is True and resolved["verify_rate"] == 0.5
    assert resolved["on_bad_row"] == "skip" and resolved["inputs"] == [path] and resolved["model"] == model_path
    assert resolved["add_bos"] is False and resolved["max_document_bytes"] == 64 << 20
    assert resolved["master"] == spark.sparkContext.master and "fault_injection" not in resolved
    assert set(resolved) == {f.name for f in fields(TokenizeConfig)} - {"fault_injection"} | {"master"}
    versions = written["versions"]
    assert versions["shardpiece"] == __version__ and versions["pyspark"] == pyspark.__version__
    assert versions["numpy"] == numpy.__version__ and versions["pyarrow"] == pa.__version__
    assert versions["python"] == platform.python_version() and versions["spark"] == spark.version


def test_parquet_compression_reaches_every_shard(spark, tmp_path, model_path, tok):
    documents = make_documents(400, seed=5)
    source = str(tmp_path / "in.parquet")
    write_parquet(source, documents)
    output = tmp_path / "out"
    run_tokenize(spark, _config(model_path, [source], output, parquet_compression="snappy", on_bad_row="skip",
                                partitions=2))
    shards = [str(output / shard["stem"]) + ".parquet"
              for run in read_manifest(output)["runs"] for shard in run["shards"]]
    assert len(shards) == 2
    for shard in shards:
        metadata = pq.ParquetFile(shard).metadata
        assert {metadata.row_group(g).column(c).compression for g in range(metadata.num_row_groups)
                for c in range(metadata.num_columns)} == {"SNAPPY"}
    assert sorted(decoded_documents(tok, str(output), "parquet")) == _expected(documents, True)
    with pytest.raises(ConfigError, match="use one of zstd, snappy, lz4, none"):
        run_tokenize(spark, _config(model_path, [source], tmp_path / "out2", parquet_compression="lzo"))
    assert not os.path.exists(tmp_path / "out2")


# ---------------------------------------------------------------------------------------------- incremental
def test_incremental_reads_only_new_files(spark, tmp_path, model_path, tok):
    lake = tmp_path / "lake"
    lake.mkdir()
    first = make_documents(600, seed=1)
    write_parquet(str(lake / "day-1.parquet"), first)
    output = tmp_path / "out"
    config = dict(output_format="megatron", mode="incremental", on_bad_row="skip")
    run1 = run_tokenize(spark, _config(model_path, [str(lake)], output, **config))
    assert [os.path.basename(p) for p in run1["input_files"]] == ["day-1.parquet"]
    second, third = make_documents(300, seed=2), make_documents(200, seed=3)
    write_parquet(str(lake / "day-2.parquet"), second, first_id=600)
    write_parquet(str(lake / "day-3.parquet"), third, first_id=900)
    run2 = run_tokenize(spark, _config(model_path, [str(lake)], output, **config))
    assert [os.path.basename(p) for p in run2["input_files"]] == ["day-2.parquet", "day-3.parquet"]
    assert run2["rows_read"] == 500 and run2["run_id"] == "run-00001"
    manifest = read_manifest(output)
    assert [[os.path.basename(f["path"]) for f in run["inputs"]] for run in manifest["runs"]] == \
        [["day-1.parquet"], ["day-2.parquet", "day-3.parquet"]]
    assert sorted(decoded_documents(tok, str(output), "megatron")) == _expected(first + second + third, True)
    run3 = run_tokenize(spark, _config(model_path, [str(lake)], output, **config))
    assert run3["status"].startswith("up to date") and run3["input_files"] == []
    write_parquet(str(lake / "day-1.parquet"), first[:10])
    with pytest.raises(InputError, match="changed since it was tokenized"):
        run_tokenize(spark, _config(model_path, [str(lake)], output, **config))
    with pytest.raises(ConfigError, match="output_format"):
        run_tokenize(spark, _config(model_path, [str(lake)], output, **{**config, "output_format": "npy"}))


# ---------------------------------------------------------------------------------------------- failures
def _lake(tmp_path, count=1800):
    lake = tmp_path / "lake"
    lake.mkdir()
    documents = make_documents(count, seed=11)
    third = count // 3
    for part in range(3):
        write_parquet(str(lake / f"part-{part}.parquet"), documents[part * third:(part + 1) * third], part * third)
    return str(lake), documents


def _cli(args: list[str]) -> subprocess.Popen:
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SHARDPIECE_DRIVER_MEMORY": "1g", "PYTHONPATH": REPO}
    return subprocess.Popen([sys.executable, "-m", "jobs.cli", "tokenize", *args], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


def _fault_config(tmp_path, partition: int, action: str) -> tuple[str, str]:
    marker = str(tmp_path / "fault-marker")
    path = tmp_path / "fault.yaml"
    path.write_text(json.dumps({"fault_injection": {"partition": partition, "marker": marker, "action": action}}))
    return str(path), marker


@pytest.mark.slow
def test_a_failed_task_attempt_leaves_no_duplicates_or_gaps(tmp_path, model_path, tok):
    lake, documents = _lake(tmp_path)
    config, marker = _fault_config(tmp_path, partition=1, action="fail")
    output = tmp_path / "out"
    process = _cli(["--model", model_path, "--input", lake, "--output", str(output), "--output-format", "npy",
                    "--partitions", "3", "--on-bad-row", "skip", "--verify", "--master", "local[2,2]",
                    "--config", config])
    stdout, stderr = process.communicate(timeout=600)
    assert process.returncode == 0, stderr.decode()[-3000:]
    assert open(marker).read().startswith("attempt")      # the first attempt of partition 1 died
    summary = json.loads(stdout)
    assert summary["partitions"] == 3 and summary["verify"]["documents_checked"] == summary["documents"]
    manifest = read_manifest(output)
    assert [shard["partition"] for shard in manifest["runs"][0]["shards"]] == [0, 1, 2]
    assert sorted(decoded_documents(tok, str(output), "npy")) == _expected(documents, skip_null=True)
    assert sorted(os.listdir(output)) == ["_manifest.parquet"] + sorted(
        f"run-00000-part-{p:05d}.{kind}.npy" for p in range(3) for kind in ("offsets", "tokens"))


@pytest.mark.slow
def test_a_killed_job_is_completed_by_the_rerun(spark, tmp_path, model_path, tok):
    lake, documents = _lake(tmp_path)
    config, marker = _fault_config(tmp_path, partition=2, action="hang")
    output = tmp_path / "out"
    options = ["--output-format", "megatron", "--partitions", "3", "--on-bad-row", "skip"]
    process = _cli(["--model", model_path, "--input", lake, "--output", str(output), "--master", "local[2]",
                    "--config", config, *options])
    deadline = time.monotonic() + 400
    while not os.path.exists(marker) and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.5)
    assert os.path.exists(marker), process.communicate()[1].decode()[-3000:] if process.poll() is not None else ""
    time.sleep(2)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    partial = [name for _, _, names in os.walk(output / "_temporary") for name in names]
    assert partial and not OutputDirectory(output).is_complete()   # died midway, with files written
    with pytest.raises(ConfigError, match="--mode"):
        run_tokenize(spark, _config(model_path, [lake], output, output_format="megatron", partitions=3,
                                    on_bad_row="skip"))
    summary = run_tokenize(spark, _config(model_path, [lake], output, output_format="megatron", partitions=3,
                                          on_bad_row="skip", mode="skip", verify=True))
    assert summary["status"] == "committed"
    assert sorted(decoded_documents(tok, str(output), "megatron")) == _expected(documents, skip_null=True)
    assert not os.path.exists(output / "_temporary")
    assert run_tokenize(spark, _config(model_path, [lake], output, output_format="megatron", partitions=3,
                                       on_bad_row="skip", mode="skip"))["status"] == "skipped"
