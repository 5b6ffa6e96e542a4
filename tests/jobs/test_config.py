"""Train configs: validation names key and file, --set overrides, precedence, aliases and deprecated names, options
an algorithm does not take, the resolved config round trip."""

from __future__ import annotations

import os

import pytest
import yaml

from jobs.config import merge_options, validate_config
from jobs.config import parse_overrides as parse_any_overrides
from jobs.train import build_parser, resolve_options, resolved_config
from jobs.train_options import ACCEPTED, SCHEMA, dump_config, load_config
from tokenizer.errors import ConfigError

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def options_from(argv: list[str]) -> dict:
    return resolve_options(build_parser().parse_args(argv))[0]


def parse_overrides(pairs):
    return parse_any_overrides(pairs, ACCEPTED)


def test_every_shipped_train_config_validates():
    for name in ("demo.yaml", "cluster.yaml"):
        config = load_config(os.path.join(REPO, "configs", name))
        assert config["algorithm"] == "bytepiece" and config["vocab_size"]


@pytest.mark.parametrize("text, message", [
    ("vocab_size: 300\nwork_dri: /tmp/w\n", r"bad\.yaml: unknown key 'work_dri' \(did you mean 'work_dir'\?\)"),
    ("resume: 1\n", r"bad\.yaml: key 'resume' must be true or false, got 1"),
    ("partitions: '4'\n", r"bad\.yaml: key 'partitions' must be an integer, got '4'"),
    ("spark:\n  spark.executor.memory: [4g]\n", r"bad\.yaml: key 'spark' must be a mapping"),
    ("input: [a.txt, 3]\n", r"bad\.yaml: key 'input' must be a path or a list of paths"),
    ("vocab_size: [\n", r"bad\.yaml: not valid YAML"),
])
def test_config_errors_name_the_key_and_the_file(tmp_path, text, message):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config(str(path))


def test_missing_config_file_is_named(tmp_path):
    with pytest.raises(ConfigError, match=r"nope\.yaml: cannot read the config file"):
        load_config(str(tmp_path / "nope.yaml"))


def test_set_overrides_parse_yaml_values_and_spark_keys():
    overrides = parse_overrides(["min_count=8", "vocab_size=[300, 400]", "isolate_digits=true",
                                 "spark.executor.memory=8g", "spark.executor.cores=2", "max-piece-length=12"])
    assert overrides == {"min_count": 8, "vocab_size": [300, 400], "isolate_digits": True, "max_piece_length": 12,
                         "spark": {"spark.executor.memory": "8g", "spark.executor.cores": 2}}


@pytest.mark.parametrize("pair, message", [
    ("min_cnt=3", r"--set: unknown key 'min_cnt' \(did you mean 'min_count'\?\)"),
    ("min_count=many", r"--set: key 'min_count' must be an integer, got 'many'"),
    ("min_count", r"--set 'min_count': write KEY=VALUE"),
    ("order=[1", r"--set 'order=\[1': the value is not valid YAML"),
    ("spark.executor.memory=[1, 2]", r"a Spark setting needs a single value"),
])
def test_set_errors_name_the_key(pair, message):
    with pytest.raises(ConfigError, match=message):
        parse_overrides([pair])


