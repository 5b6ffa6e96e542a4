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


def test_models_identical_across_partitions_and_estep_modes(spark):
    from pipelines.unigram import train_unigram

    texts = sentences()
    settings = ug.UnigramSettings(vocab_size=120)
    frame = spark.createDataFrame([(t,) for t in texts], "text binary")
    local = ug.train_unigram_local(texts, settings)
    one = train_unigram(frame.repartition(1), settings, estep="spark", partitions=1)
    three = train_unigram(frame.repartition(3), settings, estep="spark", partitions=3)
    driver = train_unigram(frame.repartition(3), settings, estep="driver")
    driver_two_threads = train_unigram(frame.repartition(2), settings, estep="driver", threads=2)
    assert one.estep_mode == "spark" and driver.estep_mode == "driver"
    assert one.model.to_bytes() == three.model.to_bytes() == driver.model.to_bytes() == local.to_bytes()
    assert driver_two_threads.model.to_bytes() == local.to_bytes()
    assert one.sentences > 0 and one.chunks > 0
    # several small shards per partition, counted on two threads per task: the same model bytes
    threaded = train_unigram(frame.repartition(2), settings, estep="driver", count_threads=2, shard_bytes=300)
    assert threaded.model.to_bytes() == local.to_bytes()


def test_threaded_chunk_count_is_the_local_table(spark):
    from pipelines.unigram import collect_table, count_chunks

    texts = sentences(seed=11) + ["x\u2585y".encode(), b"<s> ka </s>", b"", b"y" * 5000]
    settings = ug.UnigramSettings(vocab_size=120)
    frame = spark.createDataFrame([(t,) for t in texts], "text binary").repartition(3)
    chunks, counts, skipped = collect_table(count_chunks(frame, settings, threads=2, shard_bytes=200))
    want, want_skipped = ug.ChunkSplitter(settings).split_python(texts)
    assert dict(zip(chunks, counts.tolist())) == dict(want) and chunks == sorted(chunks)
    assert skipped == want_skipped == 2


def test_train_job_writes_a_model_and_manifest(spark, tmp_path):
    import json

    from jobs.train import main

    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(b"\n".join(sentences(3, 200)) + b"\n")
    output = tmp_path / "u.model"
    code = main(["train", "--algorithm", "unigram", "--input", str(corpus), "--vocab-size", "100", "--output",
                 str(output), "--partitions", "3", "--holdout-fraction", "0", "--quiet", "--master", "local[2]",
                 "--threads", "2"])
    assert code == 0
    tok = Tokenizer.load(str(output))
    assert 20 < tok.vocab_size <= 100  # the tiny corpus has fewer candidates than asked for
    line = sentences(3, 1)[0].decode()
    assert tok.decode(tok.encode(line)) == line
    manifest = json.loads((tmp_path / "u.model.manifest.json").read_text())
    assert manifest["models"]["100"]["evaluation"]["bytes_per_token"] > 1.0
    assert main(["train", "--algorithm", "unigram", "--input", str(corpus), "--vocab-size", "100", "--output",
                 str(tmp_path / "bad.model"), "--threads", "0", "--quiet", "--master", "local[2]"]) == 2


def test_driver_threads_of_masters():
    from pipelines.unigram import driver_threads

    assert driver_threads("local[2]") == 2 and driver_threads("local") == 1
    assert driver_threads("spark://127.0.0.1:7077") == 1


def test_counting_session_options():
    from pipelines.unigram import COUNT_SPLIT_BYTES, counting_session_options

    cached = {"spark.sql.optimizer.canChangeCachedPlanOutputPartitioning": "true"}
    assert counting_session_options("local[2]") == {
        **cached, "spark.python.worker.reuse": "true", "spark.sql.files.maxPartitionBytes": str(COUNT_SPLIT_BYTES)}
    assert counting_session_options("spark://127.0.0.1:7077") == cached
    assert counting_session_options("local-cluster[2,1,1024]") == cached
