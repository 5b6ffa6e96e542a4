"""The driver's memory bound: the kept entries are exactly the most frequent ones, ties by key, for any
partitioning; the report says what was dropped; the train job applies it on every path (Spark's reader, pyarrow in
the tasks, ``--master none``) with the same model bytes, and records it in the manifest and the models."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from tokenizer.trainers import table_bound as B


@hypothesis_settings(max_examples=200, deadline=None)
@given(counts=st.lists(st.integers(1, 6), min_size=1, max_size=60), limit=st.integers(1, 70))
def test_cut_keeps_exactly_the_most_frequent(counts, limit):
    histogram = B.histogram(np.array(counts))
    decision = B.cut(histogram, limit)
    ranked = sorted(counts, reverse=True)
    if len(counts) <= limit:
        assert decision is None
        return
    count, at_cut = decision
    assert sum(c > count for c in counts) + at_cut == limit and 0 < at_cut <= ranked.count(count)
    assert ranked[limit - 1] == count
    report = B.report(histogram, limit, decision)
    assert report["kept_occurrences"] == sum(ranked[:limit]) and report["dropped_entries"] == len(counts) - limit


def top(table: dict, limit: int) -> dict:
    """The reference: sort by count (descending), then key; keep ``limit``."""
    return dict(sorted(table.items(), key=lambda item: (-item[1], item[0]))[:limit])


def random_lines(n: int = 3000, seed: int = 4) -> list[bytes]:
    rng = random.Random(seed)
    words = ["".join(rng.choice("abcdefgh") for _ in range(rng.randint(1, 6))) for _ in range(900)]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(1, 8))).encode() for _ in range(n)]


@pytest.mark.spark
def test_bounded_reduce_is_the_top_of_the_full_table_for_any_partitioning(spark):
    from pipelines.train import bpe as pb
    from pipelines.train import bytepiece as pbp
    from pipelines.spark import reduce
    from tokenizer.trainers.bpe import BpeSettings
    from tokenizer.trainers.bytepiece import TrainSettings

    lines = random_lines()
    chunks = pb.counter(BpeSettings(vocab_sizes=(300,)))
    ngrams = pbp.partial(pbp.count_ngram_shards, TrainSettings(order=3, min_count=1, vocab_sizes=(300,)))
    for kind, counter in (("bytes", chunks), ("int64", ngrams)):
        frame = spark.createDataFrame([(line,) for line in lines], "text binary")
        full = reduce.reduce_counts(frame.repartition(3), counter, kind)
        if kind == "int64":
            table = dict(zip(full.table[0].tolist(), full.table[1].tolist()))
        else:
            from tokenizer.trainers.chunk_table import finish

            done = finish(full.table, {})
            table = dict(zip(done.chunks, done.counts.tolist()))
        counts = sorted(table.values(), reverse=True)
        limit = next(i for i in range(len(counts) // 2, len(counts)) if counts[i - 1] == counts[i])  # inside a tie
        want = top(table, limit)
        for partitions in (1, 4):
            bounded = reduce.reduce_counts(frame.repartition(partitions), counter, kind, limit=limit)
            if kind == "int64":
                got = dict(zip(bounded.table[0].tolist(), bounded.table[1].tolist()))
            else:
                done = finish(bounded.table, {})
                got = dict(zip(done.chunks, done.counts.tolist()))
            assert got == want, (kind, partitions)
            assert bounded.bound["kept_entries"] == limit and bounded.bound["entries"] == len(table)
            assert bounded.bound["kept_occurrences"] == sum(want.values())
            assert bounded.stats == full.stats  # the side statistics count everything
        assert full.bound["dropped_entries"] == 0 and full.bound["limit"] is None


@pytest.mark.spark
def test_train_job_applies_the_bound_on_every_path_with_the_same_model(spark, tmp_path):
    from jobs.train import main

    rng = random.Random(9)
    words = ["".join(rng.choice("abcdefghijklmnop") for _ in range(6)) for _ in range(90_000)]
    lines = [" ".join(words[i:i + 6]) for i in range(0, len(words), 6)] + ["spark piece"] * 200
    (tmp_path / "corpus.txt").write_text("\n".join(lines) + "\n")
    models = {}
    for name, extra in (("direct", []), ("spark", ["--reader", "spark"]), ("none", ["--master", "none"])):
        out = tmp_path / f"{name}.model"
        argv = ["train", "--algorithm", "bpe", "--input", str(tmp_path / "corpus.txt"), "--vocab-size", "300",
                "--output", str(out), "--holdout-fraction", "0", "--max-table-entries", "65536", "--quiet",
                "--work-dir", str(tmp_path / f"work-{name}"), *extra]
        if name != "none":
            argv += ["--master", "local[2]"]
        assert main(argv) == 0, name
        models[name] = out.read_bytes()
        manifest = json.loads((tmp_path / f"{name}.model.manifest.json").read_text())
        bound = manifest["table_bounds"]["chunks"]
        assert bound["limit"] == 65536 and bound["kept_entries"] == 65536 and bound["entries"] > 80_000
        assert 0 < bound["kept_share"] < 1 and manifest["details"]["distinct_chunks"] == 65536
    assert models["direct"] == models["spark"] == models["none"]
    from tokenizer.model import Model

    assert Model.load(tmp_path / "none.model").provenance["table_bound"]["chunks"]["limit"] == 65536
