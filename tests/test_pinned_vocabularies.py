"""Pinned vocabularies: small models of every training algorithm and variant, trained on the first lines of the
shipped sample corpus (``data/sample/en.txt.gz``), have exactly the pieces, scores and piece types recorded below,
whether trained by the single-node trainer or by the ``shardpiece train`` job on Spark (or, for BPE, by the job
without Spark). A change to how training runs (Spark stages, counting kernels, shuffles, threads) must leave every
model as it is; the header's version field may change, so the vocabulary is pinned, not the file bytes.

Each pinned entry holds the vocab size, the first pieces (after the 256 single bytes in byte-level models), the
last pieces, and a SHA-256 over every ``(piece bytes, score as float64, piece type)`` in id order, plus, for BPE,
the length of each merge's left part (which two pieces a merged piece is made of).

To regenerate after a deliberate change of the models (say why in the commit)::

    SHARDPIECE_PRINT_PINNED=1 SPARK_LOCAL_IP=127.0.0.1 python -m pytest -s -k local tests/test_pinned_vocabularies.py

prints each model's entry as a Python literal to paste into ``PINNED``; the test still fails until it is pasted.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import os
import pathlib
import struct
from dataclasses import dataclass

import numpy as np
import pytest

from jobs.train import run as run_train_job
from pipelines.train.algorithms import ALGORITHMS
from jobs.train_options import build_parser, resolve_options
from tokenizer.model import Model
from tokenizer.piece_types import PieceType
from tokenizer.trainers.bpe import train_bpe_local
from tokenizer.trainers.bytepiece import train_bytepiece_local
from tokenizer.trainers.unigram import train_unigram_local

SAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "sample", "en.txt.gz")
SAMPLE_LINES = 5000  # about 235 kB of text: each model trains in about a second once the kernels are compiled
VOCAB_SIZE = 1000
HEAD, TAIL = 10, 8  # the tail of byte-level models ends with 3 special tokens
PRINT_PINNED = "SHARDPIECE_PRINT_PINNED"


@dataclass(frozen=True)
class Variant:
    """A model to pin: its name in :data:`PINNED`, the ``shardpiece train`` flags that choose it, and the flags of
    its run on Spark (how the job reads and counts, which never changes the model)."""

    name: str
    flags: tuple[str, ...]
    spark_flags: tuple[str, ...] = ()

    @property
    def algorithm(self) -> str:
        return self.flags[self.flags.index("--algorithm") + 1]


#: One Spark run per variant, together taking every way the job reads and counts: bytepiece through Spark's reader
#: (as read, and repartitioned), unigram and BPE as read by pyarrow in the tasks (the default for local files) and
#: through Spark's reader with the reduce of the chunk tables, unigram's E-steps on the driver and as Spark jobs.
SPARK_REREAD = ("--reader", "spark", "--partitions", "3")
VARIANTS = (
    Variant("bytepiece", ("--algorithm", "bytepiece")),
    Variant("bytepiece-nfc-refine-em", ("--algorithm", "bytepiece", "--normalization", "nfc", "--refine-em-rounds",
                                        "2", "--refine-em-mode", "expected"), ("--partitions", "3")),
    # SentencePiece's own defaults: the models earlier versions trained by default, byte for byte
    Variant("unigram", ("--algorithm", "unigram", "--unigram-defaults", "sentencepiece")),
    Variant("unigram-lossless", ("--algorithm", "unigram")),  # the default: byte fallback, whitespace kept
    Variant("unigram-byte", ("--algorithm", "unigram", "--unigram-variant", "byte"),
            (*SPARK_REREAD, "--estep", "spark")),
    Variant("bpe-byte-level", ("--algorithm", "bpe")),  # the gpt2 pattern
    Variant("bpe-byte-level-llama3", ("--algorithm", "bpe", "--pattern", "llama3")),
    Variant("bpe-sentencepiece", ("--algorithm", "bpe", "--pretokenizer", "sentencepiece"), SPARK_REREAD),
)
BY_NAME = {variant.name: variant for variant in VARIANTS}

# (id, piece, score, type): a piece is shown as text when it is valid UTF-8, else as bytes
PINNED: dict[str, dict] = {
    "bytepiece": {
        "vocab_size": 997,
        "head": [
            (256, " (", -6.1529541015625, "NORMAL"),
            (257, " 2", -7.24658203125, "NORMAL"),
            (258, " 3", -7.675048828125, "NORMAL"),
            (259, " 4", -7.6295166015625, "NORMAL"),
            (260, " <", -6.9703369140625, "NORMAL"),
            (261, " C", -8.0689697265625, "NORMAL"),
            (262, " F", -7.909912109375, "NORMAL"),
            (263, " S", -8.2581787109375, "NORMAL"),
            (264, " T", -7.909912109375, "NORMAL"),
            (265, " a", -5.4700927734375, "NORMAL"),
        ],
        "tail": [
            (989, "                 ", -7.358642578125, "NORMAL"),
            (990, "   ...     print(", -7.6075439453125, "NORMAL"),
            (991, "keyword arguments", -8.66357421875, "NORMAL"),
            (992, " function definition", -8.4404296875, "NORMAL"),
            (993, '     File "<stdin>", line 1', -8.30078125, "NORMAL"),
            (994, "<pad>", 0.0, "CONTROL"),
            (995, "<s>", 0.0, "CONTROL"),
            (996, "</s>", 0.0, "CONTROL"),
        ],
        "sha256": "7b1e32d9ffd31dda36edefc78bf9c5caeba8aac9c51b7d14c405fb7aebb9be37",
    },
    "bytepiece-nfc-refine-em": {
        "vocab_size": 1000,
        "head": [
            (256, " (", -6.0712890625, "NORMAL"),
            (257, " 2", -7.291259765625, "NORMAL"),
            (258, " 3", -7.8348388671875, "NORMAL"),
            (259, " 4", -7.863037109375, "NORMAL"),
            (260, " <", -6.907470703125, "NORMAL"),
            (261, " C", -7.921875, "NORMAL"),
            (262, " F", -7.7294921875, "NORMAL"),
            (263, " S", -8.2828369140625, "NORMAL"),
            (264, " T", -7.8348388671875, "NORMAL"),
            (265, " a", -5.5546875, "NORMAL"),
        ],
        "tail": [
            (992, "                 ", -7.447998046875, "NORMAL"),
            (993, "   ...     print(", -7.5897216796875, "NORMAL"),
            (994, "keyword arguments", -8.645751953125, "NORMAL"),
            (995, " function definition", -8.373779296875, "NORMAL"),
            (996, '     File "<stdin>", line 1', -8.2828369140625, "NORMAL"),
            (997, "<pad>", 0.0, "CONTROL"),
            (998, "<s>", 0.0, "CONTROL"),
            (999, "</s>", 0.0, "CONTROL"),
        ],
        "sha256": "c43cc41cb1dcec85358d38b48601dfb4ec346b5b44fe0bc76453b1337812a148",
    },
    "unigram": {
        "vocab_size": 1000,
        "head": [
            (0, "<unk>", 0.0, "UNKNOWN"),
            (1, "<s>", 0.0, "CONTROL"),
            (2, "</s>", 0.0, "CONTROL"),
            (3, "▁", -3.01171875, "NORMAL"),
            (4, "s", -3.15625, "NORMAL"),
            (5, ".", -3.6640625, "NORMAL"),
            (6, "▁the", -3.76953125, "NORMAL"),
            (7, ",", -3.8046875, "NORMAL"),
            (8, "t", -4.23828125, "NORMAL"),
            (9, "e", -4.30078125, "NORMAL"),
        ],
        "tail": [
            (992, "▁Sequence", -9.71875, "NORMAL"),
            (993, "▁Statements", -9.71875, "NORMAL"),
            (994, "▁advanced", -9.71875, "NORMAL"),
            (995, "▁calculate", -9.71875, "NORMAL"),
            (996, "V", -11.7578125, "NORMAL"),
            (997, "~", -11.7578125, "NORMAL"),
            (998, "W", -11.7578125, "NORMAL"),
            (999, "|", -11.7578125, "NORMAL"),
        ],
        "sha256": "4f64e1ff7670143baeba4ead76165c0a6f64839b00304c9b1793502ef3066c27",
    },
    "unigram-lossless": {
        "vocab_size": 1000,
        "head": [
            (0, "<unk>", 0.0, "UNKNOWN"),
            (1, "<s>", 0.0, "CONTROL"),
            (2, "</s>", 0.0, "CONTROL"),
            (3, "<0x00>", 0.0, "BYTE"),
            (4, "<0x01>", 0.0, "BYTE"),
            (5, "<0x02>", 0.0, "BYTE"),
            (6, "<0x03>", 0.0, "BYTE"),
            (7, "<0x04>", 0.0, "BYTE"),
            (8, "<0x05>", 0.0, "BYTE"),
            (9, "<0x06>", 0.0, "BYTE"),
        ],
        "tail": [
            (992, "▁above", -8.84375, "NORMAL"),
            (993, "False", -8.84375, "NORMAL"),
            (994, "MyClass", -8.84375, "NORMAL"),
            (995, "▁fact", -8.84375, "NORMAL"),
            (996, "<", -8.94921875, "NORMAL"),
            (997, "|", -11.171875, "NORMAL"),
            (998, "V", -11.86328125, "NORMAL"),
            (999, "~", -11.86328125, "NORMAL"),
        ],
        "sha256": "f21203e499c381e89781c3376872afe1aa6f71987867cfcc810f5bd4e5da806a",
    },
    "unigram-byte": {
        "vocab_size": 1000,
        "head": [
            (256, " the", -3.973876953125, "NORMAL"),
            (257, " a", -4.7005615234375, "NORMAL"),
            (258, " to", -4.8521728515625, "NORMAL"),
            (259, " is", -4.919921875, "NORMAL"),
            (260, " >>>", -4.9591064453125, "NORMAL"),
            (261, " of", -4.9791259765625, "NORMAL"),
            (262, "ing", -5.0450439453125, "NORMAL"),
            (263, " in", -5.074951171875, "NORMAL"),
            (264, "re", -5.1947021484375, "NORMAL"),
            (265, " and", -5.2239990234375, "NORMAL"),
        ],
        "tail": [
            (992, " database", -9.513671875, "NORMAL"),
            (993, " rather", -9.513671875, "NORMAL"),
            (994, " escape", -9.513671875, "NORMAL"),
            (995, "range(10", -9.513671875, "NORMAL"),
            (996, "serializing", -9.516845703125, "NORMAL"),
            (997, "described", -9.526123046875, "NORMAL"),
            (998, "<s>", 0.0, "CONTROL"),
            (999, "</s>", 0.0, "CONTROL"),
        ],
        "sha256": "f0461297f4e576b4eb53bea557d1639c4a95a068433ef34ef5f0faad17177e95",
    },
    "bpe-byte-level": {
        "vocab_size": 1000,
        "head": [
            (256, "  ", -0.0, "NORMAL"),
            (257, "in", -1.0, "NORMAL"),
            (258, "th", -2.0, "NORMAL"),
            (259, " a", -3.0, "NORMAL"),
            (260, " th", -4.0, "NORMAL"),
            (261, "on", -5.0, "NORMAL"),
            (262, "re", -6.0, "NORMAL"),
            (263, "    ", -7.0, "NORMAL"),
            (264, "te", -8.0, "NORMAL"),
            (265, "or", -9.0, "NORMAL"),
        ],
        "tail": [
            (992, " If", -736.0, "NORMAL"),
            (993, " should", -737.0, "NORMAL"),
            (994, " enc", -738.0, "NORMAL"),
            (995, " output", -739.0, "NORMAL"),
            (996, " command", -740.0, "NORMAL"),
            (997, "<pad>", 0.0, "CONTROL"),
            (998, "<s>", 0.0, "CONTROL"),
            (999, "</s>", 0.0, "CONTROL"),
        ],
        "sha256": "8fd75fbb8185b4d93d3e7d5d0a8b88e36117fbf91f9b852369c8b5c016f21691",
    },
    "bpe-byte-level-llama3": {
        "vocab_size": 1000,
        "head": [
            (256, "  ", -0.0, "NORMAL"),
            (257, "in", -1.0, "NORMAL"),
            (258, "th", -2.0, "NORMAL"),
            (259, " a", -3.0, "NORMAL"),
            (260, " th", -4.0, "NORMAL"),
            (261, "on", -5.0, "NORMAL"),
            (262, "re", -6.0, "NORMAL"),
            (263, "    ", -7.0, "NORMAL"),
            (264, "te", -8.0, "NORMAL"),
            (265, "or", -9.0, "NORMAL"),
        ],
        "tail": [
            (992, "(f", -736.0, "NORMAL"),
            (993, "40", -737.0, "NORMAL"),
            (994, "Class", -738.0, "NORMAL"),
            (995, "am", -739.0, "NORMAL"),
            (996, " into", -740.0, "NORMAL"),
            (997, "<pad>", 0.0, "CONTROL"),
            (998, "<s>", 0.0, "CONTROL"),
            (999, "</s>", 0.0, "CONTROL"),
        ],
        "sha256": "f534f789df93bbef32c4abf31937679fd85f31d77c455315b95ecf54b264c0fb",
    },
    "bpe-sentencepiece": {
        "vocab_size": 1000,
        "head": [
            (256, b"\xe2\x96", -0.0, "NORMAL"),
            (257, "▁", -1.0, "NORMAL"),
            (258, "▁▁", -2.0, "NORMAL"),
            (259, "in", -3.0, "NORMAL"),
            (260, "th", -4.0, "NORMAL"),
            (261, "▁a", -5.0, "NORMAL"),
            (262, "▁▁▁▁", -6.0, "NORMAL"),
            (263, "▁th", -7.0, "NORMAL"),
            (264, "on", -8.0, "NORMAL"),
            (265, "re", -9.0, "NORMAL"),
        ],
        "tail": [
            (992, "▁output", -736.0, "NORMAL"),
            (993, "▁command", -737.0, "NORMAL"),
            (994, '""', -738.0, "NORMAL"),
            (995, "am", -739.0, "NORMAL"),
            (996, "pe", -740.0, "NORMAL"),
            (997, "<pad>", 0.0, "CONTROL"),
            (998, "<s>", 0.0, "CONTROL"),
            (999, "</s>", 0.0, "CONTROL"),
        ],
        "sha256": "1c8afa498fe0a1f75111246d488d928258d70eb35733d32ad2bd2f1dfc1485d7",
    },
}


@functools.lru_cache(maxsize=1)
def sample_lines() -> tuple[bytes, ...]:
    """The first :data:`SAMPLE_LINES` documents of the sample (one per line)."""
    with gzip.open(SAMPLE, "rb") as handle:
        lines = handle.read().split(b"\n")[:SAMPLE_LINES]
    assert len(lines) == SAMPLE_LINES and all(lines)
    return tuple(lines)


@pytest.fixture(scope="module")
def sample_file(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("pinned-corpus") / "en-head.txt"
    path.write_bytes(b"\n".join(sample_lines()) + b"\n")
    return str(path)


def job_options(variant: Variant, extra: tuple[str, ...], corpus: str, out_dir: pathlib.Path) -> dict:
    """The resolved options of ``shardpiece train`` for the variant, every document trained on."""
    argv = [*variant.flags, *extra, "--input", corpus, "--vocab-size", str(VOCAB_SIZE), "--output",
            str(out_dir / "model.model"), "--work-dir", str(out_dir / "work"), "--holdout-fraction", "0"]
    return resolve_options(build_parser().parse_args(argv))[0]


def train_local(variant: Variant) -> Model:
    """The model of the single-node trainer, with the settings the job makes of the same flags."""
    options = job_options(variant, (), SAMPLE, pathlib.Path("not-written"))  # only its settings are used
    settings = ALGORITHMS[variant.algorithm].settings(options)
    lines = list(sample_lines())
    if variant.algorithm == "bytepiece":
        return train_bytepiece_local(lines, settings)[VOCAB_SIZE]
    if variant.algorithm == "unigram":
        return train_unigram_local(lines, settings[VOCAB_SIZE])
    return train_bpe_local(lines, settings)[VOCAB_SIZE]


def train_with_job(options: dict) -> tuple[Model, dict]:
    """The model the ``shardpiece train`` job writes, and its manifest."""
    manifest = run_train_job(options, progress=lambda message: None)
    return Model.load(manifest["models"][str(VOCAB_SIZE)]["path"]), manifest


def shown(piece: bytes) -> str | bytes:
    try:
        return piece.decode("utf-8")
    except UnicodeDecodeError:
        return piece


def vocabulary_sha256(model: Model) -> str:
    """SHA-256 over the vocab size, every ``(piece, float64 score, type)`` in id order and BPE's merge splits."""
    digest = hashlib.sha256(len(model.pieces).to_bytes(8, "little"))
    scores = model.scores.astype(np.float64).tolist()
    for piece, score, kind in zip(model.pieces, scores, model.types.tolist(), strict=True):
        digest.update(len(piece).to_bytes(8, "little") + piece + struct.pack("<d", score) + bytes([kind]))
    left_lengths = (model.provenance.get("bpe_merges") or {}).get("left_lengths")
    if model.algorithm == "bpe" or left_lengths is not None:
        assert left_lengths is not None, "a BPE model without its merges"
        digest.update(b"bpe_merges" + np.asarray(left_lengths, "<i8").tobytes())
    return digest.hexdigest()


