"""``shardpiece tokenize --engine beam`` (the direct runner, 2 worker processes): the shards read in manifest order
equal Spark's row for row (Parquet, text and JSONL input); one output directory takes runs of both engines
(``--mode incremental``); a retried task never doubles a shard; a bad row stops the run with Spark's message.
Skipped without Apache Beam."""

from __future__ import annotations

import json
import os

import pytest

pytest.importorskip("apache_beam")

from pipelines.tokenize import TokenizeConfig, run_tokenize  # noqa: E402
from pipelines.tokenize.commit import read_manifest  # noqa: E402
from pipelines.tokenize.writers import read_shard  # noqa: E402
from tests.pipelines.test_tokenize_job import PIECES, make_documents, write_parquet, write_text  # noqa: E402
from tokenizer import Model  # noqa: E402

BEAM = {"runner": "DirectRunner", "beam_option": ["direct_num_workers=2", "direct_running_mode=multi_processing"]}


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("model") / "test.shardpiece")
    Model.byte_level(PIECES, [-2.0, -1.5, -1.0, -2.5, -1.2, -1.0, -3.0, -1.0], specials=("<s>", "</s>")).save(path)
    return path


def beam():
    from pipelines.beam.tokenize import BeamTokenize

    return BeamTokenize(BEAM)


def config(model_path, inputs, output, **options) -> TokenizeConfig:
    return TokenizeConfig(model=model_path, inputs=[str(i) for i in inputs], output=str(output), quiet=True,
                          **{"on_bad_row": "skip", **options})


def rows(output, output_format: str) -> list[list[int]]:
    """Every document's ids, shards in manifest order."""
    out = []
    for run in read_manifest(str(output))["runs"]:
        for shard in run["shards"]:
            out.extend([int(i) for i in ids] for ids in read_shard(output_format, os.path.join(str(output),
                                                                                              shard["stem"])))
    return out


@pytest.mark.spark
@pytest.mark.slow
def test_beam_shards_equal_sparks_and_runs_of_both_engines_share_one_directory(spark, tmp_path, model_path):
    lake = tmp_path / "lake"
    lake.mkdir()
    write_parquet(str(lake / "day-1.parquet"), make_documents(900, seed=1))
    write_text(str(tmp_path / "a.txt"), make_documents(700, seed=4))
    for inputs, output_format in (([lake], "parquet"), ([tmp_path / "a.txt"], "megatron")):
        options = dict(output_format=output_format, partitions=3, add_eos=True)
        spark_summary = run_tokenize(spark, config(model_path, inputs, tmp_path / f"spark-{output_format}", **options))
        summary = run_tokenize(None, config(model_path, inputs, tmp_path / f"beam-{output_format}", **options),
                               executor=beam())
        assert summary["config"]["master"] == "beam DirectRunner" and summary["reader"] == "arrow"
        assert summary["documents"] == spark_summary["documents"] and summary["tokens"] == spark_summary["tokens"]
        assert rows(tmp_path / f"beam-{output_format}", output_format) == \
            rows(tmp_path / f"spark-{output_format}", output_format)
        assert not os.path.exists(tmp_path / f"beam-{output_format}" / "_temporary")
    # Spark, then Beam, then Spark again into one incremental output: one manifest, three runs, complete
    output = tmp_path / "mixed"
    options = dict(output_format="parquet", mode="incremental")
    run_tokenize(spark, config(model_path, [lake], output, **options))
    write_parquet(str(lake / "day-2.parquet"), make_documents(400, seed=2), first_id=900)
    second = run_tokenize(None, config(model_path, [lake], output, **options), executor=beam())
    assert [os.path.basename(p) for p in second["input_files"]] == ["day-2.parquet"]
    write_parquet(str(lake / "day-3.parquet"), make_documents(300, seed=3), first_id=1300)
    run_tokenize(spark, config(model_path, [lake], output, **options))
    manifest = read_manifest(str(output))
    assert [[os.path.basename(f["path"]) for f in run["inputs"]] for run in manifest["runs"]] == \
        [["day-1.parquet"], ["day-2.parquet"], ["day-3.parquet"]]
    run_tokenize(spark, config(model_path, [lake], tmp_path / "all-spark", output_format="parquet"))
    assert rows(output, "parquet") == rows(tmp_path / "all-spark", "parquet")


