"""BytePiece on Spark: byte-identical models for any partitioning, equal to the single-node reference."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest


from pipelines.train.bytepiece import (
    count_ngram_shards, count_piece_shards, em_statistics, kept_ngram_mask, multiset_fingerprint, train_bytepiece,
)
from pipelines.read.shards import binary_buffers, iter_shards, map_shards
from tokenizer.errors import InputError
from tokenizer.packed import to_arrow
from tokenizer.trainers import bytepiece as bp
from tokenizer.trainers.bytepiece import TrainSettings, train_bytepiece_local


def sample_corpus(n_lines: int = 1200, seed: int = 7) -> list[bytes]:
    """Repetitive multilingual lines (so n-grams pass min_count), plus a few awkward ones."""
    rng = random.Random(seed)
    words = ["spark", "token", "piece", "model", "the", "of", "and", "data", "東京", "大学", "日本語", "テキスト",
             "数据", "处理", "模型", "2024", "3.14", "naïve", "café"]
    lines = []
    for _ in range(n_lines):
        joiner = " " if rng.random() < 0.6 else ""
        lines.append(joiner.join(rng.choice(words) for _ in range(rng.randint(1, 12))).encode())
    lines += [b"bad \xff\xfe bytes\r", b"\x00nul inside", b"tab\tseparated\tline", b"a" * 300]
    return lines


def test_kept_ngram_mask_keeps_single_bytes_and_frequent_ngrams():
    single, pair = (97 << 51) | 1, (97 << 51) | (98 << 43) | 2
    mask = kept_ngram_mask(3, (np.array([single, pair, pair + 8], np.int64), np.array([1, 3, 2], np.int64)))
    assert mask.tolist() == [True, True, False]


def spark_models(spark, lines: list[bytes], settings: TrainSettings, partitions: int, threads: int | None = None):
    frame = spark.createDataFrame([(line,) for line in lines], "text binary").repartition(partitions)
    from pipelines.spark.train_engine import SparkEngine

    return train_bytepiece(SparkEngine.over(frame, threads), settings, shard_bytes=4096)


class Broadcast:
    """Stands in for a Spark broadcast in the closures' direct calls."""

    def __init__(self, value):
        self.value = value


def text_batches(lines: list[bytes], rows: int = 50) -> list[pa.RecordBatch]:
    return [pa.RecordBatch.from_arrays([pa.array(lines[i:i + rows], pa.binary())], names=["text"])
            for i in range(0, len(lines), rows)]


def test_map_shards_keeps_order_and_at_most_threads_plus_one_shards_in_flight():
    import threading

    taken, done, lock = [], [], threading.Lock()

    def shards():
        for i in range(20):
            with lock:
                assert len(taken) - len(done) <= 3  # shards handed out but whose result the caller has not got
            taken.append(i)
            yield i

    def square(i):
        return i * i

    results = []
    for result in map_shards(square, shards(), threads=2):
        with lock:
            done.append(result)
        results.append(result)
    assert results == [i * i for i in range(20)]
    assert list(map_shards(square, iter(range(5)), threads=1)) == [0, 1, 4, 9, 16]
    assert list(map_shards(square, iter([]), threads=3)) == []


def test_map_shards_passes_a_shard_error_to_the_caller():
    def fail_on_three(i):
        if i == 3:
            raise InputError("shard 3 is bad")
        return i

    with pytest.raises(InputError, match="shard 3"):
        list(map_shards(fail_on_three, iter(range(8)), threads=2))


@pytest.mark.parametrize("settings", [
    TrainSettings(order=4, min_count=3, vocab_sizes=(300,)),
    TrainSettings(order=6, min_count=2, isolate_digits=True, normalization="nfc", vocab_sizes=(300,)),
], ids=["identity", "nfc-digits"])
def test_threads_count_exactly_what_one_thread_counts(settings):
    lines = [line for line in sample_corpus(600, seed=11)
             if b"\xff" not in line or settings.normalization == "identity"]
    shard_bytes = 512  # many shards per partition, so the threads overlap
    ngrams = {threads: count_ngram_shards(settings, iter(text_batches(lines)), threads, shard_bytes)
              for threads in (1, 2, 3)}
    for threads in (2, 3):
        assert ngrams[threads][1] == ngrams[1][1] and ngrams[1][1]["documents"] == len(lines)
        assert all(np.array_equal(a, b) for a, b in zip(ngrams[threads][0], ngrams[1][0]))

    keys, counts = bp.count_ngrams(*bp.chunk_texts(*bp.pack_texts(lines), settings), settings.order)
    lm = bp.build_ngram_model(keys, counts, settings)
    pieces = {threads: count_piece_shards(Broadcast(lm), settings, iter(text_batches(lines)), threads, shard_bytes)[0]
              for threads in (1, 2)}
    assert len(pieces[1][2]) > 256 and all(np.array_equal(a, b) for a, b in zip(pieces[2], pieces[1]))

    piece_list = sorted(set(bp.piece_list(pieces[1][0], pieces[1][1])) | {bytes([b]) for b in range(256)})
    piece_counts = np.ones(len(piece_list), np.int64)
    em = {threads: em_statistics(Broadcast((piece_list, piece_counts)), settings, iter(text_batches(lines)), threads,
                                 shard_bytes).to_bytes() for threads in (1, 2)}
    assert em[2] == em[1]


