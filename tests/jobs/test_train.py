"""shardpiece train: config validation, option precedence, end to end (in-process and on local-cluster)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from jobs.config import validate_config
from jobs.train import build_parser, main, resolve_options
from jobs.train_options import SCHEMA, load_config
from pipelines.train.skeleton import model_paths
from pipelines.train.bytepiece import multiset_fingerprint
from tokenizer.errors import ConfigError
from tokenizer.model import Model
from tokenizer.trainers.bytepiece import TrainSettings, train_bytepiece_local

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def corpus_lines() -> list[bytes]:
    words = ["alpha", "beta", "gamma", "数据", "处理", "テキスト", "the", "and"]
    return [" ".join(words[(i * 7 + j * 3) % len(words)] for j in range(1 + i % 9)).encode() for i in range(600)]


def options_from(argv: list[str]) -> dict:
    return resolve_options(build_parser().parse_args(argv))[0]


def test_config_unknown_key_and_wrong_type_name_key_and_file(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("vocab_size: 8000\nmin_cout: 3\n")
    with pytest.raises(ConfigError, match=r"run\.yaml: unknown key 'min_cout' \(did you mean 'min_count'\?\)"):
        load_config(str(path))
    path.write_text("vocab_size: [8000, big]\n")
    with pytest.raises(ConfigError, match=r"run\.yaml: key 'vocab_size' must be an integer or a list of integers"):
        load_config(str(path))
    path.write_text("isolate_digits: 'yes'\n")
    with pytest.raises(ConfigError, match=r"key 'isolate_digits' must be true or false"):
        load_config(str(path))
    path.write_text("- just\n- a list\n")
    with pytest.raises(ConfigError, match="must hold a mapping"):
        load_config(str(path))
    with pytest.raises(ConfigError, match="spark"):
        validate_config({"spark": ["not", "a", "mapping"]}, "x.yaml", SCHEMA)


def test_command_line_wins_over_config_and_config_over_defaults(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("input: corpus/*.txt\nvocab_size: 8000\nmin_count: 5\norder: 4\noutput: m.model\n")
    options = options_from(["--config", str(path), "--min-count", "9", "--vocab-size", "300", "400"])
    assert options["min_count"] == 9 and options["vocab_size"] == [300, 400]
    assert options["order"] == 4 and options["max_piece_bytes"] == 36
    assert options["input"] == [str(tmp_path / "corpus/*.txt")]  # relative to the config file


def test_missing_required_option_and_unknown_algorithm(tmp_path):
    with pytest.raises(ConfigError, match="--vocab-size is required"):
        options_from(["--input", "x.txt", "--output", "m"])
    path = tmp_path / "a.yaml"
    path.write_text("algorithm: wordpiece\n")
    with pytest.raises(ConfigError, match="algorithm 'wordpiece' is unknown: use one of bytepiece, unigram, bpe"):
        options_from(["--config", str(path), "--input", "x", "--vocab-size", "300", "--output", "m"])


def test_vocab_size_too_small_fails_before_spark(tmp_path, capsys):
    (tmp_path / "a.txt").write_text("some text\n")
    code = main(["train", "--input", str(tmp_path / "a.txt"), "--vocab-size", "100", "--output",
                 str(tmp_path / "m.model")])
    assert code == 2
    err = capsys.readouterr().err
    assert "vocab size 100 is below the 259 ids" in err and "request at least 259" in err
    assert not (tmp_path / "m.model").exists()


def test_model_paths_single_and_several_sizes():
    assert model_paths("m.model", [300]) == ({300: "m.model"}, "m.model.manifest.json")
    paths, manifest = model_paths("out", [300, 400])
    assert paths[400] == os.path.join("out", "bytepiece-400.model") and manifest == os.path.join("out", "manifest.json")


@pytest.mark.spark
def test_train_end_to_end_jsonl_equals_local_reference(spark, tmp_path, capsys):
    lines = corpus_lines()
    with open(tmp_path / "corpus.jsonl", "w", encoding="utf-8") as handle:
        for i, line in enumerate(lines):
            handle.write(json.dumps({"id": i, "body": line.decode()}, ensure_ascii=False) + "\n")
        handle.write('{"id": -1, "body": null}\n')
    output = tmp_path / "bp.model"
    code = main(["train", "--algorithm", "bytepiece", "--input", str(tmp_path / "*.jsonl"), "--text-column", "body",
                 "--vocab-size", "320", "--output", str(output), "--min-count", "3", "--order", "5",
                 "--partitions", "3", "--holdout-fraction", "0"])
    out = capsys.readouterr().out
    assert code == 0
    settings = TrainSettings(order=5, min_count=3, vocab_sizes=(320,))
    expected = train_bytepiece_local(lines, settings, provenance={"corpus_fingerprint": multiset_fingerprint(lines)})
    assert output.read_bytes() == expected[320].to_bytes()
    manifest = json.loads((tmp_path / "bp.model.manifest.json").read_text())
    assert manifest["read"]["null_rows"] == 1 and manifest["training_documents"] == len(lines)
    assert manifest["partitions"] == 3 and manifest["spark_master"].startswith("local")
    assert [s["name"] for s in manifest["stages"]][:3] == ["read", "ngrams", "ngram_model"]
    assert all(s["driver_peak_mib"] > 10 for s in manifest["stages"])  # the driver's resident peak, per stage
    assert "driver peak" in out
    evaluation = manifest["models"]["320"]["evaluation"]
    assert evaluation["lossless"] and evaluation["bytes_per_token"] > 1.0
    assert "summary" in out and "bytes/token" in out and "[ngrams]" in out
    assert "host" not in json.dumps(Model.load(output).provenance)  # run facts stay out of the model


@pytest.mark.spark
def test_a_vocabulary_smaller_than_asked_is_reported_with_the_setting_to_change(spark, tmp_path, capsys):
    (tmp_path / "corpus.txt").write_bytes(b"\n".join(corpus_lines()) + b"\n")
    output = tmp_path / "bp.model"
    assert main(["train", "--algorithm", "bytepiece", "--input", str(tmp_path / "corpus.txt"), "--vocab-size",
                 "20000", "--output", str(output), "--min-count", "3", "--holdout-fraction", "0"]) == 0
    out = capsys.readouterr().out
    info = json.loads((tmp_path / "bp.model.manifest.json").read_text())["models"]["20000"]
    assert info["vocab_size"] < 20000 and info["short_of_requested"]["requested"] == 20000
    assert f"only {info['vocab_size']:,} of the 20,000 pieces asked" in out and "lower --min-count" in out


@pytest.mark.spark
def test_train_reports_missing_column(spark, tmp_path, capsys):
    (tmp_path / "a.jsonl").write_text('{"content": "x"}\n')
    code = main(["train", "--input", str(tmp_path / "a.jsonl"), "--vocab-size", "300", "--output",
                 str(tmp_path / "m.model")])
    assert code == 2
    assert "no field 'text'" in capsys.readouterr().err


@pytest.mark.spark
@pytest.mark.slow
def test_local_cluster_gives_the_same_model_bytes(tmp_path):
    """A real multi-process run (two executor JVMs, ~25 s to start) trains the same bytes as the reference."""
    lines = corpus_lines()
    (tmp_path / "corpus.txt").write_bytes(b"\n".join(lines) + b"\n")
    output = tmp_path / "models"
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run(
        [sys.executable, "-m", "jobs.cli", "train", "--input", str(tmp_path / "corpus.txt"), "--vocab-size", "300",
         "340", "--output", str(output), "--min-count", "3", "--master", "local-cluster[2,1,1024]",
         "--partitions", "5", "--holdout-fraction", "0", "--driver-memory", "1g", "--quiet"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    settings = TrainSettings(min_count=3, vocab_sizes=(300, 340))
    expected = train_bytepiece_local(lines, settings, provenance={"corpus_fingerprint": multiset_fingerprint(lines)})
    for size in (300, 340):
        assert (output / f"bytepiece-{size}.model").read_bytes() == expected[size].to_bytes()
    manifest = json.loads((output / "manifest.json").read_text())
    assert manifest["spark_master"] == "local-cluster[2,1,1024]"


def test_unigram_defaults_are_lossless_and_the_sentencepiece_preset_says_what_it_drops(tmp_path, capsys):
    """Unigram's defaults keep every byte (tabs, CR, runs and leading spaces, rare characters): every training line
    decodes back to itself; ``--unigram-defaults sentencepiece`` (SentencePiece's own defaults) does not, and the
    summary names why."""
    import random

    from tokenizer import Tokenizer

    rng = random.Random(3)
    words = ["alpha", "beta", "gamma", "delta", "tab\there", "two  spaces", "café", "naïve", "東京", "x\r"]
    lines = ["  " * (i % 3) + " ".join(rng.choice(words) for _ in range(rng.randint(1, 8))) + "  " * (i % 2)
             for i in range(1500)] + ["rare: ǂ ʬ ⺀ 𝔘"]
    (tmp_path / "c.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for preset, lossless in (("lossless", True), ("sentencepiece", False)):
        output = tmp_path / f"{preset}.model"
        assert main(["train", "--algorithm", "unigram", "--unigram-defaults", preset, "--input",
                     str(tmp_path / "c.txt"), "--vocab-size", "400", "--output", str(output),
                     "--holdout-fraction", "0"]) == 0
        out = capsys.readouterr().out
        tokenizer = Tokenizer.load(output)
        round_trips = [tokenizer.decode(tokenizer.encode(line)) == line for line in lines]
        assert all(round_trips) is lossless, preset
        assert ("not lossless" in out) is not lossless
        if not lossless:
            assert "no byte fallback" in out and "runs of spaces are collapsed" in out