def pinned_form(model: Model) -> dict:
    """What is pinned of a model: vocab size, head and tail entries, SHA-256 of the whole vocabulary."""
    first = 256 if model.pieces[:256] == [bytes([b]) for b in range(256)] else 0

    def entries(ids: range) -> list[tuple]:
        return [(i, shown(model.pieces[i]), float(model.scores[i]), PieceType(int(model.types[i])).name)
                for i in ids]

    size = len(model.pieces)
    return {"vocab_size": size, "head": entries(range(first, min(first + HEAD, size))),
            "tail": entries(range(max(size - TAIL, 0), size)), "sha256": vocabulary_sha256(model)}


def literal(value) -> str:
    """``value`` (text, bytes, number) as Python source, in double quotes where it can be."""
    text = repr(value)
    if isinstance(value, (str, bytes)) and text[-1] == "'" and '"' not in text:
        prefix = "b" if isinstance(value, bytes) else ""
        return f'{prefix}"{text[len(prefix) + 1:-1]}"'
    return text


def entry_source(name: str, observed: dict) -> str:
    """The pinned entry of a model as Python source to paste into :data:`PINNED`."""
    lines = [f"    {literal(name)}: {{", f'        "vocab_size": {observed["vocab_size"]},']
    for part in ("head", "tail"):
        lines.append(f'        "{part}": [')
        lines += [f"            ({', '.join(literal(item) for item in entry)})," for entry in observed[part]]
        lines.append("        ],")
    lines += [f'        "sha256": {literal(observed["sha256"])},', "    },"]
    return "\n".join(lines)


