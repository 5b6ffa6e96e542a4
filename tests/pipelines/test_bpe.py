"""BPE on Spark: byte-identical models for 1 and 3 partitions, equal to the local trainer; the train job end to end,
and its in-process engine's refusals (its model bytes: ``test_engines.py``)."""

from __future__ import annotations

import random

import pytest

from pipelines.train.bpe import counter
from pipelines.spark.reduce import count_chunk_table
from tokenizer import Tokenizer
from tokenizer.model import Model
from tokenizer.trainers import bpe

pytestmark = pytest.mark.spark


def sample_corpus(n_lines: int = 300, seed: int = 3) -> list[bytes]:
    rng = random.Random(seed)
    words = ["spark", "token", "piece", "the", "of", "data's", "東京", "日本語", "  ", "42", "!?", "\t"]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(0, 9))).encode() for _ in range(n_lines)]


def test_sentencepiece_chunks_ignore_neighbouring_documents():
    settings = bpe.BpeSettings(pretokenizer="sentencepiece")
    together = bpe.count_chunks(*bpe.pack_texts([b"x  ", b" y"]), settings)
    apart = bpe.merge_chunk_counts(bpe.count_chunks(*bpe.pack_texts([b"x  "]), settings),
                                   bpe.count_chunks(*bpe.pack_texts([b" y"]), settings))
    assert bpe.sort_chunks(*together)[0] == bpe.sort_chunks(*apart)[0]


@pytest.mark.parametrize("pretokenizer", ["byte_level", "sentencepiece"])
def test_models_identical_across_partitions_and_local(spark, pretokenizer):
    lines = sample_corpus()
    settings = bpe.BpeSettings(vocab_sizes=(300, 330), pretokenizer=pretokenizer)
    chunks, counts = bpe.sort_chunks(*bpe.count_chunks(*bpe.pack_texts(lines), settings))
    for partitions, threads, shard_bytes in ((1, 1, 1 << 20), (3, 1, 1 << 20), (2, 2, 300)):
        frame = spark.createDataFrame([(line,) for line in lines], "text binary").repartition(partitions)
        table = count_chunk_table(frame, counter(settings, shard_bytes), threads=threads)
        assert table.stats == {"documents": sum(1 for line in lines if line)}  # non-empty, as the readers count
        assert table.chunks == chunks and table.counts.tolist() == counts.tolist()
    fingerprint = {"chunk_table_fingerprint": bpe.bpe_table_fingerprint(chunks, counts)}
    models = bpe.build_models(bpe.learn_bpe(chunks, counts, settings), settings, fingerprint)
    local = bpe.train_bpe_local(lines, settings, fingerprint)
    assert all(local[v].to_bytes() == models[v].to_bytes() for v in (300, 330))


def test_train_job_and_export(spark, tmp_path):
    from jobs.cli import main as cli

    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(b"\n".join(sample_corpus(200)) + b"\n")
    out = tmp_path / "bpe.model"
    code = cli(["train", "--algorithm", "bpe", "--input", str(corpus), "--vocab-size", "300", "--output", str(out),
                "--master", "local[2]", "--partitions", "3", "--holdout-fraction", "0", "--quiet"])
    assert code == 0
    local = tmp_path / "bpe-local.model"
    code = cli(["train", "--algorithm", "bpe", "--input", str(corpus), "--vocab-size", "300", "--output", str(local),
                "--master", "none", "--threads", "2", "--holdout-fraction", "0", "--quiet"])
    assert code == 0
    assert local.read_bytes() == out.read_bytes()  # no Spark, the same model bytes
    # held-out documents: the direct count (pyarrow in the tasks) and --master none reproduce Spark's xxhash64
    # split (same model bytes and evaluation as Spark's reader)
    import json

    runs = {"held-spark": ["--master", "local[2]", "--reader", "spark"], "held": ["--master", "local[2]"],
            "held-local": ["--master", "none"]}
    for name, options in runs.items():
        assert cli(["train", "--algorithm", "bpe", "--input", str(corpus), "--vocab-size", "300", "--output",
                    str(tmp_path / f"{name}.model"), *options, "--holdout-fraction", "0.2", "--quiet"]) == 0
    assert len({(tmp_path / f"{name}.model").read_bytes() for name in runs}) == 1
    manifests = {name: json.loads((tmp_path / f"{name}.model.manifest.json").read_text()) for name in runs}
    evaluations = [m["models"]["300"]["evaluation"] for m in manifests.values()]
    assert evaluations[0] == evaluations[1] == evaluations[2] and evaluations[0]["sample"] == "held-out documents"
    assert manifests["held"]["reader"] == "pyarrow in the tasks" and manifests["held-spark"]["reader"] == "spark"
    assert manifests["held"]["training_documents"] == manifests["held-spark"]["training_documents"] > 100
    model = Model.load(out)
    assert model.algorithm == "bpe" and model.pretokenizer == {"name": "byte_level", "pattern": "gpt2"}
    assert cli(["export", "--model", str(out), "--to", "huggingface", str(tmp_path / "hf") + "/"]) == 0
    tok = Tokenizer.load(tmp_path / "hf" / "tokenizer.json")
    line = sample_corpus(5, seed=9)[2]
    assert tok.encode(line) == Tokenizer(model).encode(line)


