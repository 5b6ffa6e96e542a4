"""Bad input and bad conditions: each gives a clear error that says how to fix it, or is handled correctly.

One test (at least) per row of the "Failure modes" table (docs/failure-modes.md). The huge-line test uses a
generated line of ``$SHARDPIECE_HUGE_LINE_MB`` MB (default 2, so CI stays fast); BENCHMARKS.md gives the by-hand
command for 300 MB.
"""

from __future__ import annotations

import errno
import gzip
import json
import os
import random

import pytest

from jobs.train import main as train_main
from pipelines.train.bytepiece import multiset_fingerprint
from pipelines.tokenize.commit import OutputDirectory
from tokenizer.errors import OutputWriteError
from tokenizer.files import write_atomic
from tokenizer.core import Tokenizer
from tokenizer.errors import ModelFileError
from tokenizer.model import Model
from tokenizer.trainers.bytepiece import TrainSettings, train_bytepiece_local

HUGE_LINE_MB = float(os.environ.get("SHARDPIECE_HUGE_LINE_MB", "2"))


def words_corpus(n: int = 300, seed: int = 11) -> list[bytes]:
    rng = random.Random(seed)
    words = ["disk", "full", "line", "bytes", "模型", "テスト", "7", "and"]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(1, 8))).encode() for _ in range(n)]


def train(tmp_path, inputs, *extra: str, output: str = "m.model") -> int:
    argv = ["train", "--input", *[str(p) for p in inputs], "--vocab-size", "300", "--output",
            str(tmp_path / output), "--min-count", "2", "--order", "4", "--holdout-fraction", "0", "--quiet",
            "--work-dir", str(tmp_path / "work"), *extra]
    return train_main(argv)


def reference(lines, **settings) -> bytes:
    options = dict(order=4, min_count=2, vocab_sizes=(300,))
    options.update(settings)
    model = train_bytepiece_local(lines, TrainSettings(**options),
                                  provenance={"corpus_fingerprint": multiset_fingerprint(lines)})
    return model[300].to_bytes()


# ------------------------------------------------------------------------------------------------ empty input
@pytest.mark.spark
@pytest.mark.parametrize("content", [b"", b"\n\n\n\n"], ids=["empty-file", "only-empty-lines"])
def test_corpus_without_text_is_a_clear_error(spark, tmp_path, capsys, content):
    (tmp_path / "corpus.txt").write_bytes(content)
    assert train(tmp_path, [tmp_path / "corpus.txt"]) == 2
    err = capsys.readouterr().err
    assert "the corpus has no text" in err and "check --input and --text-column" in err
    assert not (tmp_path / "m.model").exists()


@pytest.mark.spark
def test_input_matching_nothing_is_a_clear_error(spark, tmp_path, capsys):
    assert train(tmp_path, [tmp_path / "missing-*.txt"]) == 2
    assert "matches no file: check the path" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------ before the engine
CHECKS_BEFORE_START = r"""
import json, sys
from jobs.train import main
out = {}
for name, argv in json.loads(sys.argv[1]).items():
    out[name] = main(argv)
out["spark_modules"] = [m for m in sys.modules if m.startswith(("pyspark", "py4j"))]
print("RESULT " + json.dumps(out))
"""


def test_paths_are_checked_before_spark_starts(tmp_path):
    """Each bad path is one exit-2 line naming it and the fix, found before any engine starts: with --master
    local[2] given, no Spark module is ever imported (a fresh interpreter runs every case)."""
    import json
    import subprocess
    import sys

    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(b"some text\n" * 50)
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "a-dir").mkdir()
    (tmp_path / "a-file").write_bytes(b"x")

    def argv(source, output, *extra):
        return ["train", "--input", str(source), "--vocab-size", "300", "--output", str(output), "--quiet",
                "--master", "local[2]", *extra]

    cases = {
        "output is a directory": argv(corpus, tmp_path / "a-dir"),
        "output inside a file": argv(corpus, tmp_path / "a-file" / "m.model"),
        "work dir inside a file": argv(corpus, tmp_path / "m.model", "--work-dir", str(tmp_path / "a-file" / "w")),
        "missing input": argv(tmp_path / "missing-*.txt", tmp_path / "m.model"),
        "empty input": argv(tmp_path / "empty.txt", tmp_path / "m.model"),
        "output on a scheme": argv(corpus, "gs://bucket/m.model"),
        "work dir on a scheme": argv(corpus, tmp_path / "m.model", "--work-dir", "s3://bucket/work"),
    }
    result = subprocess.run([sys.executable, "-c", CHECKS_BEFORE_START, json.dumps(cases)], capture_output=True,
                            text=True, timeout=300)
    out = json.loads(result.stdout.split("RESULT ", 1)[1])
    assert out.pop("spark_modules") == []
    assert out == {name: 2 for name in cases}
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == len(cases)  # one line each
    expected = ["is a directory: give a file path", "a-file is a file, not a directory",
                "a-file is a file, not a directory", "matches no file: check the path", "the corpus has no text",
                "--output gs://bucket/m.model: the model is written to a local path",
                "--work-dir s3://bucket/work: the work directory is written to a local path"]
    for line, text in zip(lines, expected):
        assert text in line, line
    assert not (tmp_path / "m.model").exists()