def assert_pinned(name: str, model: Model) -> None:
    observed = pinned_form(model)
    if os.environ.get(PRINT_PINNED):
        print("\n" + entry_source(name, observed))
    assert name in PINNED, f"no pinned vocabulary for {name}: see the module docstring"
    for part in ("head", "tail", "vocab_size", "sha256"):  # the readable parts first
        assert observed[part] == PINNED[name][part], (
            f"{part} of the {name} model moved" + (" (a piece, score, type or BPE merge between head and tail)"
                                                   if part == "sha256" else "")
            + "; if that is meant, regenerate the pinned entry (module docstring)")


def test_pinned_entries_name_the_variants():
    """Every variant has a pinned entry and every entry a variant."""
    assert sorted(PINNED) == sorted(BY_NAME)


@pytest.mark.parametrize("name", [variant.name for variant in VARIANTS])
def test_local_trainer_gives_the_pinned_vocabulary(name):
    """The single-node trainer's model has the pinned vocabulary."""
    assert_pinned(name, train_local(BY_NAME[name]))


@pytest.mark.parametrize("name", [variant.name for variant in VARIANTS])
def test_in_process_train_job_gives_the_pinned_vocabulary(name, sample_file, tmp_path):
    """``shardpiece train`` with its default ``--master auto`` on a small local file (the in-process engine,
    threaded counting, no JVM) gives the pinned vocabulary."""
    options = job_options(BY_NAME[name], ("--threads", "2"), sample_file, tmp_path)
    model, manifest = train_with_job(options)
    assert manifest["engine"] == "in-process" and manifest["spark_master"] == "none"
    assert_pinned(name, model)


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("name", [variant.name for variant in VARIANTS])
def test_spark_train_job_gives_the_pinned_vocabulary(spark, sample_file, tmp_path, name):
    """The ``shardpiece train`` job on the tests' local[2] session gives the pinned vocabulary, read and counted
    the way the variant's Spark flags say; the runtime SQL options the job sets on that session are put back."""
    variant = BY_NAME[name]
    options = job_options(variant, ("--master", "local[2]", *variant.spark_flags), sample_file, tmp_path)
    before = dict(spark.conf.getAll)
    try:
        model, manifest = train_with_job(options)
    finally:
        after = dict(spark.conf.getAll)
        for key in sorted(after.keys() | before.keys()):  # static options (driver, workers) cannot change
            if after.get(key) != before.get(key) and spark.conf.isModifiable(key):
                if key in before:
                    spark.conf.set(key, before[key])
                else:
                    spark.conf.unset(key)
    spark_reader = variant.algorithm == "bytepiece" or "--reader" in variant.spark_flags
    assert manifest["reader"] == ("spark" if spark_reader else "pyarrow in the tasks")
    if variant.algorithm == "unigram":
        assert manifest["details"]["estep"] == ("spark" if "--estep" in variant.spark_flags else "driver")
    assert_pinned(name, model)
