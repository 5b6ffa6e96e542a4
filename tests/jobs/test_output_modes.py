"""Every file that ``train``, ``export`` and ``tokenize`` write gets the mode ``open()`` would give it: 0644 under
umask 022 (readable by another account, a Spark executor running as another user), 0600 under 077.

The commands run in a child process started under the umask, so that its Spark JVM and Python workers (which
write the tokenize shards) inherit it, as they would on a user's machine.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = textwrap.dedent("""
    import os, random, sys
    from jobs.cli import main

    out = sys.argv[1]
    rng = random.Random(1)
    words = ["mode", "file", "umask", "読む", "数据", "42"]
    os.makedirs(os.path.join(out, "in"))
    with open(os.path.join(out, "in", "corpus.txt"), "w", encoding="utf-8") as handle:
        for _ in range(300):
            handle.write(" ".join(rng.choice(words) for _ in range(rng.randint(1, 8))) + "\\n")
    corpus = os.path.join(out, "in", "corpus.txt")
    common = ["--input", corpus, "--master", "local[1]", "--quiet", "--holdout-fraction", "0.1"]
    runs = [["--algorithm", "bytepiece", "--vocab-size", "300", "--output", f"{out}/train/bp.model"],
            ["--algorithm", "unigram", "--unigram-defaults", "sentencepiece", "--vocab-size", "40", "60",
             "--output", f"{out}/train/uni"],
            ["--algorithm", "bpe", "--vocab-size", "300", "--output", f"{out}/train/bpe.model"]]
    for argv in runs:
        assert main(["train", *argv, *common]) == 0, argv
    assert main(["export", "--model", f"{out}/train/uni/unigram-60.model", "--to", "sentencepiece",
                 f"{out}/export/uni.model"]) == 0
    assert main(["export", "--model", f"{out}/train/bpe.model", "--to", "huggingface", f"{out}/export/hf/"]) == 0
    for form in ("parquet", "megatron", "npy"):
        assert main(["tokenize", "--model", f"{out}/train/bp.model", "--input", corpus, "--output",
                     f"{out}/tokens-{form}", "--output-format", form, "--master", "local[1]"]) == 0, form
    assert main(["tokenize", "--merge-megatron", f"{out}/tokens-megatron", "--output",
                 f"{out}/merged/all"]) == 0
""")


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_every_output_file_gets_the_umask_mode(tmp_path, umask):
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1",
               PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path)], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=900, preexec_fn=lambda: os.umask(umask))
    assert done.returncode == 0, done.stderr[-3000:]
    want = 0o666 & ~umask
    found: dict[str, int] = {}
    for root, _, files in os.walk(tmp_path):
        for name in files:
            path = os.path.join(root, name)
            found[os.path.relpath(path, tmp_path)] = stat.S_IMODE(os.stat(path).st_mode)
    wrong = {path: oct(mode) for path, mode in found.items() if mode != want}
    assert not wrong, f"files not {oct(want)}: {wrong}"
    kinds = {  # every kind of output is among the files checked
        "model": "train/bp.model", "models": "train/uni/unigram-40.model", "manifest": "train/bpe.model.manifest.json",
        "config": "train/uni/config.yaml", "sentencepiece export": "export/uni.model",
        "tokenizer.json": "export/hf/tokenizer.json", "job manifest": "tokens-parquet/_manifest.parquet",
        "merged megatron": "merged/all.idx"}
    assert all(path in found for path in kinds.values()), sorted(found)
    suffixes = {os.path.splitext(path)[1] for path in found}
    assert {".parquet", ".bin", ".idx", ".npy", ".npz"} <= suffixes  # shards and stage files
