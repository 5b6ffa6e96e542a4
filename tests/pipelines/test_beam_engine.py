"""The Beam engine (``--engine beam``, the direct runner with 2 worker processes) trains the same model bytes as the
in-process engine for every algorithm, on the sample corpus's English file and on a second corpus read as text,
JSONL and Parquet (the in-process models equal Spark's: ``tests/pipelines/test_engines.py``); a bad row inside a
task stops the run with the other engines' exit code and line; a run killed after a stage resumes to the same
bytes. Skipped when Apache Beam is not installed (``pip install 'shardpiece[beam]'``)."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

pytest.importorskip("apache_beam")

from tests.pipelines.test_engines import corpus_lines  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = [os.path.join(ROOT, "data", "sample", "en.txt.gz")]  # the sample corpus's English file (small and quick)
ALGORITHMS = {  # name: (flags, the second corpus's format): small vocabularies, every stage runs
    "bytepiece": (["--algorithm", "bytepiece", "--min-count", "2", "--order", "4", "--vocab-size", "400",
                   "--refine-em-rounds", "1"], "jsonl"),
    "unigram": (["--algorithm", "unigram", "--vocab-size", "400"], "parquet"),
    "bpe byte-level": (["--algorithm", "bpe", "--vocab-size", "400"], "text"),
    "bpe sentencepiece": (["--algorithm", "bpe", "--pretokenizer", "sentencepiece", "--vocab-size", "300"],
                          "jsonl"),
}
BEAM = ["--engine", "beam", "--beam-option", "direct_num_workers=2", "direct_running_mode=multi_processing",
        "--partitions", "4"]


@pytest.fixture(scope="module")
def second(tmp_path_factory) -> dict[str, str]:
    """The second corpus as text, JSONL and Parquet (in two files, so two read tasks)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path_factory.mktemp("beam-corpus")
    lines = corpus_lines(1200, seed=11)
    halves = (lines[:600], lines[600:])
    for i, half in enumerate(halves):
        (root / f"c{i}.txt").write_text("\n".join(half) + "\n", encoding="utf-8")
        (root / f"c{i}.jsonl").write_text("".join(json.dumps({"text": line}, ensure_ascii=False) + "\n"
                                                  for line in half), encoding="utf-8")
        pq.write_table(pa.table({"text": half}), root / f"c{i}.parquet", row_group_size=300)
    return {kind: str(root / f"c*.{ext}") for kind, ext in (("text", "txt"), ("jsonl", "jsonl"),
                                                            ("parquet", "parquet"))}


def train(flags: list[str], sources: list[str], out, *extra: str) -> tuple[int, str | None, dict | None]:
    from jobs.train import main

    model = out / "m.model"
    code = main(["train", *flags, "--input", *sources, "--output", str(model), "--holdout-fraction", "0.1",
                 "--quiet", "--work-dir", str(out / "work"), *extra])
    if code:
        return code, None, None
    manifest = json.loads((out / "m.model.manifest.json").read_text())
    return code, hashlib.sha256(model.read_bytes()).hexdigest(), manifest


@pytest.mark.slow
@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_beam_models_equal_the_other_engines(second, tmp_path, name):
    flags, second_format = ALGORITHMS[name]
    for corpus, sources in (("sample", SAMPLE), ("second", [second[second_format]])):
        code, expected, reference = train(flags, sources, tmp_path / f"{corpus}-inprocess", "--master", "none")
        assert code == 0
        code, got, manifest = train(flags, sources, tmp_path / f"{corpus}-beam", *BEAM)
        assert code == 0
        assert manifest["engine"] == "beam" and manifest["beam_runner"] == "DirectRunner"
        assert manifest["beam_options"]["direct_num_workers"] == "2"
        assert got == expected, (name, corpus)
        assert manifest["training_documents"] == reference["training_documents"]
        assert manifest["read"]["documents"] == reference["read"]["documents"]
        assert manifest["models"].keys() == reference["models"].keys()


