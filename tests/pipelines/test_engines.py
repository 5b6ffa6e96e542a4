"""The two training engines give the same model bytes: every algorithm trained by ``shardpiece train`` in this
process (``--master auto`` on a small local input, no JVM) from text, JSONL and Parquet holding the same documents
equals the Spark engine's model from the text file, held-out documents included; and the automatic choice says
which engine ran and why."""

from __future__ import annotations

import hashlib
import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines.train.engine import Choice, choose_engine

ALGORITHMS = {  # name: flags (small vocabularies, settings that make every stage run)
    "bytepiece": ["--algorithm", "bytepiece", "--min-count", "2", "--order", "4", "--vocab-size", "400"],
    "unigram": ["--algorithm", "unigram", "--vocab-size", "400"],  # lossless: byte fallback's 256 pieces too
    "bpe byte-level": ["--algorithm", "bpe", "--vocab-size", "400"],
    "bpe superword": ["--algorithm", "bpe", "--vocab-size", "400", "--superword-transition", "0.8"],
    "bpe sentencepiece": ["--algorithm", "bpe", "--pretokenizer", "sentencepiece", "--vocab-size", "300"],
}


def corpus_lines(n: int = 2500, seed: int = 5) -> list[str]:
    rng = random.Random(seed)
    words = ["token", "piece", "engine", "spark", "the", "of", "data", "東京", "日本語", "数据", "café", "42",
             "x=1;"]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(1, 10))) for _ in range(n)]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, str]:
    """The same documents as a text file, a JSONL file and a Parquet file (two row groups)."""
    root = tmp_path_factory.mktemp("engines")
    lines = corpus_lines()
    (root / "c.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "c.jsonl").write_text("".join(json.dumps({"id": i, "text": line}, ensure_ascii=False) + "\n"
                                          for i, line in enumerate(lines)), encoding="utf-8")
    pq.write_table(pa.table({"text": lines}), root / "c.parquet", row_group_size=1000)
    return {"text": str(root / "c.txt"), "jsonl": str(root / "c.jsonl"), "parquet": str(root / "c.parquet")}


def train(flags: list[str], source: str, out, *extra: str) -> tuple[str, dict]:
    from jobs.train import main

    model = out / "m.model"
    argv = ["train", *flags, "--input", source, "--output", str(model), "--holdout-fraction", "0.1", "--quiet",
            "--work-dir", str(out / "work"), *extra]
    assert main(argv) == 0
    manifest = json.loads((out / "m.model.manifest.json").read_text())
    return hashlib.sha256(model.read_bytes()).hexdigest(), manifest


@pytest.mark.spark
@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_in_process_models_equal_spark_for_every_input_format(spark, inputs, tmp_path, name):
    flags = ALGORITHMS[name]
    spark_hash, spark_manifest = train(flags, inputs["text"], tmp_path / "spark", "--master", "local[2]")
    assert spark_manifest["engine"] == "spark" and spark_manifest["engine_reason"] == "--master local[2]"
    for input_format, source in inputs.items():
        model_hash, manifest = train(flags, source, tmp_path / input_format, "--threads", "2")
        assert manifest["engine"] == "in-process" and manifest["spark_master"] == "none", input_format
        assert "at most --in-process-max-mib 256" in manifest["engine_reason"]
        assert manifest["reader"] == "pyarrow in this process"
        assert model_hash == spark_hash, (name, input_format)
        assert manifest["training_documents"] == spark_manifest["training_documents"]
        assert manifest["read"]["documents"] == 2500


def test_automatic_choice_by_size_and_place():
    small = {"master": "auto", "input": ["a.txt"], "in_process_max_mib": 1}
    assert choose_engine(small, lambda inputs: 1 << 20).engine == "in-process"
    assert choose_engine(small, lambda inputs: (1 << 20) + 1) == Choice(
        "spark", "local input of 1.0 MiB, above --in-process-max-mib 1")
    assert choose_engine(small, lambda inputs: None).reason.startswith("an input is not a local file")
    assert choose_engine({**small, "master": "none"}, lambda inputs: None) == Choice("in-process", "--master none")
    assert choose_engine({**small, "master": "local[2]"}, lambda inputs: 0) == Choice("spark", "--master local[2]")
    assert choose_engine({**small, "partitions": 4}, lambda inputs: 0).engine == "spark"
    assert choose_engine({**small, "reader": "spark"}, lambda inputs: 0).engine == "spark"
    assert choose_engine({**small, "estep": "spark"}, lambda inputs: 0) == Choice("spark", "--estep spark")


def test_in_process_training_starts_no_jvm(tmp_path):
    """A small local corpus trains with no Spark module imported and no JVM started (a fresh interpreter)."""
    import subprocess
    import sys

    (tmp_path / "c.txt").write_text("\n".join(corpus_lines(300)) + "\n", encoding="utf-8")
    script = (
        "import sys\n"
        "from jobs.train import main\n"
        f"code = main(['train', '--algorithm', 'unigram', '--input', {str(tmp_path / 'c.txt')!r}, '--vocab-size', "
        f"'400', '--output', {str(tmp_path / 'm.model')!r}, '--quiet'])\n"
        "assert code == 0, code\n"
        "loaded = [m for m in sys.modules if m.startswith(('pyspark', 'py4j'))]\n"
        "assert not loaded, loaded\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "m.model").stat().st_size > 0
