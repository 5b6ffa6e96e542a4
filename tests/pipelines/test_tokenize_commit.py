"""The output directory protocol (no Spark): modes, commit by rename, manifest, leftovers of dead jobs removed."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest

from pipelines.tokenize.commit import MANIFEST, TEMPORARY, InputFile, OutputDirectory, TaskResult, read_summary
from pipelines.tokenize.writers import open_shard_writer, read_shard
from tokenizer.errors import ConfigError, InputError

SETTINGS = {"model_sha256": "abc", "output_format": "npy"}


def _task(out: OutputDirectory, run_id: str, partition: int, attempt: int, docs: list[list[int]]) -> TaskResult:
    stem = out.task_stem(run_id, partition, attempt)
    writer = open_shard_writer("npy", stem, vocab_size=100)
    writer.write(pa.table({"x": pa.array([0] * len(docs), pa.int8())}), pa.array(docs, pa.list_(pa.int32())))
    names = writer.close()
    sizes = {name: os.path.getsize(os.path.join(os.path.dirname(stem), name)) for name in names}
    return TaskResult(partition, attempt, stem, len(docs), sum(map(len, docs)), 0, sizes, {})


def _dataset(out: OutputDirectory) -> list[list[int]]:
    return [ids.tolist() for stem in out.committed_stems() for ids in read_shard("npy", stem)]


def test_commit_publishes_winners_only_and_marks_the_output_complete_last(tmp_path):
    out = OutputDirectory(tmp_path / "out")
    assert out.prepare("error", SETTINGS) == "fresh"
    run = out.next_run_id()
    _task(out, run, 0, 1, [[1], [1]])                 # a failed first attempt of partition 0: left behind
    winners = [_task(out, run, 0, 7, [[1, 2], [3]]), _task(out, run, 1, 8, [[4]])]
    assert not out.is_complete()
    manifest = out.commit(run, "npy", SETTINGS, [InputFile("a.txt", 3, 1)], winners, {"documents": 3})
    assert _dataset(out) == [[1, 2], [3], [4]]
    assert manifest["documents"] == 3 and manifest["tokens"] == 4
    assert sorted(os.listdir(out.path)) == [
        "_manifest.parquet", "run-00000-part-00000.offsets.npy",
        "run-00000-part-00000.tokens.npy", "run-00000-part-00001.offsets.npy", "run-00000-part-00001.tokens.npy",
    ]
    assert out.is_complete()
    assert read_summary(out.path) == {"documents": 3}


def test_duplicate_partition_results_are_refused(tmp_path):
    out = OutputDirectory(tmp_path / "out")
    out.prepare("error", SETTINGS)
    results = [_task(out, "run-00000", 0, 1, [[1]]), _task(out, "run-00000", 0, 2, [[1]])]
    with pytest.raises(InputError, match="duplicates"):
        out.commit("run-00000", "npy", SETTINGS, [], results, {})
    assert out.committed_stems() == []


def test_modes(tmp_path):
    out = OutputDirectory(tmp_path / "out")
    out.prepare("error", SETTINGS)
    out.commit("run-00000", "npy", SETTINGS, [InputFile("a", 1, 1)], [_task(out, "run-00000", 0, 0, [[5]])], {})
    with pytest.raises(ConfigError, match="--mode overwrite"):
        out.prepare("error", SETTINGS)
    assert out.prepare("skip", SETTINGS) == "complete"
    assert out.prepare("incremental", SETTINGS) == "continue"
    assert out.next_run_id() == "run-00001"
    assert set(out.recorded_inputs()) == {"a"}
    with pytest.raises(ConfigError, match="model_sha256 differ"):
        out.prepare("incremental", {**SETTINGS, "model_sha256": "other"})
    assert out.prepare("overwrite", SETTINGS) == "fresh"
    assert os.listdir(out.path) == []


def test_overwrite_refuses_a_directory_it_did_not_write(tmp_path):
    (tmp_path / "notes.txt").write_text("keep me")
    with pytest.raises(ConfigError, match="notes.txt"):
        OutputDirectory(tmp_path).prepare("overwrite", SETTINGS)
    assert (tmp_path / "notes.txt").exists()


def test_leftovers_of_a_dead_commit_are_removed_before_the_next_run(tmp_path):
    out = OutputDirectory(tmp_path / "out")
    out.prepare("error", SETTINGS)
    out.commit("run-00000", "npy", SETTINGS, [InputFile("a", 1, 1)], [_task(out, "run-00000", 0, 0, [[5]])], {})
    # run 1 dies after renaming one shard and before writing its manifest
    leftover = _task(out, "run-00001", 0, 3, [[6]])
    os.replace(leftover.stem + ".tokens.npy", out.final_stem("run-00001", 0) + ".tokens.npy")
    _task(out, "run-00001", 1, 4, [[7]])
    out._write_metadata(out.manifest(), None, False, out._shard_schema([]))  # what a commit under way leaves
    assert not out.is_complete()
    assert out.prepare("skip", SETTINGS) == "continue"
    assert not os.path.exists(out._join(TEMPORARY))
    assert not os.path.exists(out.final_stem("run-00001", 0) + ".tokens.npy")
    assert _dataset(out) == [[5]]
    assert out.next_run_id() == "run-00001"


def test_size_mismatch_stops_the_commit(tmp_path):
    out = OutputDirectory(tmp_path / "out")
    out.prepare("error", SETTINGS)
    result = _task(out, "run-00000", 0, 0, [[1, 2]])
    with open(result.stem + ".tokens.npy", "ab") as handle:
        handle.write(b"\0")
    with pytest.raises(InputError, match="lost data"):
        out.commit("run-00000", "npy", SETTINGS, [], [result], {})
    assert out.manifest() is None


def test_unknown_mode(tmp_path):
    with pytest.raises(ConfigError, match="error, overwrite, skip, incremental"):
        OutputDirectory(tmp_path).prepare("append", SETTINGS)


def test_an_earlier_versions_json_layout_is_read_and_replaced_at_the_next_commit(tmp_path):
    out = OutputDirectory(tmp_path / "out")
    out.prepare("error", SETTINGS)
    out.commit("run-00000", "npy", SETTINGS, [InputFile("a", 1, 1)], [_task(out, "run-00000", 0, 0, [[5]])], {})
    legacy = {"manifest_version": 1, **out.manifest()}
    os.unlink(out._join(MANIFEST))
    for name, body in (("_manifest.json", json.dumps(legacy)), ("_summary.json", "{}"), ("_SUCCESS", "")):
        (tmp_path / "out" / name).write_text(body)
    assert out.is_complete() and out.prepare("skip", SETTINGS) == "complete"
    assert out.prepare("incremental", SETTINGS) == "continue" and set(out.recorded_inputs()) == {"a"}
    out.commit("run-00001", "npy", SETTINGS, [InputFile("b", 1, 1)], [_task(out, "run-00001", 0, 0, [[6]])], {})
    assert _dataset(out) == [[5], [6]]
    assert not any(name.endswith(".json") or name == "_SUCCESS" for name in os.listdir(out.path))


def test_an_unreadable_manifest_says_how_to_rebuild(tmp_path):
    out = OutputDirectory(tmp_path / "out")
    out.prepare("error", SETTINGS)
    out.commit("run-00000", "npy", SETTINGS, [], [_task(out, "run-00000", 0, 0, [[5]])], {})
    (tmp_path / "out" / MANIFEST).write_bytes(b"PAR1 not really")
    with pytest.raises(InputError, match="--mode overwrite"):
        out.prepare("skip", SETTINGS)