def test_tokenize_paths_are_checked_before_spark_starts(tmp_path):
    """``tokenize`` with an output that is a file, an output under a file, a local input matching nothing, a missing
    or corrupt model: one exit-2 line each, and no Spark module imported (no JVM)."""
    import json
    import subprocess
    import sys

    from tokenizer import Model

    model = tmp_path / "m.model"
    Model.byte_level([b"ab"], [-1.0]).save(str(model))
    (tmp_path / "in.txt").write_text("abab\n")
    (tmp_path / "a-file").write_bytes(b"x")
    corrupt = tmp_path / "corrupt.model"
    corrupt.write_bytes(model.read_bytes()[:-3])
    script = CHECKS_BEFORE_START.replace("from jobs.train import main", "from jobs.tokenize import main")

    def argv(source, output, model_path=model):
        return ["tokenize", "--model", str(model_path), "--input", str(source), "--output", str(output)]

    cases = {"output is a file": argv(tmp_path / "in.txt", tmp_path / "a-file"),
             "output under a file": argv(tmp_path / "in.txt", tmp_path / "a-file" / "out"),
             "missing input": argv(tmp_path / "missing-*.txt", tmp_path / "out"),
             "missing model": argv(tmp_path / "in.txt", tmp_path / "out", tmp_path / "no.model"),
             "corrupt model": argv(tmp_path / "in.txt", tmp_path / "out", corrupt),
             "output on a scheme": argv(tmp_path / "in.txt", "gs://bucket/out")}
    result = subprocess.run([sys.executable, "-c", script, json.dumps(cases)], capture_output=True, text=True,
                            timeout=300)
    out = json.loads(result.stdout.split("RESULT ", 1)[1])
    assert out.pop("spark_modules") == [] and out == {name: 2 for name in cases}
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    expected = ["is a file: tokenize writes a directory", "a-file is a file, not a directory", "matches no file",
                "no.model: cannot read it (No such file or directory)", "corrupt.model",
                "--output gs://bucket/out: the tokenize output directory is written to a local path"]
    assert len(lines) == len(cases) and all(text in line for line, text in zip(lines, expected)), lines
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------------ vocab size
def test_vocab_size_below_the_byte_alphabet_fails_before_spark(tmp_path, capsys):
    (tmp_path / "corpus.txt").write_bytes(b"some text\n")
    code = train_main(["train", "--input", str(tmp_path / "corpus.txt"), "--vocab-size", "200", "--output",
                       str(tmp_path / "m.model")])
    assert code == 2
    assert "vocab size 200 is below the 259 ids" in capsys.readouterr().err


@pytest.mark.spark
def test_vocab_size_larger_than_the_corpus_offers_gives_the_pieces_there_are(spark, tmp_path):
    lines = [b"abab abab", b"abab"] * 20
    (tmp_path / "corpus.txt").write_bytes(b"\n".join(lines) + b"\n")
    argv = ["train", "--input", str(tmp_path / "corpus.txt"), "--vocab-size", "5000", "--output",
            str(tmp_path / "m.model"), "--min-count", "2", "--order", "4", "--holdout-fraction", "0", "--quiet",
            "--work-dir", str(tmp_path / "work")]
    assert train_main(argv) == 0
    model = Model.load(tmp_path / "m.model")
    assert 259 < model.vocab_size < 5000
    manifest = json.loads((tmp_path / "m.model.manifest.json").read_text())
    assert manifest["models"]["5000"]["vocab_size"] == model.vocab_size  # the manifest says what was delivered


# ------------------------------------------------------------------------------------------------ unreadable input
@pytest.mark.spark
def test_unreadable_input_file_names_it(spark, tmp_path, capsys, monkeypatch):
    """Root reads any file, so the permission error is simulated at the one place the driver opens inputs."""
    import pipelines.manifest

    (tmp_path / "corpus.txt").write_bytes(b"\n".join(words_corpus(20)) + b"\n")

    def denied(path):
        raise PermissionError(errno.EACCES, "Permission denied", path)

    monkeypatch.setattr(pipelines.manifest, "_open_input", denied)
    assert train(tmp_path, [tmp_path / "corpus.txt"]) == 2
    err = capsys.readouterr().err
    assert "cannot read input file" in err and "corpus.txt: Permission denied" in err
    assert "fix its permissions" in err


