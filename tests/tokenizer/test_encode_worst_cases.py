"""The encoder's work is linear in the text on its worst cases, for every model type, without timing anything.

Each model type (SentencePiece-style unigram, BytePiece, SentencePiece-style BPE, byte-level BPE; small models
trained on the shipped sample corpus) encodes one long line of each worst case at n and at 10n bytes in a child
process where the kernels run as plain Python (``SHARDPIECE_DISABLE_JIT=1``), and a trace function counts the
lines executed in ``tokenizer/kernels/``: the work for 10n must stay within 1.5 x ten times the work for n. A
quadratic step (a rescan per merge, a lattice edge per pair of positions) shows up as a factor near 100.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMALL = 600  # bytes; the large text is ten times longer

COUNT_SCRIPT = r"""
import json, random, sys
from tokenizer import Tokenizer
from tokenizer.kernels import KERNELS_DIRECTORY

CASES = {
    "one character": lambda n: b"a" * n,
    "two-character pattern": lambda n: b"ab" * (n // 2),
    "one CJK character": lambda n: "中".encode() * (n // 3),
    "whitespace": lambda n: b" " * n,
    "random bytes": lambda n: random.Random(n).randbytes(n),
    "invalid UTF-8": lambda n: b"\xff\xfe\xc3" * (n // 3),
}
counted = [0]

def local(frame, event, arg):
    if event == "line":
        counted[0] += 1
    return local

def tracer(frame, event, arg):
    return local if frame.f_code.co_filename.startswith(KERNELS_DIRECTORY) else None

small = int(sys.argv[1])
result = {}
for path in sys.argv[2:]:
    tok = Tokenizer.load(path)
    tok.encode("warm up: the model's tables are built outside the count")
    for name, make in CASES.items():
        work = []
        for size in (small, 10 * small):
            text = make(size)
            counted[0] = 0
            sys.settrace(tracer)
            ids = tok.encode(text)
            sys.settrace(None)
            assert tok.decode_bytes(ids) == text or not tok.model.byte_fallback, (path, name)
            work.append(counted[0])
        result.setdefault(path, {})[name] = work
print(json.dumps(result))
"""


def sample_lines() -> list[bytes]:
    lines = []
    for name in ("en", "zh", "ja"):
        with gzip.open(os.path.join(REPO, "data", "sample", f"{name}.txt.gz"), "rb") as handle:
            lines.extend(line for line in handle.read().split(b"\n")[:400] if line)
    return lines


@pytest.fixture(scope="module")
def model_paths(tmp_path_factory) -> dict[str, str]:
    from tokenizer.trainers import bpe, bytepiece, unigram

    lines = sample_lines()
    models = {
        "unigram": unigram.train_unigram_local(lines, unigram.UnigramSettings(vocab_size=3000)),
        "bytepiece": bytepiece.train_bytepiece_local(
            lines, bytepiece.TrainSettings(vocab_sizes=(3000,), min_count=2))[3000],
        "bpe sentencepiece": bpe.train_bpe_local(
            lines, bpe.BpeSettings(vocab_sizes=(3000,), pretokenizer="sentencepiece"))[3000],
        "bpe byte_level": bpe.train_bpe_local(lines, bpe.BpeSettings(vocab_sizes=(3000,)))[3000],
    }
    folder = tmp_path_factory.mktemp("worst-case-models")
    paths = {}
    for name, model in models.items():
        paths[name] = str(folder / (name.replace(" ", "-") + ".model"))
        model.save(paths[name])
    return paths


def test_work_grows_linearly_on_worst_cases_for_every_model_type(model_paths):
    env = {**os.environ, "SHARDPIECE_DISABLE_JIT": "1", "PYTHONPATH": REPO}
    done = subprocess.run([sys.executable, "-c", COUNT_SCRIPT, str(SMALL), *model_paths.values()], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    work = json.loads(done.stdout.strip().splitlines()[-1])
    failures = []
    for name, path in model_paths.items():
        for case, (small, large) in work[path].items():
            assert small > SMALL // 3, (name, case, small)  # the trace did count the kernels' work
            if large > 1.5 * 10 * small:
                failures.append(f"{name}, {case}: {small} lines at {SMALL} bytes, {large} at {10 * SMALL}")
    assert not failures, "superlinear work:\n" + "\n".join(failures)
