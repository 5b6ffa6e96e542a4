"""Unigram on Spark: byte-identical models for 1 and 3 partitions, for driver and distributed E-steps, equal to
the single-machine trainer; the train job end to end."""

from __future__ import annotations

import random

import pytest

from tokenizer import Tokenizer
from tokenizer.trainers import unigram as ug

pytestmark = pytest.mark.spark


def sentences(seed: int = 7, lines: int = 300) -> list[bytes]:
    rng = random.Random(seed)
    words = ["".join(rng.choice(["ka", "to", "ri", "\u4e2d", "s\u00e9", "lo", "42"]) for _ in range(rng.randint(1, 3)))
             for _ in range(60)]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(1, 9))).encode() for _ in range(lines)]


#: the small vocabularies here leave no room for byte fallback's 256 pieces: SentencePiece's own defaults
SENTENCEPIECE_DEFAULTS = ("--unigram-defaults", "sentencepiece")


def fit(table, settings, runner=None, threads: int = 1) -> bytes:
    return ug.train_from_chunks(table.chunks, table.counts, settings, runner=runner, threads=threads).to_bytes()


def count_chunks(frame, settings, threads=None, shard_bytes=None):
    from pipelines.spark.reduce import count_chunk_table
    from pipelines.train.unigram import counter

    return count_chunk_table(frame, counter(settings, *([shard_bytes] if shard_bytes else [])), threads)


def test_models_identical_across_partitions_and_estep_modes(spark):
    from pipelines.spark.estep import spark_runner, table_frame

    texts = sentences()
    settings = ug.UnigramSettings(vocab_size=120)
    frame = spark.createDataFrame([(t,) for t in texts], "text binary")
    local = ug.train_unigram_local(texts, settings).to_bytes()
    for partitions in (1, 3):  # E-steps as Spark jobs over the table's pieces
        table = count_chunks(frame.repartition(partitions), settings)
        chunk_frame = table_frame(spark, table, partitions)
        try:
            assert fit(table, settings, spark_runner(chunk_frame)) == local
        finally:
            chunk_frame.unpersist()
    driver = count_chunks(frame.repartition(3), settings)
    assert fit(driver, settings) == fit(driver, settings, threads=2) == local
    assert driver.counts.sum() > 0 and driver.stats["documents"] == len([t for t in texts if t])
    # several small shards per partition, counted on two threads per task: the same model bytes
    threaded = count_chunks(frame.repartition(2), settings, threads=2, shard_bytes=300)
    assert fit(threaded, settings) == local


def test_threaded_chunk_count_is_the_local_table(spark):
    texts = sentences(seed=11) + ["x\u2585y".encode(), b"<s> ka </s>", b"", b"y" * 5000]
    settings = ug.UnigramSettings(vocab_size=120)
    frame = spark.createDataFrame([(t,) for t in texts], "text binary").repartition(3)
    table = count_chunks(frame, settings, threads=2, shard_bytes=200)
    want, want_skipped = ug.ChunkSplitter(settings).split_python(texts)
    assert dict(zip(table.chunks, table.counts.tolist())) == dict(want) and table.chunks == sorted(table.chunks)
    assert table.stats == {"documents": len(texts) - 1, "skipped_sentences": want_skipped} and want_skipped == 2


def test_train_job_writes_a_model_and_manifest(spark, tmp_path):
    import json

    from jobs.train import main

    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(b"\n".join(sentences(3, 200)) + b"\n")
    output = tmp_path / "u.model"
    code = main(["train", "--algorithm", "unigram", *SENTENCEPIECE_DEFAULTS,
                 "--input", str(corpus), "--vocab-size", "100", "--output",
                 str(output), "--partitions", "3", "--holdout-fraction", "0", "--quiet", "--master", "local[2]",
                 "--threads", "2"])
    assert code == 0
    tok = Tokenizer.load(str(output))
    assert 20 < tok.vocab_size <= 100  # the tiny corpus has fewer candidates than asked for
    line = sentences(3, 1)[0].decode()
    assert tok.decode(tok.encode(line)) == line
    manifest = json.loads((tmp_path / "u.model.manifest.json").read_text())
    assert manifest["models"]["100"]["evaluation"]["bytes_per_token"] > 1.0
    assert main(["train", "--algorithm", "unigram", *SENTENCEPIECE_DEFAULTS,
                 "--input", str(corpus), "--vocab-size", "100", "--output",
                 str(tmp_path / "bad.model"), "--threads", "0", "--quiet", "--master", "local[2]"]) == 2