def test_a_retried_task_leaves_one_shard(tmp_path, model_path):
    """Two attempts of one partition (a bundle Beam ran again) write two shards under their own names; the result
    file holds the last one, so the commit publishes one shard and drops the other with ``_temporary``."""
    import hashlib
    import json
    import pickle

    import pyarrow as pa

    from pipelines.beam import exchange as X
    from pipelines.beam.tokenize import encode_group
    from pipelines.read.arrow_read import plan_text
    from pipelines.tokenize.commit import OutputDirectory, TaskResult
    from pipelines.tokenize.options import task_options

    documents = make_documents(300, seed=5)
    write_text(str(tmp_path / "a.txt"), documents)
    cfg = config(model_path, [tmp_path / "a.txt"], tmp_path / "out", output_format="npy")
    out = OutputDirectory(cfg.output)
    out.prepare("error", cfg.settings("x"))
    units, _ = plan_text([(str(tmp_path / "a.txt"), os.path.getsize(tmp_path / "a.txt"))], 1)
    directory = X.make_directory(str(tmp_path / "exchange"))
    model = X.SharedFile(os.path.join(directory, "model.pkl"), open(model_path, "rb").read())
    arguments = {"model_path": model.path, "model_sha256": hashlib.sha256(open(model_path, "rb").read()).hexdigest(),
                 "output": out.path, "run_id": "run-00000", "config": task_options(cfg), "text_column": "text",
                 "keep_schema": pa.schema([])}
    for _ in range(2):
        X.task(lambda index, item: encode_group(arguments, index, item), directory, (0, units))
    attempts = os.listdir(os.path.join(out.path, "_temporary", "run-00000"))
    assert len([name for name in attempts if name.endswith(".tokens.npy")]) == 2
    state, result = pickle.loads(open(os.path.join(directory, "result-00000.pkl"), "rb").read())
    assert state == "ok"
    task = TaskResult(result["partition"], result["attempt"], result["stem"], result["documents"], result["tokens"],
                      result["bytes"], json.loads(result["file_sizes"]), json.loads(result["stats"]))
    out.commit("run-00000", "npy", cfg.settings("x"), [], [task], {"documents": task.documents})
    assert sorted(name for name in os.listdir(out.path) if name.endswith(".npy")) == [
        "run-00000-part-00000.offsets.npy", "run-00000-part-00000.tokens.npy"]
    assert not os.path.exists(os.path.join(out.path, "_temporary"))
    assert len(rows(out.path, "npy")) == task.documents == sum(d is not None for d in documents)  # one per line


def test_a_bad_row_in_a_beam_task_is_sparks_error(tmp_path, model_path):
    from pipelines.tokenize.task import BadRowError

    write_text(str(tmp_path / "a.txt"), ["fine", "x" * 100, "fine"])
    with pytest.raises(BadRowError) as raised:
        run_tokenize(None, config(model_path, [tmp_path / "a.txt"], tmp_path / "out", on_bad_row="error",
                                  max_document_bytes=50), executor=beam())
    message = str(raised.value)
    assert "a.txt" in message and "line 2" in message and message.endswith(
        "(nothing was committed; the output directory keeps its previous state)")
    assert read_manifest(str(tmp_path / "out")) is None or not read_manifest(str(tmp_path / "out"))["runs"]


