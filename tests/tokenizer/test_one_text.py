"""The per-call encoder (tokenizer/one_text.py, the C entry points of tokenizer/kernels/one_text.py) gives the ids of
the batch encoder for every model type, with and without the SentencePiece normalizer in the same call, on real text,
texts larger than the kept buffers, and text a model cannot represent."""

from __future__ import annotations

import gzip
import os

import numpy as np
import pytest

from tokenizer import Model, Tokenizer
from tokenizer.errors import InputError
from tokenizer.kernels import _DISABLE_JIT
from tokenizer.one_text import MAX_KEPT_BUFFER

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def sample_lines(count: int) -> list[bytes]:
    lines = []
    for name in ("en", "zh", "ja"):
        with gzip.open(os.path.join(REPO, "data", "sample", f"{name}.txt.gz"), "rb") as handle:
            lines.extend(line for line in handle.read().split(b"\n")[:count] if line)
    return lines


@pytest.fixture(scope="module")
def tokenizers() -> dict[str, Tokenizer]:
    from tokenizer.trainers import bpe, bytepiece, unigram

    lines = sample_lines(300)
    return {
        "unigram": Tokenizer(unigram.train_unigram_local(lines, unigram.UnigramSettings(vocab_size=2000))),
        "bytepiece": Tokenizer(bytepiece.train_bytepiece_local(
            lines, bytepiece.TrainSettings(vocab_sizes=(2000,), min_count=2))[2000]),
        "bpe sentencepiece": Tokenizer(bpe.train_bpe_local(
            lines, bpe.BpeSettings(vocab_sizes=(2000,), pretokenizer="sentencepiece"))[2000]),
        "bpe byte_level": Tokenizer(bpe.train_bpe_local(lines, bpe.BpeSettings(vocab_sizes=(2000,)))[2000]),
    }


@pytest.mark.parametrize("kind", ["unigram", "bytepiece", "bpe sentencepiece", "bpe byte_level"])
def test_per_call_ids_equal_the_batch_encoder(tokenizers, kind):
    tok = tokenizers[kind]
    texts = [line.decode("utf-8", "replace") for line in sample_lines(600)[::3]]
    texts += ["", " ", "  a  b  ", "中" * 5000, "a" * (MAX_KEPT_BUFFER + 10), "x", "ﬁ①\ufdfa" * 40,
              "a\x00b\x00", "\x00"]  # NUL bytes pass by length, not as C string ends
    for bos, eos in ((False, False), (True, True)):
        expected = tok.encode_batch(texts, num_threads=1, add_bos=bos, add_eos=eos)
        assert [tok.encode(text, add_bos=bos, add_eos=eos) for text in texts] == expected


@pytest.mark.skipif(_DISABLE_JIT, reason="no C entry points without the JIT")
def test_the_per_call_path_is_the_c_entry_point(tokenizers):
    from tokenizer.kernels.one_text import one_text_entry

    for tok in tokenizers.values():
        compiled = tok.compiled
        units, scores = compiled.record[:2]
        wide = compiled.score_dtype if compiled.rule == 0 else "int64"
        assert one_text_entry(compiled.rule, units.dtype, scores.dtype, wide).address > 0


@pytest.mark.parametrize("algorithm", ["unigram", "bpe"])
def test_text_the_model_cannot_represent_is_refused_like_the_batch(algorithm):
    model = Model([b"<s>", b"a"], np.array([0.0, -1.0], np.float32), np.array([3, 1], np.int8), algorithm=algorithm)
    tok = Tokenizer(model)  # no <unk> piece, no byte fallback: only "a" can be encoded
    assert tok.encode("aa") == [1, 1]
    with pytest.raises(InputError) as batch_error:
        tok.encode_batch(["ab"], num_threads=1)
    with pytest.raises(InputError) as call_error:
        tok.encode("ab")
    assert str(call_error.value) == str(batch_error.value)


@pytest.mark.skipif(_DISABLE_JIT, reason="no C entry points without the JIT")
def test_a_new_process_loads_the_c_entry_point_from_the_disk_cache():
    """The entry point is built in a closure; Numba keys a closure's cache entry by its cell contents, so they must
    pickle the same in every process (a compiled function as a cell would make every process compile again)."""
    import subprocess
    import sys

    script = ("import numpy as np; from tokenizer.kernels.one_text import one_text_entry; "
              "print(one_text_entry(0, np.int32, np.float32, np.float32).cache_hits)")
    env = {**os.environ, "PYTHONPATH": REPO}
    runs = [subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True,
                           timeout=600) for _ in range(2)]
    assert all(run.returncode == 0 for run in runs), runs[-1].stderr[-2000:]
    assert runs[1].stdout.split()[-1] == "1"  # the first run compiled it at most; the second found it on disk
