"""``shardpiece tokenize`` options, config files and ``--merge-megatron`` (no Spark needed for these)."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest

from jobs.tokenize import build_parser, main, make_config
from pipelines.tokenize.commit import InputFile, OutputDirectory, TaskResult
from pipelines.tokenize.writers import open_shard_writer
from tokenizer.errors import ConfigError
from tokenizer.interop.megatron import MegatronDataset


def _config(argv):
    config, master, _ = make_config(build_parser().parse_args(argv))
    return config, master


def test_engine_flags_are_checked_as_train_checks_them():
    base = ["--model", "m.model", "--input", "a.parquet", "--output", "out"]
    _config([*base, "--engine", "spark"])  # the default engine, named
    with pytest.raises(ConfigError, match="--runner is for Apache Beam: add --engine beam, or drop it"):
        _config([*base, "--engine", "spark", "--runner", "DirectRunner"])
    with pytest.raises(ConfigError, match=r"--master local\[2\] is Spark's: with --engine beam choose the runner"):
        _config([*base, "--engine", "beam", "--master", "local[2]"])


def test_flags_override_the_config_file(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("model: m.bin\ninput: [a.parquet, b.parquet]\noutput: out\nkeep-columns: id,url\n"
                    "output_format: megatron\nmaster: local[3]\nverify: true\nverify_rate: 0.25\n"
                    "parquet-compression: snappy\n")
    config, master = _config(["--config", str(path), "--output-format", "npy", "--add-eos"])
    assert config.inputs == ["a.parquet", "b.parquet"] and config.keep_columns == ["id", "url"]
    assert config.parquet_compression == "snappy"
    assert _config(["--config", str(path), "--parquet-compression", "none"])[0].parquet_compression == "none"
    assert config.output_format == "npy" and config.add_eos and not config.add_bos
    assert config.verify and config.verify_rate == 0.25 and master == "local[3]"
    config, master = _config(["--config", str(path), "--master", "local[1]", "--input", "x.txt"])
    assert master == "local[1]" and config.inputs == ["x.txt"]
    path.write_text(path.read_text() + "driver_memory: 6g\n")
    assert make_config(build_parser().parse_args(["--config", str(path)]))[2] == "6g"
    assert make_config(build_parser().parse_args(["--config", str(path), "--driver-memory", "1g"]))[2] == "1g"


def test_unknown_and_missing_options_are_named(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("model: m\ninput: a\noutput: o\nvocab_size: 8\n")
    with pytest.raises(ConfigError, match="vocab_size"):
        _config(["--config", str(path)])
    with pytest.raises(ConfigError, match="--model is required"):
        _config(["--input", "a", "--output", "o"])


def test_invalid_options_exit_2_with_a_message(capsys):
    code = main(["tokenize", "--model", "m", "--input", "a", "--output", "o", "--keep-columns", "id",
                 "--output-format", "megatron"])
    assert code == 2
    assert "--keep-columns needs --output-format parquet" in capsys.readouterr().err


def test_verify_rate_must_be_a_share(capsys):
    assert main(["--model", "m", "--input", "a", "--output", "o", "--verify-rate", "1.5"]) == 2
    assert "verify_rate" in capsys.readouterr().err


def _megatron_output(directory, shards):
    out = OutputDirectory(directory)
    out.prepare("error", {})
    results = []
    for partition, docs in enumerate(shards):
        stem = out.task_stem("run-00000", partition, 0)
        writer = open_shard_writer("megatron", stem, vocab_size=300)
        writer.write(pa.table({}), pa.array(docs, pa.list_(pa.int32())))
        names = writer.close()
        sizes = {n: os.path.getsize(os.path.join(os.path.dirname(stem), n)) for n in names}
        results.append(TaskResult(partition, 0, stem, len(docs), 0, 0, sizes, {}))
    out.commit("run-00000", "megatron", {}, [InputFile("in", 1, 1)], results, {})
    return out


def test_merge_megatron_concatenates_shards_in_manifest_order(tmp_path, capsys):
    _megatron_output(tmp_path / "out", [[[1, 2], []], [[3]], [[299, 4, 5]]])
    prefix = str(tmp_path / "merged")
    assert main(["tokenize", "--merge-megatron", str(tmp_path / "out"), "--output", prefix]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report == {"merged": prefix, "sequences": 4, "documents": 4, "dtype": "uint16"}
    assert [d.tolist() for d in MegatronDataset(prefix)] == [[1, 2], [], [3], [299, 4, 5]]


def test_merge_megatron_refuses_an_incomplete_output(tmp_path, capsys):
    out = _megatron_output(tmp_path / "out", [[[1]]])
    out._write_metadata(out.manifest(), None, False, out._shard_schema([]))  # a commit under way
    assert main(["--merge-megatron", out.path, "--output", str(tmp_path / "m")]) == 2
    assert "not a complete tokenize output" in capsys.readouterr().err


@pytest.mark.parametrize("text, message", [
    ("partitions: '4'\n", r"--config .*c\.yaml: key 'partitions' must be an integer, got '4'"),
    ("verify: yes please\n", r"--config .*c\.yaml: key 'verify' must be true or false, got 'yes please'"),
    ("add-eos: 1\n", r"--config .*c\.yaml: key 'add_eos' must be true or false, got 1"),
    ("verify_rate: half\n", r"--config .*c\.yaml: key 'verify_rate' must be a number in \(0, 1\], got 'half'"),
    ("keep_columns: [id, 3]\n", r"--config .*c\.yaml: key 'keep_columns' must be a list of column names"),
    ("input: [a.txt, [b.txt]]\n", r"--config .*c\.yaml: key 'input' must be a path or a list of paths"),
    ("max_document_bytes: 1048576.0\n", r"c\.yaml: key 'max_document_bytes' must be an integer, got 1048576.0"),
    ("ouput: o\n", r"--config .*c\.yaml: unknown key 'ouput' \(did you mean 'output'\?\)"),
])
def test_config_values_of_the_wrong_type_name_the_file_key_and_type(tmp_path, text, message):
    path = tmp_path / "c.yaml"
    path.write_text("model: m\noutput: o\ninput: a.txt\n" + text)
    with pytest.raises(ConfigError, match=message):
        _config(["--config", str(path)])


def test_a_type_error_in_the_config_exits_2_naming_the_key(tmp_path, capsys):
    path = tmp_path / "c.yaml"
    path.write_text("model: m\noutput: o\ninput: a.txt\npartitions: four\n")
    assert main(["--config", str(path)]) == 2
    assert "key 'partitions' must be an integer, got 'four'" in capsys.readouterr().err


def test_null_keeps_the_default_and_the_shipped_config_validates(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("model: m\noutput: o\ninput: a.txt\npartitions: null\ninput_format: null\n")
    config, _ = _config(["--config", str(path)])
    assert config.partitions is None and config.input_format is None
    shipped = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                           "configs", "tokenize.yaml")
    config, master = _config(["--config", shipped])
    config.validate()
    assert config.output_format == "parquet" and config.keep_columns == ["id"] and master == "local[*]"


def test_every_tokenize_option_has_a_type_in_the_schema():
    from dataclasses import fields

    from jobs.config import TOKENIZE_SCHEMA
    from pipelines.tokenize import TokenizeConfig

    from jobs.tokenize import ENGINE_KEYS

    assert {f.name for f in fields(TokenizeConfig)} | {"input", "master", "driver_memory", *ENGINE_KEYS} == \
        set(TOKENIZE_SCHEMA)
