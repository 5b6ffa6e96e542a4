"""The driver's memory bound: the kept entries are exactly the most frequent ones, ties by key, within the entry
and the key-byte limits, for any partitioning; the report says what was dropped; the train job applies it on every
path (Spark's reader, pyarrow in the tasks, ``--master none``) with the same model bytes, and records it in the
manifest and the models (superword BPE's span table bounded in bytes, on the shipped sample)."""

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
    count, at_cut, _ = decision
    assert sum(c > count for c in counts) + at_cut == limit and 0 < at_cut <= ranked.count(count)
    assert ranked[limit - 1] == count
    report = B.report(histogram, limit, (count, list(range(at_cut))))
    assert report["kept_occurrences"] == sum(ranked[:limit]) and report["dropped_entries"] == len(counts) - limit
    assert report["kept_bytes"] == 8 * limit and report["byte_limit"] is None


def top_within(table: dict, limit: int | None, byte_limit: int | None) -> dict:
    """The reference of both limits: sort by count (descending), then key; keep the longest run from the top
    within ``limit`` entries and ``byte_limit`` key bytes (8 per int key)."""
    kept, used = {}, 0
    for key, count in sorted(table.items(), key=lambda item: (-item[1], item[0])):
        used += 8 if isinstance(key, int) else len(key)
        if (limit is not None and len(kept) == limit) or (byte_limit is not None and used > byte_limit):
            break
        kept[key] = count
    return kept


def bytes_table(table: dict) -> tuple:
    """A ``bytes`` kind table (data, offsets, counts) of ``{key: count}``."""
    from tokenizer.packed import pack

    keys = sorted(table)
    data, offsets = pack(keys)
    return np.asarray(data, np.uint8), np.asarray(offsets, np.int64), np.array([table[k] for k in keys], np.int64)


@hypothesis_settings(max_examples=300, deadline=None)
@given(table=st.dictionaries(st.binary(min_size=1, max_size=6), st.integers(1, 4), min_size=1, max_size=40),
       limit=st.one_of(st.none(), st.integers(1, 45)), byte_limit=st.one_of(st.none(), st.integers(1, 200)),
       parts=st.integers(1, 4), seed=st.integers(0, 9))
def test_the_byte_limit_keeps_the_top_run_within_both_limits_for_any_partitioning(table, limit, byte_limit, parts,
                                                                                 seed):
    """In one piece (the in-process engine's cut) and as the distributed engines decide it (the summed
    histograms of parts, each part's candidate keys at the cut count, then the filter), the same entries."""
    from pipelines.train.tables import bounded_table, histogram, keys_at, kept_mask, last_kept, select

    want = top_within(table, limit, byte_limit)
    kept, report = bounded_table("bytes", bytes_table(table), (limit, byte_limit))
    data, offsets, counts = kept
    got = {bytes(data[offsets[i]:offsets[i + 1]]): int(counts[i]) for i in range(len(counts))}
    assert got == want
    assert report["kept_entries"] == len(want) and report["kept_bytes"] == sum(map(len, want))
    assert report["dropped_entries"] == len(table) - len(want) and report["byte_limit"] == byte_limit
    rng = random.Random(seed)
    split: list[dict] = [{} for _ in range(parts)]
    for key, count in table.items():
        split[rng.randrange(parts)][key] = count
    tables = [bytes_table(part) for part in split if part]
    decision = B.cut(B.add_histograms(*(histogram("bytes", t) for t in tables)), (limit, byte_limit))
    if decision is None:
        assert want == table
        return
    count, entries_room, bytes_room = decision
    smallest = sorted(k for t in tables for k in B.candidates(keys_at("bytes", t, count), entries_room, bytes_room))
    last = last_kept(B.fitting(smallest, entries_room, bytes_room))
    distributed = {}
    for t in tables:
        d, o, c = select("bytes", t, kept_mask("bytes", t, count, last))
        distributed.update({bytes(d[o[i]:o[i + 1]]): int(c[i]) for i in range(len(c))})
    assert distributed == want


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
        key_bytes = full.bound["bytes"]
        assert key_bytes == sum(8 if kind == "int64" else len(k) for k in table)
        for bound in (limit, (None, key_bytes // 3), (limit, key_bytes // 2)):
            want = top_within(table, *B.limits(bound))
            for partitions in (1, 4):
                bounded = reduce.reduce_counts(frame.repartition(partitions), counter, kind, limit=bound)
                if kind == "int64":
                    got = dict(zip(bounded.table[0].tolist(), bounded.table[1].tolist()))
                else:
                    done = finish(bounded.table, {})
                    got = dict(zip(done.chunks, done.counts.tolist()))
                assert got == want, (kind, partitions, bound)
                assert bounded.bound["kept_entries"] == len(want) and bounded.bound["entries"] == len(table)
                assert bounded.bound["kept_occurrences"] == sum(want.values())
                assert bounded.bound["kept_bytes"] == sum(8 if kind == "int64" else len(k) for k in want)
                assert bounded.stats == full.stats  # the side statistics count everything
        assert top_within(table, limit, None) == top(table, limit)
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


@pytest.mark.spark
def test_superword_span_table_is_bounded_in_bytes_with_the_same_model_on_every_path(spark, tmp_path):
    """Superword BPE on the shipped English sample with ``--max-table-bytes``: the span table (clauses) is cut to
    the bound, the word table under it is not; the same model bytes in this process and in Spark with 1 or 4
    partitions (pyarrow in the tasks, Spark's reader); the summary line, manifest and provenance say what was cut."""
    import os

    from jobs.train import main
    from tokenizer.model import Model

    sample = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                          "data", "sample", "en.txt.gz")
    limit, models = 262_144, {}
    for name, extra in (("none", ["--master", "none"]), ("direct-4", ["--partitions", "4"]),
                        ("spark-1", ["--reader", "spark", "--partitions", "1"])):
        out = tmp_path / f"{name}.model"
        argv = ["train", "--algorithm", "bpe", "--pretokenizer", "byte_level", "--superword-transition", "0.75",
                "--input", sample, "--vocab-size", "2000", "--output", str(out), "--holdout-fraction", "0",
                "--max-table-bytes", str(limit), "--quiet", "--work-dir", str(tmp_path / f"work-{name}"), *extra]
        if name != "none":
            argv += ["--master", "local[2]"]
        assert main(argv) == 0, name
        models[name] = out.read_bytes()
        bounds = json.loads((tmp_path / f"{name}.model.manifest.json").read_text())["table_bounds"]
        spans, words = bounds["superword_chunks"], bounds["chunks"]
        assert words["dropped_entries"] == 0 and words["kept_bytes"] == words["bytes"] < limit
        assert spans["byte_limit"] == limit and spans["bytes"] > limit >= spans["kept_bytes"] > limit - 1000
        assert spans["dropped_entries"] > 0 and 0 < spans["kept_share"] < 1
    assert models["none"] == models["direct-4"] == models["spark-1"]
    recorded = Model.load(tmp_path / "none.model").provenance["table_bound"]
    assert set(recorded) == {"superword_chunks"} and recorded["superword_chunks"]["byte_limit"] == limit
