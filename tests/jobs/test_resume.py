"""Resume: a training run killed after any stage resumes from the work directory and writes the same model bytes,
for every algorithm.

The kill is the fault-injection hook ``SHARDPIECE_FAIL_AFTER_STAGE`` (the job dies right after saving the stage,
which is all a real kill at that point leaves behind; a checkpointed stage, unigram's ``em_SIZE``, dies after its
first save). One chain covers every stage: run k dies after stage k, having loaded stages 1..k-1 from the files
run k-1 left (their files are not rewritten, except a checkpoint the run moves on from).
"""

from __future__ import annotations

import json
import os
import random

import pytest

from jobs.train import main
from pipelines.train.bytepiece import multiset_fingerprint
from pipelines.train.workdir import FAULT_ENV, InjectedFault, WorkDir, run_key
from tokenizer.trainers.bytepiece import TrainSettings, train_bytepiece_local

def corpus_lines(n: int = 400, seed: int = 3) -> list[bytes]:
    rng = random.Random(seed)
    words = ["resume", "stage", "piece", "work", "の", "データ", "数据", "处理", "42", "x"]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(1, 9))).encode() for _ in range(n)]


def syllable_lines(n: int = 400, seed: int = 5) -> list[bytes]:
    """Many distinct words of random syllables: unigram seeds far more pieces than it keeps, so it prunes."""
    rng = random.Random(seed)
    syllables = ["ka", "to", "ri", "中", "sé", "lo", "7", "mu", "ne", "文", "shi", "po"]
    words = ["".join(rng.choice(syllables) for _ in range(rng.randint(2, 5))) for _ in range(400)]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(1, 9))).encode() for _ in range(n)]


def train_argv(tmp_path, work: str, *extra: str) -> list[str]:
    return ["train", "--input", str(tmp_path / "corpus.txt"), "--vocab-size", "300", "330", "--output",
            str(tmp_path / "models"), "--min-count", "3", "--order", "4", "--partitions", "2",
            "--holdout-fraction", "0", "--work-dir", str(tmp_path / work), "--quiet", *extra]


def stage_files(work_root) -> dict[str, int]:
    """{stage name: mtime_ns} of the finished stages under the (single) run key directory."""
    keys = [d for d in os.listdir(work_root) if os.path.isdir(os.path.join(work_root, d))]
    assert len(keys) == 1, keys
    directory = os.path.join(work_root, keys[0])
    return {f[:-4]: os.stat(os.path.join(directory, f)).st_mtime_ns for f in os.listdir(directory)
            if f.endswith(".npz")}


MANIFEST_KEYS = {
    "algorithm", "bad_rows", "command", "config", "config_path", "corpus_fingerprint", "created_unix", "created_utc",
    "default_parallelism", "details", "engine", "engine_reason", "holdout_fraction", "host", "input",
    "input_fingerprint", "input_format", "lossy_settings", "models", "outputs", "partitions", "python", "read",
    "reader", "seconds_total", "settings", "spark_log", "spark_master", "spark_version", "stages", "table_bounds",
    "text_column", "threads", "training_documents", "versions", "work_dir"}
RUNS = {  # algorithm: (its options, its stages in order, the vocab sizes); bpe trains in this process (the default
    # --master auto on a small local file), the others on Spark
    "bytepiece": (["--min-count", "3", "--order", "4", "--partitions", "2"],
                  ["read", "ngrams", "ngram_model", "candidates", "prune", "models"], (300, 330)),
    "unigram": (["--master", "local[2]", "--holdout-fraction", "0.05", "--unigram-defaults", "sentencepiece"],
                ["chunks", "em_60", "em_80", "models"],
                (60, 80)),
    "bpe": (["--min-count", "2", "--pretokenizer", "sentencepiece"], ["chunks", "merges", "models"], (300, 330)),
    "bpe superword": (["--min-count", "2", "--superword-transition", "290"],
                      ["chunks", "merges", "superword_chunks", "superword_merges", "models"], (300, 330)),
}