def test_a_bad_row_inside_a_task_stops_the_run_as_on_the_other_engines(second, tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    lines = [json.dumps({"text": line}) for line in corpus_lines(40, seed=2)]
    lines[20] = "[1, 2]"  # not a JSON object
    bad.write_text("\n".join(lines) + "\n")
    flags = ALGORITHMS["bpe byte-level"][0]
    messages = []
    for engine, extra in (("in-process", ["--master", "none"]), ("beam", BEAM)):
        code, _, _ = train(flags, [str(bad)], tmp_path / engine, *extra)
        err = capsys.readouterr().err.strip().splitlines()
        assert code == 2 and len(err) == 1, (engine, err)
        messages.append(err[0])
    assert messages[0] == messages[1]
    assert messages[1].startswith(f"shardpiece train: error: {bad}, line 21: not a JSON object")


@pytest.mark.slow
def test_a_killed_beam_run_resumes_to_the_same_bytes(second, tmp_path, monkeypatch):
    from pipelines.train.workdir import FAULT_ENV, InjectedFault

    flags = ALGORITHMS["bytepiece"][0]
    sources = [second["text"]]
    _, expected, _ = train(flags, sources, tmp_path / "inprocess", "--master", "none")
    monkeypatch.setenv(FAULT_ENV, "candidates")  # the run dies right after saving this stage
    with pytest.raises(InjectedFault):
        train(flags, sources, tmp_path / "beam", *BEAM)
    monkeypatch.delenv(FAULT_ENV)
    code, got, manifest = train(flags, sources, tmp_path / "beam", *BEAM)
    assert code == 0 and got == expected
    resumed = [stage["name"] for stage in manifest["stages"] if stage.get("resumed")]
    assert resumed == ["read", "ngrams", "ngram_model", "candidates"]
    computed = [stage["name"] for stage in manifest["stages"] if not stage.get("resumed")]
    assert "prune" in computed and "models" in computed


def test_beam_options_pass_through_and_need_the_beam_engine():
    from jobs.train_options import build_parser, resolve_options
    from pipelines.beam.exchange import option_pairs
    from tokenizer.errors import ConfigError

    base = ["--algorithm", "bpe", "--input", "c.txt", "--vocab-size", "300", "--output", "m.model"]
    options, _ = resolve_options(build_parser().parse_args(
        base + ["--engine", "beam", "--beam-option", "direct_num_workers=3", "save_main_session=true"]))
    assert option_pairs({**options, "beam": {"direct_num_workers": 5, "job_name": "j"}}) == {
        "runner": "DirectRunner", "direct_num_workers": "3", "job_name": "j", "save_main_session": "true",
        "direct_running_mode": "multi_processing"}
    assert option_pairs({"runner": "DataflowRunner", "beam_option": ["region=europe-west1"]}) == {
        "runner": "DataflowRunner", "region": "europe-west1"}
    for extra, fix in ((["--runner", "DirectRunner"], "add --engine beam"),
                       (["--engine", "beam", "--master", "local[2]"], "choose the runner with --runner"),
                       (["--engine", "beam", "--beam-option", "novalue"], "give KEY=VALUE")):
        with pytest.raises(ConfigError, match=fix):
            resolve_options(build_parser().parse_args(base + extra))


@pytest.mark.parametrize("limit", [None, 3, 5, 9, (None, 40), (6, 28)])
def test_the_bound_over_bucket_files_equals_the_in_process_bound(tmp_path, limit):
    """The memory bound applied bucket by bucket (:func:`bounded_buckets`) keeps the entries, and reports the cut,
    that :func:`pipelines.train.tables.bounded_table` gives over the one joined table (ties at the cut by key)."""
    import numpy as np

    from pipelines.beam import exchange as X
    from pipelines.beam.train_engine import bounded_buckets
    from pipelines.train.tables import bounded_table, by_bucket, encode
    from tokenizer.trainers import table_bound as B

    keys = np.array([3, 5, 8, 11, 12, 20, 21, 40, 41, 42], np.int64)
    counts = np.array([7, 2, 2, 9, 2, 1, 7, 2, 5, 1], np.int64)
    paths = []
    for bucket, part in by_bucket("int64", (keys, counts), 4):
        paths.append(str(tmp_path / f"kept-{bucket:05d}.bin"))
        X.write_file(paths[-1], encode("int64", part))
    table, report = bounded_buckets("int64", paths, B.histogram(counts), limit)
    expected, expected_report = bounded_table("int64", (keys, counts), limit)
    assert table[0].tolist() == expected[0].tolist() and table[1].tolist() == expected[1].tolist()
    assert report == expected_report


@pytest.mark.parametrize("limit", [(None, 9), (None, 14), (3, 30), 4])
def test_the_byte_bound_over_bucket_files_of_byte_keys_equals_the_in_process_bound(tmp_path, limit):
    """The same with byte keys of several lengths and a key-byte limit (``--max-table-bytes``): each bucket sends
    its candidate keys at the cut count, and the keys kept there are the smallest that fit."""
    import numpy as np

    from pipelines.beam import exchange as X
    from pipelines.beam.train_engine import bounded_buckets
    from pipelines.train.tables import bounded_table, by_bucket, encode, histogram
    from tokenizer.packed import pack

    keys = [b"a", b"bcd", b"ce", b"d", b"efgh", b"f", b"gg", b"hij"]
    counts = np.array([3, 2, 2, 3, 2, 1, 2, 2], np.int64)
    data, offsets = pack(keys)
    whole = (np.asarray(data, np.uint8), np.asarray(offsets, np.int64), counts)
    paths = []
    for bucket, part in by_bucket("bytes", whole, 3):
        paths.append(str(tmp_path / f"kept-{bucket:05d}.bin"))
        X.write_file(paths[-1], encode("bytes", part))
    table, report = bounded_buckets("bytes", paths, histogram("bytes", whole), limit)
    expected, expected_report = bounded_table("bytes", whole, limit)
    assert sorted(bytes(table[0][table[1][i]:table[1][i + 1]]) for i in range(len(table[2]))) == \
           sorted(bytes(expected[0][expected[1][i]:expected[1][i + 1]]) for i in range(len(expected[2])))
    assert report == expected_report and report["dropped_entries"] > 0