@pytest.mark.spark
def test_corrupt_compressed_input_fails_naming_the_problem(spark, tmp_path, capsys):
    blob = gzip.compress(b"\n".join(words_corpus(400)) + b"\n")
    (tmp_path / "corpus.txt.gz").write_bytes(blob[: len(blob) // 2])  # truncated in transfer
    for engine, reason in ((["--master", "local[2]"], "Unexpected end of input stream"),  # found in a task
                           ([], "Compressed file ended before the end-of-stream marker")):  # in this process
        assert train(tmp_path, [tmp_path / "corpus.txt.gz"], *engine) == 2  # the input must be fixed
        err = capsys.readouterr().err
        assert "cannot read input file" in err and "corpus.txt.gz" in err and reason in err
        assert "re-create it, or remove it from --input" in err
        assert not (tmp_path / "m.model").exists()


@pytest.mark.spark
def test_corrupt_zstd_input_says_how_to_fix_it(spark, tmp_path, capsys):
    (tmp_path / "corpus.txt.zst").write_bytes(b"(\xb5/\xfd this is not zstd data")
    assert train(tmp_path, [tmp_path / "corpus.txt.zst"]) == 2
    assert "not a valid zstd file" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------ binary garbage
@pytest.mark.spark
def test_binary_garbage_trains_losslessly_with_identity_and_is_refused_by_nfc(spark, tmp_path, capsys):
    rng = random.Random(5)
    garbage = bytes(rng.randrange(256) for _ in range(30_000))
    (tmp_path / "garbage.bin").write_bytes(garbage)
    lines = [line for line in garbage.split(b"\n") if line]
    assert train(tmp_path, [tmp_path / "garbage.bin"]) == 0
    assert (tmp_path / "m.model").read_bytes() == reference(lines)
    tokenizer = Tokenizer.load(str(tmp_path / "m.model"))
    assert all(tokenizer.decode_bytes(tokenizer.encode(line)) == line for line in lines)

    assert train(tmp_path, [tmp_path / "garbage.bin"], "--normalization", "nfc", output="nfc.model") == 2
    err = capsys.readouterr().err
    assert "not valid UTF-8" in err and "--normalization identity" in err


# ------------------------------------------------------------------------------------------------ one huge line
@pytest.mark.spark
@pytest.mark.slow
def test_a_single_huge_line_trains_like_the_local_reference(spark, tmp_path):
    """One document of HUGE_LINE_MB MB (no newline at all): chunked at 10,000 characters, counted exactly."""
    rng = random.Random(8)
    vocabulary = [bytes(rng.randrange(97, 123) for _ in range(rng.randint(2, 7))) for _ in range(300)]
    segments = [b" ".join(rng.choices(vocabulary, k=60_000)) for _ in range(4)]  # ~300 KB each
    target = int(HUGE_LINE_MB * (1 << 20))
    count = max(1, target // (len(segments[0]) + 1))
    line = b" ".join(rng.choice(segments) for _ in range(count))  # segments in random order: fast to build
    (tmp_path / "huge.txt").write_bytes(line)
    if HUGE_LINE_MB <= 64:
        assert train(tmp_path, [tmp_path / "huge.txt"], "--min-count", "8") == 0
    else:  # the shared test session has a 1 GB driver; a line of hundreds of MB needs a few GB (run by hand)
        import subprocess
        import sys

        done = subprocess.run(
            [sys.executable, "-m", "jobs.cli", "train", "--input", str(tmp_path / "huge.txt"), "--vocab-size", "300",
             "--output", str(tmp_path / "m.model"), "--min-count", "8", "--order", "4", "--holdout-fraction", "0",
             "--master", "local[2]", "--driver-memory", os.environ.get("SHARDPIECE_HUGE_LINE_DRIVER_MEMORY", "6g"),
             "--work-dir", str(tmp_path / "work")], capture_output=True, text=True)
        print(done.stdout)
        assert done.returncode == 0, done.stderr[-3000:]
    manifest = json.loads((tmp_path / "m.model.manifest.json").read_text())
    assert manifest["read"]["documents"] == 1 and manifest["read"]["document_bytes"] == len(line)
    if HUGE_LINE_MB <= 16:
        assert (tmp_path / "m.model").read_bytes() == reference([line], min_count=8)
    tokenizer = Tokenizer.load(str(tmp_path / "m.model"))
    sample = line[:200_000]
    assert tokenizer.decode_bytes(tokenizer.encode(sample)) == sample


# ------------------------------------------------------------------------------------------------ corrupt model
def corrupt_models(tmp_path) -> dict[str, str]:
    good = train_bytepiece_local(words_corpus(100), TrainSettings(min_count=2, vocab_sizes=(300,)))[300].to_bytes()
    flipped = bytearray(good)
    flipped[len(good) // 2] ^= 0xFF
    paths = {}
    for name, data in [("flipped", bytes(flipped)), ("truncated", good[:40]), ("text", b"hello, not a model\n")]:
        path = tmp_path / f"{name}.model"
        path.write_bytes(data)
        paths[name] = str(path)
    return paths


def test_corrupt_model_files_are_refused_with_the_reason(tmp_path, capsys):
    from jobs.encode import main as encode_main

    paths = corrupt_models(tmp_path)
    with pytest.raises(ModelFileError, match="checksum mismatch: the file is truncated or corrupted"):
        Model.load(paths["flipped"])
    with pytest.raises(ModelFileError, match="too short to be a shardpiece model"):
        Model.load(paths["truncated"])
    (tmp_path / "in.txt").write_text("hello\n")
    for name, path in paths.items():
        assert encode_main(["encode", "--model", path, "--input", str(tmp_path / "in.txt")]) == 2, name
        err = capsys.readouterr().err
        assert path in err, (name, err)
    manifest = tmp_path / "m.model.manifest.json"  # the file beside a model, given by mistake
    manifest.write_text(json.dumps({"command": "shardpiece train", "models": {"300": {"path": "/models/m.model"}}}))
    assert encode_main(["encode", "--model", str(manifest), "--input", str(tmp_path / "in.txt")]) == 2
    assert "is the manifest of a 'shardpiece train' run, not a model: give the model file it names " \
           "(/models/m.model)" in capsys.readouterr().err


@pytest.mark.spark
def test_tokenize_job_refuses_a_corrupt_model(spark, tmp_path, capsys):
    from jobs.tokenize import main as tokenize_main

    paths = corrupt_models(tmp_path)
    (tmp_path / "docs.txt").write_text("one\ntwo\n")
    code = tokenize_main(["tokenize", "--model", paths["flipped"], "--input", str(tmp_path / "docs.txt"),
                          "--output", str(tmp_path / "tokens")])
    assert code == 2  # the model file must be fixed, as for every command
    assert "checksum mismatch" in capsys.readouterr().err
    assert not OutputDirectory(tmp_path / "tokens").is_complete()


# ------------------------------------------------------------------------------------------------ full disk
def fill_disk(monkeypatch, full_dir) -> None:
    """Every fsync of a file under ``full_dir`` fails with ENOSPC, as on a full filesystem (data written to the
    page cache is refused when flushed); files elsewhere are written normally."""
    real_fsync = os.fsync
    full_dir = os.path.realpath(full_dir)

    def fsync(fd):
        if os.path.realpath(os.readlink(f"/proc/self/fd/{fd}")).startswith(full_dir + os.sep):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)


def test_write_file_atomic_on_a_full_disk_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "full" / "m.model"
    target.parent.mkdir()
    target.write_bytes(b"old model")
    fill_disk(monkeypatch, tmp_path / "full")
    with pytest.raises(OutputWriteError, match="No space left on device; free space there") as caught:
        write_atomic(str(target), b"new model", what="model file")
    assert caught.value.errno == errno.ENOSPC and str(target) in str(caught.value)
    assert target.read_bytes() == b"old model" and os.listdir(target.parent) == ["m.model"]


@pytest.mark.spark
def test_full_output_disk_fails_cleanly_and_a_rerun_resumes(spark, tmp_path, capsys, monkeypatch):
    lines = words_corpus()
    (tmp_path / "corpus.txt").write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "full"
    out.mkdir()
    (out / "m.model").write_bytes(b"the previous model")
    with monkeypatch.context() as patch:
        fill_disk(patch, out)
        assert train(tmp_path, [tmp_path / "corpus.txt"], output="full/m.model") == 1  # the run failed
    err = capsys.readouterr().err
    assert "cannot write the model file" in err and "No space left on device" in err
    assert (out / "m.model").read_bytes() == b"the previous model"
    assert sorted(os.listdir(out)) == ["m.model"]  # no temporary file left behind
    # Space freed: the rerun loads every stage from the work directory and only writes.
    assert train(tmp_path, [tmp_path / "corpus.txt"], output="full/m.model") == 0
    assert (out / "m.model").read_bytes() == reference(lines)
    manifest = json.loads((out / "m.model.manifest.json").read_text())
    assert manifest["work_dir"]["computed_stages"] == []


@pytest.mark.spark
def test_full_work_dir_disk_fails_naming_the_file(spark, tmp_path, capsys, monkeypatch):
    (tmp_path / "corpus.txt").write_bytes(b"\n".join(words_corpus(50)) + b"\n")
    (tmp_path / "work").mkdir()
    fill_disk(monkeypatch, tmp_path / "work")
    assert train(tmp_path, [tmp_path / "corpus.txt"]) == 1
    err = capsys.readouterr().err
    assert "No space left on device" in err and str(tmp_path / "work") in err
    assert not (tmp_path / "m.model").exists()