@pytest.mark.spark
@pytest.mark.parametrize("algorithm", list(RUNS))
def test_kill_after_each_stage_then_rerun_gives_identical_model_bytes(spark, tmp_path, monkeypatch, capsys,
                                                                      algorithm):
    options, stages, sizes = RUNS[algorithm]
    algorithm = algorithm.split()[0]  # "bpe superword": bpe with the superword options
    (tmp_path / "corpus.txt").write_bytes(b"\n".join(syllable_lines()) + b"\n")

    def argv(work: str) -> list[str]:
        return ["train", "--algorithm", algorithm, "--input", str(tmp_path / "corpus.txt"), "--vocab-size",
                *map(str, sizes), "--output", str(tmp_path / work / "models"), "--holdout-fraction", "0",
                "--work-dir", str(tmp_path / work / "stages"), *options]

    assert main(argv("fresh")) == 0  # the uninterrupted run
    expected = {size: (tmp_path / "fresh" / "models" / f"{algorithm}-{size}.model").read_bytes() for size in sizes}
    capsys.readouterr()
    before: dict[str, int] = {}
    for number, stage in enumerate(stages):
        monkeypatch.setenv(FAULT_ENV, stage)
        with pytest.raises(InjectedFault, match=f"after stage '{stage}'"):
            main(argv("killed"))
        after = stage_files(tmp_path / "killed" / "stages")
        assert sorted(after) == sorted(stages[:number + 1])
        kept = {name: mtime for name, mtime in before.items() if not name.startswith("em_")}
        assert {name: after[name] for name in kept} == kept  # earlier stages were loaded, not rewritten
        assert not (tmp_path / "killed" / "models").exists()  # nothing looks finished before the end
        before = after
        if stage.startswith("em_") and stages[number - 1].startswith("em_"):
            assert "[em] resumed after round" in capsys.readouterr().out  # went on from the checkpoint
    monkeypatch.delenv(FAULT_ENV)
    assert main(argv("killed")) == 0
    for size in sizes:
        assert (tmp_path / "killed" / "models" / f"{algorithm}-{size}.model").read_bytes() == expected[size]
    manifest = json.loads((tmp_path / "killed" / "models" / "manifest.json").read_text())
    assert manifest["work_dir"]["computed_stages"] == [] and "models" in manifest["work_dir"]["resumed_stages"]
    assert manifest["algorithm"] == algorithm and (tmp_path / "killed" / "models" / "config.yaml").exists()
    assert set(manifest) == MANIFEST_KEYS  # one manifest for every algorithm
    spark_versions = {"spark", "java"} if manifest["engine"] == "spark" else set()  # bpe here: in this process
    assert manifest["engine"] == ("in-process" if algorithm == "bpe" else "spark")
    assert set(manifest["versions"]) >= {"shardpiece", "pyspark", "numba", "numpy", "pyarrow", *spark_versions}
    assert manifest["outputs"] and all(len(entry["sha256"]) == 64 for entry in manifest["outputs"].values())


@pytest.mark.spark
def test_resumed_bytepiece_run_equals_the_local_trainer_and_distrusts_damaged_files(spark, tmp_path, monkeypatch):
    lines = corpus_lines()
    (tmp_path / "corpus.txt").write_bytes(b"\n".join(lines) + b"\n")
    expected = train_bytepiece_local(lines, TrainSettings(order=4, min_count=3, vocab_sizes=(300, 330)),
                                     provenance={"corpus_fingerprint": multiset_fingerprint(lines)})
    models = tmp_path / "models"
    monkeypatch.setenv(FAULT_ENV, "models")
    with pytest.raises(InjectedFault):
        main(train_argv(tmp_path, "work"))
    monkeypatch.delenv(FAULT_ENV)
    assert main(train_argv(tmp_path, "work")) == 0
    for size in (300, 330):
        assert (models / f"bytepiece-{size}.model").read_bytes() == expected[size].to_bytes()
    manifest = json.loads((models / "manifest.json").read_text())
    stages = RUNS["bytepiece"][1]
    assert manifest["work_dir"]["resumed_stages"] == stages and manifest["work_dir"]["computed_stages"] == []
    assert all(s["resumed"] for s in manifest["stages"] if s["name"] in stages)

    # The key ignores how the run is executed (partitions, master): a rerun with other partitions resumes too.
    # A damaged stage file is recomputed, not trusted.
    stage_dir = manifest["work_dir"]["path"]
    with open(os.path.join(stage_dir, "candidates.npz"), "r+b") as handle:
        handle.truncate(100)
    argv = train_argv(tmp_path, "work")
    argv[argv.index("--partitions") + 1] = "3"
    assert main(argv) == 0
    manifest = json.loads((models / "manifest.json").read_text())
    assert manifest["work_dir"]["computed_stages"] == ["candidates"]
    for size in (300, 330):
        assert (models / f"bytepiece-{size}.model").read_bytes() == expected[size].to_bytes()


@pytest.mark.spark
def test_changed_input_or_settings_get_a_new_work_key(spark, tmp_path):
    lines = corpus_lines(120)
    (tmp_path / "corpus.txt").write_bytes(b"\n".join(lines) + b"\n")
    assert main(train_argv(tmp_path, "work")) == 0
    first = json.loads((tmp_path / "models" / "manifest.json").read_text())
    (tmp_path / "corpus.txt").write_bytes(b"\n".join(lines[:-1]) + b"\nchanged\n")
    assert main(train_argv(tmp_path, "work")) == 0
    second = json.loads((tmp_path / "models" / "manifest.json").read_text())
    assert second["input_fingerprint"]["digest"] != first["input_fingerprint"]["digest"]
    assert second["work_dir"]["key"] != first["work_dir"]["key"] and second["work_dir"]["resumed_stages"] == []
    assert main(train_argv(tmp_path, "work", "--no-resume")) == 0
    third = json.loads((tmp_path / "models" / "manifest.json").read_text())
    assert third["work_dir"]["key"] == second["work_dir"]["key"] and third["work_dir"]["resumed_stages"] == []