def test_the_command_line_runs_on_beam_and_checks_its_options(tmp_path, model_path, capsys):
    import json

    from jobs.tokenize import main

    write_text(str(tmp_path / "a.txt"), ["one line", "two lines"])
    base = ["tokenize", "--model", model_path, "--input", str(tmp_path / "a.txt"), "--output-format", "npy"]
    assert main([*base, "--output", str(tmp_path / "out"), "--engine", "beam", "--beam-option",
                 "direct_num_workers=2"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["documents"] == 2 and summary["config"]["master"] == "beam DirectRunner"
    assert len(rows(tmp_path / "out", "npy")) == 2
    assert main([*base, "--output", str(tmp_path / "o2"), "--runner", "DirectRunner"]) == 2
    assert "--runner is for Apache Beam: add --engine beam" in capsys.readouterr().err
    assert main([*base, "--output", str(tmp_path / "o3"), "--engine", "beam", "--master", "local[2]"]) == 2
    assert "with --engine beam choose the runner with --runner" in capsys.readouterr().err


@pytest.mark.spark
@pytest.mark.slow
def test_beam_reads_jsonl_as_sparks_reader_does(spark, tmp_path, model_path):
    """JSONL with every awkward line (:data:`tests.pipelines.test_tokenize_jsonl.AWKWARD_LINES`) in three files
    (plain, ``.gz``, ``.zst``) and an empty one: Beam's shards, read in manifest order, equal those Spark's reader
    writes, kept columns included, with the same counts, for ``--on-bad-row keep`` and ``skip``."""
    from tests.pipelines.test_tokenize_jsonl import KEEP, output_rows, same_summary, write_jsonl_corpus

    inputs = write_jsonl_corpus(tmp_path / "in")
    for policy, output_format, options in (("keep", "parquet", dict(keep_columns=KEEP, partitions=4)),
                                           ("skip", "npy", dict(add_bos=True, add_eos=True))):
        spark_summary = run_tokenize(spark, config(model_path, inputs, tmp_path / f"spark-{policy}",
                                                   output_format=output_format, on_bad_row=policy,
                                                   **{k: v for k, v in options.items() if k != "partitions"}))
        summary = run_tokenize(None, config(model_path, inputs, tmp_path / f"beam-{policy}",
                                            output_format=output_format, on_bad_row=policy, **options),
                               executor=beam())
        assert spark_summary["reader"] == "spark" and summary["reader"] == "arrow"
        assert same_summary(summary) == same_summary(spark_summary)
        assert summary["bad_rows"]["malformed"] > 0 and summary["bad_rows"]["null"] > 0
        if output_format == "parquet":
            (beam_table, beam_runs), (spark_table, spark_runs) = (output_rows(tmp_path / f"beam-{policy}"),
                                                                  output_rows(tmp_path / f"spark-{policy}"))
            assert beam_table.schema == spark_table.schema and beam_runs == spark_runs
            assert beam_table.to_pylist() == spark_table.to_pylist()
        else:
            assert rows(tmp_path / f"beam-{policy}", "npy") == rows(tmp_path / f"spark-{policy}", "npy")


@pytest.mark.spark
def test_a_bad_jsonl_line_stops_beam_as_it_stops_spark(spark, tmp_path, model_path, capsys):
    """``--on-bad-row error``: the same one line naming the file and line, and exit code 2 from the command."""
    from jobs.exit_codes import exit_code
    from jobs.tokenize import main
    from pipelines.tokenize.task import BadRowError

    lines = [json.dumps({"text": f"line {i}", "id": i}) for i in range(40)]
    lines[17:18] = ["", "  ", '{"text": "fine"}', "[not an object]"]
    (tmp_path / "docs.jsonl").write_text("\n".join(lines) + "\n")
    inputs = [tmp_path / "docs.jsonl"]
    errors = []
    for name, executor in (("spark", None), ("beam", beam())):
        with pytest.raises(BadRowError) as raised:
            run_tokenize(spark if executor is None else None,
                         config(model_path, inputs, tmp_path / name, on_bad_row="error"), executor=executor)
        errors.append(raised.value)
    assert str(errors[1]) == str(errors[0])
    assert str(errors[0]).startswith(f"file:{tmp_path}/docs.jsonl, line 21: not a JSON object; ")
    assert exit_code(errors[0]) == exit_code(errors[1]) == 2
    assert main(["tokenize", "--model", model_path, "--input", str(tmp_path / "docs.jsonl"), "--output",
                 str(tmp_path / "cli"), "--engine", "beam", "--beam-option", "direct_num_workers=2"]) == 2
    assert str(errors[0]) in capsys.readouterr().err


@pytest.mark.spark
@pytest.mark.slow
def test_beam_extends_a_spark_jsonl_output(spark, tmp_path, model_path):
    """``--mode incremental`` over JSONL: Spark, then Beam for the new file; the output equals one Spark run over
    both files."""
    from tests.pipelines.test_tokenize_jsonl import KEEP, output_rows, write_jsonl_corpus

    write_jsonl_corpus(tmp_path / "all")
    folder = tmp_path / "in"
    folder.mkdir()
    options = dict(output_format="parquet", mode="incremental", keep_columns=KEEP)
    os.rename(tmp_path / "all" / "a.jsonl", folder / "a.jsonl")
    first = run_tokenize(spark, config(model_path, [folder], tmp_path / "out", **options))
    os.rename(tmp_path / "all" / "b.jsonl.gz", folder / "b.jsonl.gz")
    second = run_tokenize(None, config(model_path, [folder], tmp_path / "out", **options), executor=beam())
    assert (first["reader"], second["reader"]) == ("spark", "arrow")
    assert [os.path.basename(p) for p in second["input_files"]] == ["b.jsonl.gz"]
    run_tokenize(spark, config(model_path, [folder], tmp_path / "once", output_format="parquet", keep_columns=KEEP))
    (table, runs), (once, once_runs) = output_rows(tmp_path / "out"), output_rows(tmp_path / "once")
    assert len(runs) == 2 and sum(runs) == sum(once_runs)
    assert table.to_pylist() == once.to_pylist()
