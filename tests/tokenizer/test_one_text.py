"""The per-call encoder (tokenizer/one_text.py, the C entry points of tokenizer/kernels/one_text.py) gives the ids of
the batch encoder for every model type, with and without the SentencePiece normalizer in the same call, on real text,
texts larger than the kept buffers, and text a model cannot represent."""

from __future__ import annotations

import os

import numpy as np
import pytest

from tokenizer import Model, Tokenizer
from tokenizer.errors import InputError
from tokenizer.kernels import _DISABLE_JIT
from tokenizer.one_text import MAX_KEPT_BUFFER
from tests.tokenizer.sample_models import REPO, sample_lines, sample_texts



@pytest.mark.parametrize("kind", ["unigram", "bytepiece", "bpe sentencepiece", "bpe byte_level"])
def test_per_call_ids_equal_the_batch_encoder(tokenizers, kind):
    tok = tokenizers[kind]
    texts = sample_texts(600)[::3]
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


@pytest.mark.skipif(_DISABLE_JIT, reason="no C entry points without the JIT")
@pytest.mark.parametrize("kind", ["unigram", "bpe byte_level"])
def test_the_builtin_and_the_ctypes_call_give_the_same_ids_and_leak_no_reference(tokenizers, kind, monkeypatch):
    import sys

    from tokenizer import one_text

    assert one_text.builtin_calls_work()  # CPython with numpy's layout: what CI runs
    compiled = tokenizers[kind].compiled
    by_builtin = one_text.one_text_encoder(compiled)
    monkeypatch.setattr(one_text, "builtin_calls_work", lambda: False)
    by_ctypes = one_text.one_text_encoder(compiled)
    texts = sample_lines(200) + [b"", b"\xff\xfe", "中".encode() * 3000]
    assert [by_builtin(t, -1, -1) for t in texts] == [by_ctypes(t, -1, -1) for t in texts]
    assert by_builtin(b"ab", 1, 2) == [1] + by_builtin(b"ab", -1, -1) + [2] == by_ctypes(b"ab", 1, 2)
    ids = by_builtin(texts[0], -1, -1)
    assert max(ids) > 256  # not one of the interpreter's own small ints, which everything shares
    item = compiled.shared_ids().objects[max(ids)]
    uses = ids.count(max(ids))
    del ids
    before = sys.getrefcount(item)
    results = [by_builtin(texts[0], -1, -1) for _ in range(100)]
    assert sys.getrefcount(item) == before + 100 * uses
    list_references = sys.getrefcount(results[0])  # (outside the assert, which keeps its operands)
    assert list_references == 2  # the list itself: one reference (plus getrefcount's argument)
    del results
    assert sys.getrefcount(item) == before


@pytest.mark.skipif(_DISABLE_JIT, reason="no C entry points without the JIT")
def test_the_builtin_refuses_wrong_arguments_with_a_python_error(tokenizers):
    from tokenizer import one_text
    from tokenizer.kernels.python_call import HEADER_WORDS, STATUS, WRONG_CALL

    encode = one_text.one_text_encoder(tokenizers["unigram"].compiled)
    assert encode(b"a", -1, -1)  # builds this thread's state
    state = next(cell.cell_contents for cell in encode.__closure__ if type(cell.cell_contents).__name__ == "_local")
    function, header = state.state[1], state.state[2]
    assert type(function).__name__ == "builtin_function_or_method" and len(header) == HEADER_WORDS
    with pytest.raises(TypeError):
        function("a", -1, -1)  # str, not bytes
    with pytest.raises(TypeError):
        function(b"a", "x", -1)
    assert function(b"a") is None and header[STATUS] == WRONG_CALL
    assert function(b"a", -1, -1) == encode(b"a", -1, -1)
    vocab_size = tokenizers["unigram"].model.vocab_size
    for bos, eos in ((vocab_size, -1), (-1, vocab_size + 5)):  # no such piece: an error, not a stray read
        with pytest.raises(ValueError, match="is not an id of this model"):
            encode(b"a", bos, eos)


@pytest.mark.skipif(_DISABLE_JIT, reason="no C entry points without the JIT")
def test_threads_calling_at_once_get_their_own_ids(tokenizers):
    from concurrent.futures import ThreadPoolExecutor

    tok = tokenizers["bpe sentencepiece"]
    texts = sample_texts(400)
    expected = [tok.encode(text) for text in texts]
    with ThreadPoolExecutor(4) as pool:
        for _ in range(3):
            assert list(pool.map(tok.encode, texts)) == expected


@pytest.mark.skipif(_DISABLE_JIT, reason="no compiled kernels without the JIT")
def test_every_call_path_shares_one_compilation_of_the_entries(tokenizers, tmp_path):
    """A fresh process that encodes per call, a list and an Arrow array with the same model compiles (or loads) each
    batch entry and the normalizer kernel for one signature: the per-call entry passes them the batch path's
    argument types (int64 values, never constants; a read-only text), so a model's first use compiles each once."""
    import subprocess
    import sys

    paths = []
    for kind in ("unigram", "bpe byte_level"):
        paths.append(str(tmp_path / f"{kind.replace(' ', '-')}.model"))
        tokenizers[kind].model.save(paths[-1])
    script = (
        "import sys, pyarrow as pa\n"
        "from tokenizer import Tokenizer\n"
        "from tokenizer.kernels import batch, normalize\n"
        "for path in sys.argv[1:]:\n"
        "    tok = Tokenizer.load(path)\n"
        "    texts = ['a text, 一个文本', 'another one']\n"
        "    tok.encode(texts[0]); tok.encode_batch(texts, num_threads=1); tok.encode_batch(pa.array(texts))\n"
        "print(*[len(kernel.signatures) for kernel in (batch.viterbi_entry, batch.ranked_bpe_entry,\n"
        "                                             normalize.normalize_batch_into)])\n")
    done = subprocess.run([sys.executable, "-c", script, *paths], cwd=REPO, env={**os.environ, "PYTHONPATH": REPO},
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split()[-3:] == ["1", "1", "1"]
