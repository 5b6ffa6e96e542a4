"""``shardpiece tokenize`` options, config files and ``--merge-megatron`` (no Spark needed for these)."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest

from jobs.tokenize import build_parser, main, make_config
from pipelines.commit import InputFile, OutputDirectory, TaskResult
from pipelines.writers import open_shard_writer
from tokenizer.errors import ConfigError
from tokenizer.interop.megatron import MegatronDataset


def _config(argv):
    return make_config(build_parser().parse_args(argv))


def test_flags_override_the_config_file(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("model: m.bin\ninput: [a.parquet, b.parquet]\noutput: out\nkeep-columns: id,url\n"
                    "output_format: megatron\nmaster: local[3]\nverify: true\nverify_rate: 0.25\n")
    config, master = _config(["--config", str(path), "--output-format", "npy", "--add-eos"])
    assert config.inputs == ["a.parquet", "b.parquet"] and config.keep_columns == ["id", "url"]
    assert config.output_format == "npy" and config.add_eos and not config.add_bos
    assert config.verify and config.verify_rate == 0.25 and master == "local[3]"
    config, master = _config(["--config", str(path), "--master", "local[1]", "--input", "x.txt"])
    assert master == "local[1]" and config.inputs == ["x.txt"]


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
    os.unlink(os.path.join(out.path, "_SUCCESS"))
    assert main(["--merge-megatron", out.path, "--output", str(tmp_path / "m")]) == 2
    assert "not a complete tokenize output" in capsys.readouterr().err