def test_work_dir_round_trips_every_stage_kind(tmp_path):
    import numpy as np

    from pipelines.train import algorithms as A
    from pipelines.train import bytepiece as P
    from pipelines.train import workdir as W
    from tokenizer.trainers.bytepiece import NgramTable
    from tokenizer.trainers.bytepiece import build_ngram_model, build_model, prune_pieces

    settings = TrainSettings(order=2, min_count=1, vocab_sizes=(260,))
    table = NgramTable(keys=np.array([(97 << 51) | 1, (98 << 51) | 1], np.int64), counts=np.array([3, 2], np.int64),
                       distinct_ngrams=2, documents=1, chunks=1, chunk_bytes=5, fingerprint="sha256-multiset:0:1")
    lm = build_ngram_model(table.keys, table.counts, settings)
    pruned = prune_pieces([b"a", b"b", b"ab"], np.array([3, 2, 2]), settings)
    models = {260: build_model(*pruned[260], settings)}
    work = WorkDir(str(tmp_path), {"test": 1})
    for name, kind, value in [("t", P.NGRAM_TABLE, table), ("lm", P.NGRAM_MODEL, lm), ("p", P.PRUNED, pruned),
                              ("m", W.MODELS, models), ("j", W.JSON, {"rows": 3}),
                              ("pc", W.PIECES, ([b"", b"\x00\xff"], np.array([1, 2], np.int64))),
                              ("cd", P.CANDIDATES, ([b"a"], np.array([4], np.int64), {"limit": 9},
                                                    {"pieces": 2, "occurrences": 3}))]:
        work.save(name, kind, value)
        loaded = work.load(name, kind)
        if kind is P.NGRAM_TABLE:
            assert loaded.fingerprint == table.fingerprint and loaded.keys.tolist() == table.keys.tolist()
        elif kind is P.NGRAM_MODEL:
            assert loaded.keys.tolist() == lm.keys.tolist() and loaded.log_probs.tolist() == lm.log_probs.tolist()
        elif kind is P.PRUNED:
            assert loaded[260][0] == pruned[260][0] and loaded[260][1].tolist() == pruned[260][1].tolist()
        elif kind is W.MODELS:
            assert loaded[260].to_bytes() == models[260].to_bytes()
        elif kind is W.PIECES:
            assert loaded[0] == [b"", b"\x00\xff"] and loaded[1].tolist() == [1, 2]
        elif kind is P.CANDIDATES:
            assert (loaded[0], loaded[1].tolist(), loaded[2], loaded[3]) == ([b"a"], [4], *value[2:])
        else:
            assert loaded == {"rows": 3}
    from tokenizer.trainers.bpe import Merges
    from tokenizer.trainers.chunk_table import ChunkTable
    from tokenizer.trainers.unigram import EmState

    table = ChunkTable([b"", b"ab"], np.array([2, 5], np.int64), {"documents": 3}, [b"held"], [b"x", b"y"])
    work.save("c", A.CHUNK_TABLE, table)
    loaded = work.load("c", A.CHUNK_TABLE)
    assert (loaded.chunks, loaded.counts.tolist(), loaded.stats, loaded.held_out, loaded.training) == \
        (table.chunks, [2, 5], table.stats, table.held_out, table.training)
    merges = Merges(np.array([97], np.int64), np.array([98], np.int64), np.array([4], np.int64))
    work.save("mg", A.MERGES, merges)
    assert work.load("mg", A.MERGES).pieces() == merges.pieces()
    state = EmState([b"a", b"ab"], np.array([-1.5, -np.inf]), np.array([0], np.int64), 4)
    work.save("em", A.EM_STATE, state)
    loaded = work.load("em", A.EM_STATE)
    assert (loaded.pieces, loaded.scores.tolist(), loaded.order.tolist(), loaded.rounds) == \
        (state.pieces, state.scores.tolist(), [0], 4)
    assert work.finished() == ["c", "cd", "em", "j", "lm", "m", "mg", "p", "pc", "t"]
    with pytest.raises(ValueError, match="holds 'json'"):
        work.load("j", W.PIECES)
    assert run_key({"a": 1, "b": [2]}) == run_key({"b": [2], "a": 1}) != run_key({"a": 2, "b": [2]})