def test_precedence_defaults_file_set_flags(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("input: c.txt\noutput: m.model\nvocab_size: 300\nmin_count: 5\norder: 4\n"
                    "spark: {spark.executor.memory: 2g, spark.executor.cores: 1}\n")
    options = options_from(["--config", str(path), "--set", "min_count=7", "--set", "order=3",
                            "--set", "spark.executor.memory=8g", "--order", "5"])
    assert options["min_count"] == 7           # --set beats the file
    assert options["order"] == 5               # a named flag beats --set
    assert options["max_piece_bytes"] == 36    # the default where nobody says otherwise
    assert options["spark"] == {"spark.executor.memory": "8g", "spark.executor.cores": 1}  # merged key by key
    assert merge_options({"spark": {"a": 1}}, {"spark": {"b": 2}}) == {"spark": {"a": 1, "b": 2}}


def test_resolved_config_round_trips_and_reruns_the_same_options(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    options = options_from(["--input", "corpus/*.txt", "--output", "out/m.model", "--vocab-size", "300",
                            "--set", "spark.executor.memory=1g", "--min-count", "3", "--no-resume"])
    resolved = resolved_config(options)
    assert resolved["input"] == [str(tmp_path / "corpus/*.txt")]
    assert resolved["work_dir"] == str(tmp_path / "out" / ".shardpiece-work")
    text = dump_config(resolved)
    saved = tmp_path / "saved.yaml"
    saved.write_text(text)
    again = resolved_config(options_from(["--config", str(saved)]))
    assert {k: v for k, v in again.items() if v is not None} == {k: v for k, v in resolved.items() if v is not None}
    assert set(yaml.safe_load(text)) <= set(SCHEMA)


def test_validate_config_accepts_empty_and_rejects_non_mappings():
    assert validate_config(None, "x.yaml", SCHEMA) == {}
    with pytest.raises(ConfigError, match="x.yaml: the file must hold a mapping"):
        validate_config([1, 2], "x.yaml", SCHEMA)


def test_every_algorithm_takes_the_shared_options_and_its_own_only(tmp_path):
    base = ["--input", "c.txt", "--output", "m.model", "--vocab-size", "400"]
    for algorithm in ("bytepiece", "unigram", "bpe"):
        options = options_from(["--algorithm", algorithm, *base, "--work-dir", "w", "--no-resume", "--threads", "2",
                                "--set", "eval_documents=10", "--special-tokens", "<x>"])
        assert options["resume"] is False and options["threads"] == 2 and options["eval_documents"] == 10
        assert options["special_tokens"] == ["<x>"] and options["algorithm"] == algorithm
    with pytest.raises(ConfigError, match=r"option order \(--order\) is not taken by --algorithm bpe: only by "
                                          r"bytepiece"):
        options_from(["--algorithm", "bpe", *base, "--set", "order=3"])
    path = tmp_path / "u.yaml"
    path.write_text("algorithm: unigram\npretokenizer: byte_level\n")
    with pytest.raises(ConfigError, match=r"option pretokenizer .* not taken by --algorithm unigram: only by bpe"):
        options_from(["--config", str(path), *base])
    with pytest.raises(ConfigError, match="character_coverage is taken by unigram and by bpe with --pretokenizer "
                                          "sentencepiece only"):
        options_from(["--algorithm", "bpe", *base, "--character-coverage", "0.99"])
    with pytest.raises(ConfigError, match="--partitions needs Spark"):
        options_from([*base, "--master", "none", "--partitions", "2"])
    with pytest.raises(ConfigError, match="--reader spark needs Spark"):
        options_from([*base, "--master", "none", "--reader", "spark"])
    for table_flags in (["--input-format", "delta"], ["--where", "lang = 'en'"]):
        with pytest.raises(ConfigError, match="--engine beam trains from text, JSONL and Parquet files"):
            options_from([*base, "--engine", "beam", *table_flags])


def test_engine_beam_without_apache_beam_says_how_to_install_it_for_either_job(monkeypatch):
    """(train and tokenize both call it before their first pipeline)"""
    import importlib.util

    from pipelines.beam.exchange import require_beam

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "apache_beam" else real(name, *args))
    with pytest.raises(ConfigError, match=r"pip install 'shardpiece\[beam\]' \(or apache-beam\), or drop --engine "
                                          r"beam \(Spark, the default engine, runs the same job\)"):
        require_beam()


def test_piece_lengths_have_one_unit_per_name_and_old_spellings_still_work():
    base = ["--input", "c.txt", "--output", "m.model", "--vocab-size", "400"]
    assert options_from(["--algorithm", "bpe", *base])["max_piece_bytes"] == 256
    sp = options_from(["--algorithm", "bpe", "--pretokenizer", "sentencepiece", *base])
    assert sp["max_piece_chars"] == 16 and "max_piece_bytes" not in sp
    assert options_from(["--algorithm", "unigram", "--unigram-variant", "byte", *base])["max_piece_bytes"] == 16
    with pytest.raises(ConfigError, match="counts piece lengths in characters: use --max-piece-chars"):
        options_from(["--algorithm", "unigram", *base, "--max-piece-bytes", "8"])
    with pytest.raises(ConfigError, match="counts piece lengths in bytes: use --max-piece-bytes"):
        options_from(["--algorithm", "bpe", *base, "--set", "max_piece_chars=8"])
    # SentencePiece's spellings are aliases; the old name of both units is deprecated but still works
    options, notices = resolve_options(build_parser().parse_args(
        ["--algorithm", "unigram", *base, "--max-sentencepiece-length", "8", "--split-digits",
         "--control-symbols", "<a>"]))
    assert options["max_piece_chars"] == 8 and options["isolate_digits"] and options["special_tokens"] == ["<a>"]
    assert notices == []
    options, notices = resolve_options(build_parser().parse_args(["--algorithm", "bpe", *base,
                                                                  "--max-piece-length", "9"]))
    assert options["max_piece_bytes"] == 9 and "--max-piece-length is deprecated" in notices[0]
    options, notices = resolve_options(build_parser().parse_args(
        ["--algorithm", "bpe", "--pretokenizer", "sentencepiece", *base, "--set", "max_piece_length=7"]))
    assert options["max_piece_chars"] == 7 and "deprecated" in notices[0]


def test_help_lists_every_algorithms_options_in_groups(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    text = capsys.readouterr().out
    for title in ("bytepiece options", "unigram options", "bpe options", "model options of several algorithms"):
        assert title in text
    for flag in ("--order", "--unigram-variant", "--pretokenizer", "--max-piece-bytes", "--max-piece-chars",
                 "--work-dir", "--no-resume", "--set", "--config", "--threads", "--driver-memory"):
        assert flag in text


def test_readme_option_table_matches_the_registry():
    """The table in docs/training.md of which algorithm takes which option is the registry's (every flag, every
    column)."""
    import re

    from jobs.train_options import ALGORITHMS, OPTIONS

    flags = {string: option for option in OPTIONS for string in option.option_strings()}
    text = open(os.path.join(REPO, "docs", "training.md"), encoding="utf-8").read()
    table = text[text.index("| option | bytepiece | unigram | bpe |"):]
    table = table[:table.index("\n\n")]
    seen = set()
    for row in table.splitlines()[2:]:
        cells = [cell.strip() for cell in row.strip("|").split(" | ")]
        for flag in re.findall(r"`(--[a-z-]+)", cells[0]):
            if flag in ("--config", "--set", "--quiet", "--verbose"):
                continue
            option = flags[flag]
            seen.add(option.key)
            takes = {a for a, cell in zip(ALGORITHMS, cells[1:]) if cell != "-"}
            assert takes == set(option.algorithms), (flag, takes)
    assert seen == {option.key for option in OPTIONS if option.option_strings()}


def test_a_table_bound_too_small_is_refused_with_the_fix():
    base = ["--input", "c.txt", "--output", "m.model", "--vocab-size", "400"]
    with pytest.raises(ConfigError, match=r"--max-table-entries 5: use 65536 or more \(or 0 for no bound\)"):
        options_from([*base, "--max-table-entries", "5"])
    assert options_from([*base, "--set", "max_table_entries=0"])["max_table_entries"] == 0
    assert options_from(base)["max_table_entries"] == 10_000_000