def test_train_job_without_spark_refuses_bad_options_and_names_bad_files(tmp_path, capsys):
    import gzip

    from jobs.cli import main as cli

    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(b"a b c\n")
    base = ["train", "--algorithm", "bpe", "--input", str(corpus), "--vocab-size", "300", "--output",
            str(tmp_path / "m.model"), "--master", "none", "--quiet"]
    assert cli(base + ["--holdout-fraction", "0.9"]) == 2
    assert "outside 0..0.5" in capsys.readouterr().err
    assert cli(base + ["--partitions", "2"]) == 2
    assert "--partitions needs Spark" in capsys.readouterr().err
    (tmp_path / "bad.gz").write_bytes(gzip.compress(b"a b c\nd e\n")[:12])
    (tmp_path / "bad.zst").write_bytes(b"not zstd at all")
    (tmp_path / "c.bz2").write_bytes(b"BZh9")
    base = ["train", "--algorithm", "bpe", "--vocab-size", "300", "--output", str(tmp_path / "m.model"),
            "--master", "none", "--holdout-fraction", "0", "--quiet", "--input"]
    for name, message in (("bad.gz", "it is corrupt, truncated"), ("bad.zst", "not a valid zstd file"),
                          ("missing.txt", "matches no file"), ("c.bz2", "--master local[*]")):
        assert cli(base + [str(tmp_path / name)]) == 2
        err = capsys.readouterr().err
        assert message in err and name in err
    assert not (tmp_path / "m.model").exists()


def test_train_job_reads_parquet_in_the_tasks_with_the_same_model(spark, tmp_path, capsys):
    """Parquet input on a local master: the text column read by pyarrow in the tasks (nulls dropped, strings as
    UTF-8 bytes) gives the model bytes, evaluation and document count of Spark's reader; a missing column names
    the columns there are."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    from jobs.cli import main as cli

    lines = [line.decode() for line in sample_corpus(240, seed=11)]
    body = pa.array([None if i % 17 == 3 else line for i, line in enumerate(lines)], pa.string())
    pq.write_table(pa.table({"id": pa.array(range(len(lines))), "body": body}), tmp_path / "a.parquet",
                   row_group_size=50)
    for reader in ("auto", "spark"):
        assert cli(["train", "--algorithm", "bpe", "--input", str(tmp_path / "a.parquet"), "--text-column", "body",
                    "--vocab-size", "300", "--output", str(tmp_path / f"{reader}.model"), "--master", "local[2]",
                    "--holdout-fraction", "0.2", "--reader", reader, "--quiet"]) == 0
    assert (tmp_path / "auto.model").read_bytes() == (tmp_path / "spark.model").read_bytes()
    manifests = {r: json.loads((tmp_path / f"{r}.model.manifest.json").read_text()) for r in ("auto", "spark")}
    assert manifests["auto"]["reader"] == "pyarrow in the tasks" and manifests["spark"]["reader"] == "spark"
    assert manifests["auto"]["training_documents"] == manifests["spark"]["training_documents"] > 100
    assert manifests["auto"]["models"]["300"]["evaluation"] == manifests["spark"]["models"]["300"]["evaluation"]
    capsys.readouterr()
    assert cli(["train", "--algorithm", "bpe", "--input", str(tmp_path / "a.parquet"), "--text-column", "text",
                "--vocab-size", "300", "--output", str(tmp_path / "x.model"), "--master", "local[2]",
                "--quiet"]) != 0
    error = capsys.readouterr().err
    assert "'text'" in error and "body" in error and not (tmp_path / "x.model").exists()


def test_train_job_names_a_corrupt_parquet_input(spark, tmp_path, capsys):
    """A truncated Parquet file: the direct count cannot read its footer, so Spark's reader gets it and the job
    stops naming the file and the fix; no model is written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from jobs.cli import main as cli

    pq.write_table(pa.table({"text": [line.decode() for line in sample_corpus(100)]}), tmp_path / "whole.parquet")
    (tmp_path / "bad.parquet").write_bytes((tmp_path / "whole.parquet").read_bytes()[:-40])
    capsys.readouterr()
    code = cli(["train", "--algorithm", "bpe", "--input", str(tmp_path / "bad.parquet"), "--vocab-size", "300",
                "--output", str(tmp_path / "m.model"), "--master", "local[2]", "--quiet"])
    error = capsys.readouterr().err
    assert code != 0 and "bad.parquet" in error and "remove it from --input" in error, error[-2000:]
    assert not (tmp_path / "m.model").exists()


def test_superword_chunks_identical_across_partitions_and_models_equal_local(spark):
    """Superword BPE's second table (the coarse chunks) is counted by the same reduce: the same table for any
    partitioning, so the same model bytes as the local trainer."""
    from tokenizer.trainers import superword as sw

    lines = sample_corpus()
    settings = bpe.BpeSettings(vocab_sizes=(300, 330), superword_transition=290)
    coarse_settings = sw.stage_two_settings(settings)
    chunks, counts = bpe.sort_chunks(*bpe.count_chunks(*bpe.pack_texts(lines), coarse_settings))
    assert any(b" " in chunk.strip(b" ") for chunk in chunks)  # chunks hold spaces between words
    for partitions, threads, shard_bytes in ((1, 1, 1 << 20), (3, 1, 1 << 20), (2, 2, 300)):
        frame = spark.createDataFrame([(line,) for line in lines], "text binary").repartition(partitions)
        table = count_chunk_table(frame, counter(coarse_settings, shard_bytes), threads=threads)
        assert table.chunks == chunks and table.counts.tolist() == counts.tolist()
    fine, fine_counts = bpe.sort_chunks(*bpe.count_chunks(*bpe.pack_texts(lines), settings))
    merges = sw.learn_superword(bpe.learn_bpe(fine, fine_counts, settings, sw.stage_one_merges(settings)),
                                chunks, counts, settings)
    models = bpe.build_models(merges, settings)
    local = sw.train_local(lines, settings)
    assert all(local[v].to_bytes() == models[v].to_bytes() for v in (300, 330))