def test_multiset_fingerprint_ignores_order_but_not_content():
    assert multiset_fingerprint([b"a", b"b", b"a"]) == multiset_fingerprint([b"a", b"a", b"b"])
    assert multiset_fingerprint([b"a", b"b"]) != multiset_fingerprint([b"a", b"b", b"b"])
    assert multiset_fingerprint([b"ab"]) != multiset_fingerprint([b"a", b"b"])


def test_binary_buffers_of_sliced_and_large_arrays():
    array = pa.array([b"xx", b"ab", b"", b"cde"], pa.binary()).slice(1)
    data, offsets = binary_buffers(array)
    assert [data[offsets[i]:offsets[i + 1]].tobytes() for i in range(3)] == [b"ab", b"", b"cde"]
    data, offsets = binary_buffers(pa.array(["é", "z"], pa.large_string()))
    assert data[offsets[0]:offsets[2]].tobytes() == "éz".encode()
    rebuilt = to_arrow(np.frombuffer(b"abcde", np.uint8), np.array([0, 2, 2, 5]))
    assert rebuilt.to_pylist() == [b"ab", b"", b"cde"]
    with pytest.raises(InputError, match="null"):
        binary_buffers(pa.array([b"a", None]))


def test_iter_shards_groups_batches_without_losing_bytes():
    texts = [bytes([65 + i % 26]) * (i % 7) for i in range(100)]
    batches = [pa.RecordBatch.from_arrays([pa.array(texts[i:i + 9], pa.binary())], names=["text"])
               for i in range(0, 100, 9)]
    shards = list(iter_shards(iter(batches), shard_bytes=40))
    assert len(shards) > 1
    rebuilt = [data[offsets[i]:offsets[i + 1]].tobytes() for data, offsets in shards for i in range(len(offsets) - 1)]
    assert rebuilt == texts


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("settings", [
    TrainSettings(order=4, min_count=3, vocab_sizes=(420, 300)),
    TrainSettings(order=6, min_count=2, max_piece_length=8, isolate_digits=True, vocab_sizes=(360,),
                  refine_em_rounds=3),
], ids=["two-sizes", "digits-em"])
def test_models_identical_for_any_partitioning_and_equal_to_local(spark, settings):
    lines = sample_corpus()
    local = train_bytepiece_local(lines, settings, provenance={"corpus_fingerprint": multiset_fingerprint(lines)})
    results = {n: spark_models(spark, lines, settings, n) for n in (1, 3, 8)}
    results["3 partitions, 2 threads"] = spark_models(spark, lines, settings, 3, threads=2)
    for partitions, result in results.items():
        assert sorted(result.models) == sorted(settings.vocab_sizes)
        for size, model in result.models.items():
            assert model.to_bytes() == local[size].to_bytes(), (partitions, size)
    largest = max(settings.vocab_sizes)
    assert local[largest].vocab_size > 262  # pieces were learned, the comparison is not trivial
    first = results[1]
    candidates = next(s.counts for s in first.stages if s.name == "candidates")
    assert 0 < candidates["set_aside_pieces"] < candidates["distinct_pieces"]  # rare pieces stayed in Spark
    assert first.documents == len(lines)
    assert [s.counts for s in first.stages] == [s.counts for s in results[8].stages]
    assert [s.counts for s in first.stages] == [s.counts for s in results["3 partitions, 2 threads"].stages]


@pytest.mark.spark
def test_nfc_settings_normalize_before_counting(spark):
    lines = ["cafe\u0301 " * 5, "café " * 5] * 20
    settings = TrainSettings(normalization="nfc", min_count=2, vocab_sizes=(270,))
    result = spark_models(spark, [s.encode() for s in lines], settings, 2)
    model = result.models[270]
    local = train_bytepiece_local(lines, settings, provenance={
        "corpus_fingerprint": multiset_fingerprint([s.encode() for s in lines])})
    assert model.to_bytes() == local[270].to_bytes()
    assert model.normalizer == {"name": "nfc"}


@pytest.mark.spark
def test_corpus_without_text_is_a_clear_error(spark):
    frame = spark.createDataFrame([], "text binary")
    with pytest.raises(InputError, match="no text"):
        from pipelines.spark.train_engine import SparkEngine

        train_bytepiece(SparkEngine.over(frame), TrainSettings(vocab_sizes=(300,)))