def test_direct_count_is_the_spark_count_of_the_training_documents(spark, tmp_path):
    """Text files counted by pyarrow in the tasks (several units per file, a gzip file, held-out lines dropped by
    Spark's xxhash64 rule) give the table the Spark path counts on split_holdout's training documents, and its
    held-out documents in input order."""
    import gzip

    import pipelines.read.arrow_read as arrow_read
    from pipelines.spark.train_engine import split_holdout
    from pipelines.read.readers import read_corpus
    from pipelines.spark.direct_count import count_chunks_direct
    from pipelines.train.tables import chunk_table_of
    from pipelines.train.unigram import counter

    texts = sentences(seed=5, lines=600) + ["x\u2585y".encode(), b"", b"<s> ka </s>"]
    (tmp_path / "a.txt").write_bytes(b"\n".join(texts[:400]) + b"\n")
    (tmp_path / "b.txt.gz").write_bytes(gzip.compress(b"\n".join(texts[400:])))
    files = [(f"file:{tmp_path}/a.txt", (tmp_path / "a.txt").stat().st_size),
             (f"file:{tmp_path}/b.txt.gz", (tmp_path / "b.txt.gz").stat().st_size)]
    units, _ = arrow_read.plan_text(files, None, unit_bytes=1500)
    assert len(units) > 4
    settings = ug.UnigramSettings(vocab_size=120)
    counted = chunk_table_of(count_chunks_direct(spark, units, counter(settings, 700), 0.1, threads=2,
                                                 keep_documents=5000))
    training, held_out = split_holdout(read_corpus(spark, [str(tmp_path)]).documents, 0.1)
    table = count_chunks(training, settings)
    assert counted.chunks == table.chunks and counted.counts.tolist() == table.counts.tolist()
    read_stats = {"null_rows": 0}  # the in-task reader also reports the rows without text it read (none in text)
    assert counted.stats == {**table.stats, **read_stats} and table.stats["skipped_sentences"] == 1
    expected_held = [bytes(r["text"]) for r in held_out.collect()]
    assert 20 < len(counted.held_out) == len(expected_held) and sorted(counted.held_out) == sorted(expected_held)
    assert counted.held_out == [t for t in texts if t in set(expected_held)]  # input order
    assert counted.training[:3] == [t for t in texts if t and t not in set(expected_held)][:3]


def test_unigram_job_reads_local_text_directly_with_the_same_model(spark, tmp_path):
    import json

    from jobs.train import main

    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(b"\n".join(sentences(4, 400)) + b"\n")
    manifests = {}
    for reader in ("auto", "spark"):
        output = tmp_path / f"{reader}.model"
        assert main(["train", "--algorithm", "unigram", *SENTENCEPIECE_DEFAULTS,
                     "--input", str(corpus), "--vocab-size", "100", "--output",
                     str(output), "--holdout-fraction", "0.05", "--quiet", "--master", "local[2]",
                     "--reader", reader]) == 0
        manifests[reader] = json.loads((tmp_path / f"{reader}.model.manifest.json").read_text())
    assert (tmp_path / "auto.model").read_bytes() == (tmp_path / "spark.model").read_bytes()
    evaluation = {reader: m["models"]["100"]["evaluation"] for reader, m in manifests.items()}
    assert evaluation["auto"] == evaluation["spark"] and evaluation["auto"]["sample"] == "held-out documents"


def test_unigram_job_names_a_corrupt_compressed_input(spark, tmp_path, capsys):
    """The direct count reads .gz files in the tasks: a truncated one stops the job with the file and the fix."""
    import gzip

    from jobs.train import main

    (tmp_path / "bad.txt.gz").write_bytes(gzip.compress(b"\n".join(sentences(4, 200)))[:-20])
    code = main(["train", "--algorithm", "unigram", *SENTENCEPIECE_DEFAULTS,
                 "--input", str(tmp_path / "bad.txt.gz"), "--vocab-size", "100",
                 "--output", str(tmp_path / "m.model"), "--quiet", "--master", "local[2]"])
    err = capsys.readouterr().err
    assert code != 0 and "bad.txt.gz" in err and "corrupt, truncated" in err
    assert not (tmp_path / "m.model").exists()


def test_driver_threads_of_masters():
    from pipelines.spark.estep import driver_threads

    assert driver_threads("local[2]") == 2 and driver_threads("local") == 1
    assert driver_threads("spark://127.0.0.1:7077") == 1


def test_counting_session_options():
    from pipelines.spark.train_engine import COUNT_SPLIT_BYTES, counting_session_options

    cached = {"spark.sql.optimizer.canChangeCachedPlanOutputPartitioning": "true"}
    assert counting_session_options("local[2]") == {
        **cached, "spark.python.worker.reuse": "true", "spark.sql.files.maxPartitionBytes": str(COUNT_SPLIT_BYTES)}
    assert counting_session_options("spark://127.0.0.1:7077") == cached
    assert counting_session_options("local-cluster[2,1,1024]") == cached


def test_unigram_job_reads_parquet_in_the_tasks_with_the_same_model(spark, tmp_path):
    """A binary Parquet text column with nulls, read by pyarrow in the tasks: the model bytes and evaluation of
    Spark's reader."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    from jobs.train import main

    texts = sentences(6, 300)
    column = pa.array([None if i % 11 == 5 else t for i, t in enumerate(texts)], pa.binary())
    pq.write_table(pa.table({"content": column}), tmp_path / "part-0.parquet", row_group_size=64)
    manifests = {}
    for reader in ("auto", "spark"):
        assert main(["train", "--algorithm", "unigram", *SENTENCEPIECE_DEFAULTS,
                     "--input", str(tmp_path / "part-0.parquet"), "--text-column",
                     "content", "--vocab-size", "100", "--output", str(tmp_path / f"{reader}.model"),
                     "--holdout-fraction", "0.1", "--quiet", "--master", "local[2]", "--reader", reader]) == 0
        manifests[reader] = json.loads((tmp_path / f"{reader}.model.manifest.json").read_text())
    assert (tmp_path / "auto.model").read_bytes() == (tmp_path / "spark.model").read_bytes()
    evaluation = {reader: m["models"]["100"]["evaluation"] for reader, m in manifests.items()}
    assert evaluation["auto"] == evaluation["spark"] and evaluation["auto"]["sample"] == "held-out documents"
    assert manifests["auto"]["reader"] == "pyarrow in the tasks" and manifests["spark"]["reader"] == "spark"
