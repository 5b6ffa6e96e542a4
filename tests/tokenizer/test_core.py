"""Tokenizer API: loading by content, pickling, specials, errors that say what to do."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenizer import InputError, Model, ModelFileError, PieceType, Tokenizer
from tokenizer.core import UNBUILT, InvalidIdError


@pytest.fixture(scope="module")
def tok():
    return Tokenizer(Model.byte_level([b"ab", b"abc"], [-1.0, -1.5], specials=("<s>", "</s>")))


def test_hand_example(tok):
    assert tok.encode("abcab") == [257, 256]
    assert tok.encode(b"abcab", add_bos=True, add_eos=True) == [tok.bos_id, 257, 256, tok.eos_id]
    assert tok.encode_batch(["abcab", "ab"], add_bos=True) == [[tok.bos_id, 257, 256], [tok.bos_id, 256]]
    assert tok.decode([tok.bos_id, 257, 256, tok.eos_id]) == "abcab"
    assert tok.vocab_size == 260 and tok.id_to_piece(257) == b"abc"
    assert tok.piece_to_id(b"abc") == 257 and tok.piece_to_id("zz") is None


def test_pickles_as_its_model_and_loads_by_content(tok, tmp_path):
    tok.encode("x")  # build the compiled arrays
    clone = pickle.loads(pickle.dumps(tok))
    assert clone._compiled is UNBUILT and clone.model == tok.model
    assert len(pickle.dumps(tok)) < len(tok.model.to_bytes()) + 2000
    tok.save(tmp_path / "m.bin")
    assert Tokenizer.load(tmp_path / "m.bin").encode("abcab") == [257, 256]


def test_decode_bytes_of_each_piece_type():
    pieces = [b"<unk>", b"<s>", b"a", b"<0xFF>", b"xy", b"zz"]
    types = [PieceType.UNKNOWN, PieceType.CONTROL, PieceType.NORMAL, PieceType.BYTE, PieceType.USER_DEFINED,
             PieceType.UNUSED]
    model = Model(pieces, np.zeros(6, np.float32), np.array(types, np.int8), unk_id=0, bos_id=1)
    tok = Tokenizer(model)
    assert tok.decode_bytes([0, 1, 2, 3, 4, 5]) == b"a\xffxyzz"
    assert tok.decode([2, 3]) == "a\ufffd"
    model.pretokenizer = {"name": "none", "unk_surface": " \u2047 "}
    assert Tokenizer(model).decode([0, 2]) == " \u2047 a"


def test_errors_name_the_problem(tok, tmp_path):
    with pytest.raises(InvalidIdError, match="id 9999 is out of range.*260"):
        tok.decode([1, 9999])
    with pytest.raises(IndexError):
        tok.decode([-1])
    with pytest.raises(InvalidIdError, match="integers"):
        tok.decode([1.5])
    with pytest.raises(TypeError, match="str or bytes"):
        tok.encode(123)
    with pytest.raises(TypeError, match="list of str/bytes"):
        tok.encode_batch("one string")
    with pytest.raises(InputError, match="surrogate"):
        tok.encode("\ud800")
    with pytest.raises(InputError, match="num_threads"):
        tok.encode_batch(["a"], num_threads=0)
    with pytest.raises(InputError, match="seed only matters"):
        tok.encode("a", seed=1)
    plain = Tokenizer(Model.byte_level([b"ab"], [-1.0]))
    with pytest.raises(InputError, match="no bos piece"):
        plain.encode("a", add_bos=True)
    (tmp_path / "junk").write_bytes(b"\x00\x01garbage")
    with pytest.raises(ModelFileError, match="unknown model format"):
        Tokenizer.load(tmp_path / "junk")
    with pytest.raises(ModelFileError, match="cannot read"):
        Tokenizer.load(tmp_path / "missing")
    (tmp_path / "hf.json").write_text('{"version": "1.0", "model": {}, "normalizer": null}')
    with pytest.raises(ModelFileError, match="Hugging Face"):
        Tokenizer.load(tmp_path / "hf.json")


def test_unrepresentable_text_is_an_error_not_a_loss():
    model = Model([b"<s>", b"a"], np.array([0.0, -1.0], np.float32), np.array([3, 1], np.int8))
    tok = Tokenizer(model)
    assert tok.encode("aa") == [1, 1]
    with pytest.raises(InputError, match="no <unk> piece and no byte"):
        tok.encode_batch(["a", "ab"])


def test_loads_sentencepiece_model_by_content(tmp_path):
    spm = pytest.importorskip("sentencepiece")
    pytest.importorskip("tokenizer.interop.sentencepiece")
    import io

    writer = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(["hello world", "hello there"] * 50), model_writer=writer,
                                   vocab_size=30, hard_vocab_limit=False, minloglevel=2, num_threads=1)
    (tmp_path / "m.model").write_bytes(writer.getvalue())
    tok = Tokenizer.load(tmp_path / "m.model")
    sp = spm.SentencePieceProcessor(model_proto=writer.getvalue())
    assert tok.encode("hello world") == sp.encode("hello world")


def test_threaded_ranges_are_shared_and_stitched_in_order():
    """Many ranges per thread, taken by whichever thread is free (more threads than cores too): the ids and
    offsets equal one thread's, with nulls and empty texts among the documents."""
    import pyarrow as pa

    tok = Tokenizer(Model.byte_level([b"ab", b"abc", b"\xe4\xb8\xad"], [-1.0, -1.5, -0.5]))
    texts = [("abcab" * (i % 11) + "中" * (i % 5)) if i % 13 else None for i in range(40000)] + [""]
    array = pa.array(texts, pa.string())
    expected = tok.encode_batch(array, num_threads=1)
    for threads in (2, 3, 7):
        assert tok.encode_batch(array, num_threads=threads).equals(expected)
    assert tok.encode_batch([t or "" for t in texts], num_threads=3) == \
        [tok.encode(t or "") for t in texts]


def test_threads_work_in_a_forked_child():
    """The encoding threads are per process: a child forked after the parent used them starts its own."""
    import multiprocessing

    tok = Tokenizer(Model.byte_level([b"ab", b"abc"], [-1.0, -1.5]))
    texts = ["abcab" * 50] * 2000
    expected = tok.encode_batch(texts, num_threads=2)
    with multiprocessing.get_context("fork").Pool(1) as pool:
        result = pool.apply_async(tok.encode_batch, (texts,), {"num_threads": 2})
        assert result.get(timeout=120) == expected


def test_split_ids_cuts_flat_ids_into_lists_and_restores_the_collector():
    import gc

    from tokenizer.shared_ids import split_ids
    from tokenizer.shared_ids import SharedIds

    ids = np.array([1, 2, 3, 70000], dtype=np.int32)
    shared = SharedIds(70001)
    for dtype in (np.int32, np.int64):
        assert split_ids(ids, np.array([0, 2, 2, 4], dtype=dtype)) == [[1, 2], [], [3, 70000]]
        lists = split_ids(ids, np.array([0, 2, 2, 4], dtype=dtype), shared)
        assert lists == [[1, 2], [], [3, 70000]] and lists[2][1] is shared.objects[70000]
        assert all(type(i) is int for ids_ in lists for i in ids_)
    assert split_ids(np.zeros(0, np.int32), np.zeros(1, np.int32)) == []
    assert split_ids(np.zeros(0, np.int32), np.zeros(1, np.int32), shared) == []
    assert gc.isenabled()
    gc.disable()
    try:
        split_ids(ids, np.array([0, 4], dtype=np.int32))
        assert not gc.isenabled()  # a caller's choice to keep the collector off stands
    finally:
        gc.enable()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(0, 599), max_size=12), max_size=30), st.booleans())
def test_build_id_lists_agrees_with_its_twin_and_leaks_no_reference(documents, in_place):
    """The compiled list builder (split_ids with shared ints), writing items and counts in place or through the C
    API, against its twin and the plain conversion: equal lists of the shared objects, and once they are dropped
    every shared int has its old reference count again (ints from 300 on: the interpreter's own small ints are
    shared with everything else)."""
    import gc
    import sys

    from tokenizer.kernels.python_lists import DIRECT
    from tokenizer.shared_ids import SharedIds, direct_writes_work, split_ids
    from tokenizer.twins.python_lists import ref_build_id_lists

    shared = SharedIds(600)
    assert shared.api[DIRECT] == direct_writes_work()
    if sys.version_info < (3, 12):
        assert direct_writes_work()  # CPython 3.11 here: the in-place writes are what runs
    shared.api[DIRECT] = int(in_place and direct_writes_work())
    ids = np.array([i for document in documents for i in document], dtype=np.int32)
    offsets = np.cumsum([0] + [len(document) for document in documents]).astype(np.int64)
    before = [sys.getrefcount(value) for value in shared.objects[300:].tolist()]
    lists = split_ids(ids, offsets, shared)
    assert lists == split_ids(ids, offsets) == documents
    twin = ref_build_id_lists(ids, offsets, shared.objects.tolist())
    assert all(a is b for got, expected in zip(lists, twin) for a, b in zip(got, expected))
    assert all(value is shared.objects[value] for document in lists for value in document)
    assert gc.is_tracked(lists) and not any(gc.is_tracked(document) for document in lists)  # both ways
    for k, expected in enumerate(documents):  # untracked, a list of ids is still an ordinary list
        lists[k].append(lists[k][:])
        assert lists[k].pop() == expected and lists[k] == expected
    del lists, twin
    assert [sys.getrefcount(value) for value in shared.objects[300:].tolist()] == before


def test_a_long_list_is_built_whole_with_huge_pages_asked_for():
    """A document of more ids than :data:`ADVISE_ABOVE` bytes of items: the builder advises huge pages for them
    (``madvise``, found on Linux) before writing, and writes every id."""
    import sys

    from tokenizer.kernels.python_lists import ADVISE_ABOVE, MADVISE
    from tokenizer.shared_ids import SharedIds, split_ids

    shared = SharedIds(1000)
    assert (shared.api[MADVISE] != 0) == sys.platform.startswith("linux")
    count = 2 * ADVISE_ABOVE // 8 + 12345
    ids = (np.arange(count) % 997).astype(np.int32)
    lists = split_ids(ids, np.array([0, 5, count], np.int64), shared)
    assert lists == [ids[:5].tolist(), ids[5:].tolist()]


def test_a_few_ids_beside_a_large_vocabulary_cost_what_the_ids_do():
    """split_ids of a few ids with a million shared ints raises each id's count in turn: nothing as long as the
    vocabulary is allocated (an int64 count per shared int would take 8 MB), the lists are right, and every count
    is back once they are dropped; an id outside the shared ints is refused before any count is raised."""
    import sys
    import tracemalloc

    from tokenizer.shared_ids import FEW_IDS_PER_OBJECT, SharedIds, split_ids

    shared = SharedIds(1_000_000)
    ids = np.array([999_999, 500_000, 999_999, 300], np.int32)
    offsets = np.array([0, 3, 3, 4], np.int64)
    assert len(ids) * FEW_IDS_PER_OBJECT < len(shared.addresses)
    watched = (300, 500_000, 999_999)
    before = [sys.getrefcount(shared.objects[i]) for i in watched]
    split_ids(ids, offsets, shared)  # (compiled before memory is traced)
    tracemalloc.start()
    try:
        lists = split_ids(ids, offsets, shared)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert lists == [[999_999, 500_000, 999_999], [], [300]] and lists[0][0] is shared.objects[999_999]
    assert peak < 100_000
    del lists
    assert [sys.getrefcount(shared.objects[i]) for i in watched] == before
    with pytest.raises(IndexError):
        split_ids(np.array([300, 1_000_000], np.int32), np.array([0, 2], np.int64), shared)
    assert [sys.getrefcount(shared.objects[i]) for i in watched] == before


def test_build_id_lists_refuses_ids_without_an_object():
    """An id outside the shared ints gives 0 from the kernel (all it built released) and the Python path's
    IndexError from split_ids, never a read past the array."""
    from tokenizer.kernels.python_lists import build_id_lists, count_ids
    from tokenizer.shared_ids import SharedIds, split_ids

    shared = SharedIds(4)
    ids = np.array([1, 2, 9], dtype=np.int32)
    offsets = np.array([0, 2, 3], dtype=np.int64)
    if hasattr(build_id_lists, "py_func"):
        assert build_id_lists(ids, offsets, shared.addresses, shared.api) == 0
    counts = np.zeros(4, np.int64)
    assert not count_ids(ids, 0, 3, counts) and not counts.any()  # checked before anything is counted
    assert count_ids(ids, 0, 2, counts) and counts.tolist() == [0, 1, 1, 0]
    with pytest.raises(IndexError):
        split_ids(ids, offsets, shared)


def test_lists_are_built_with_the_collector_paused_and_no_collection_set_off_inside():
    """split_ids and a two-thread encode_batch build thousands of lists without a collection of them during
    the call (the collector is paused, and nothing is allocated after it is turned back on); it is on again
    after, and the next allocation collects as usual."""
    import gc

    from tokenizer.shared_ids import SharedIds, split_ids

    shared = SharedIds(1000)
    ids = (np.arange(60_000) % 997).astype(np.int32)
    offsets = np.arange(0, 60_001, 6, dtype=np.int64)  # 10,000 lists
    texts = [f"line {i} of some text" for i in range(20_000)]
    tok = Tokenizer(Model.byte_level([b"li", b"ne", b" of"], [-1.0, -1.5, -1.2]))
    collections = []

    def note(phase, info):
        collections.append(phase)

    gc.callbacks.append(note)
    try:
        for build in (lambda: split_ids(ids, offsets, shared), lambda: tok.encode_batch(texts, num_threads=2)):
            build()  # first use: imports and compiles, which may collect
            gc.collect()
            collections.clear()
            lists = build()
            during = len(collections)  # (allocates nothing: what follows may collect, as it should)
            assert during == 0 and gc.isenabled()
            assert len(lists) in (10_000, 20_000)
            assert gc.is_tracked(lists)  # the outer list; the lists of ids stay untracked (python_lists)
            assert not any(gc.is_tracked(ids_) for ids_ in lists)
            [[] for _ in range(1000)]  # allocations: the collector runs again
            assert collections
            del lists
    finally:
        gc.callbacks.remove(note)


def test_encode_batch_list_equals_per_text_encode_with_threads():
    tok = Tokenizer(Model.byte_level([b"ab", b"abc", b"\xe4\xb8\xad"], [-1.0, -1.5, -0.5]))
    texts = ["abcab" * (i % 7) + "中" * (i % 3) for i in range(8000)] + [""]  # > 64 KB: two threads really split
    expected = [tok.encode(t) for t in texts]
    for threads in (1, 2):
        assert tok.encode_batch(texts, num_threads=threads) == expected
        assert tok.encode_batch(texts, num_threads=threads, add_bos=False) == expected


def test_a_document_too_large_for_the_free_memory_is_refused(monkeypatch):
    """The buffers a document needs are checked against the available memory before they are allocated: a clear
    error, not an out-of-memory kill (the available memory is pretended small here). The buffers hold the longest
    segment a model encodes on its own: the whole document for BytePiece, a pre-token or word for BPE, so BPE
    refuses a long run of one letter but encodes ordinary text of the same size."""
    import tokenizer.memory as memory
    from tokenizer.errors import InputError
    from tokenizer.trainers.bpe import BpeSettings, train_bpe_local
    from tokenizer.trainers.bytepiece import TrainSettings, train_bytepiece_local

    lines = [f"some text {i}".encode() for i in range(300)]
    models = [train_bytepiece_local(lines, TrainSettings(vocab_sizes=(300,), min_count=1))[300],
              train_bpe_local(lines, BpeSettings(vocab_sizes=(300,)))[300],
              train_bpe_local(lines, BpeSettings(vocab_sizes=(300,), pretokenizer="sentencepiece"))[300]]
    ordinary = b"some text " * 800_000  # 8 MB: a few hundred MB of buffers at most
    run = b"s" * 8_000_000  # one pre-token, one word
    monkeypatch.setattr(memory, "available_bytes", lambda: 100 << 20)
    for model in models:
        tok = Tokenizer(model)
        assert tok.decode_bytes(tok.encode(b"some text 7")) == b"some text 7"  # small documents: unchecked
        whole_documents = model is models[0]  # BytePiece
        for text in ([ordinary, run] if whole_documents else [run]):
            with pytest.raises(InputError, match="needs about .* GiB of work memory .* split it into smaller "
                                                 "documents"):
                tok.encode(text)
            with pytest.raises(InputError, match="work memory"):
                tok.encode_batch([text.decode()], num_threads=1)
        if not whole_documents:
            assert tok.decode_bytes(tok.encode(ordinary)) == ordinary
            assert tok.encode_batch([ordinary.decode()], num_threads=1)[0] == tok.encode(ordinary)


def test_large_fresh_work_arrays_ask_for_huge_pages():
    """A work array too large to keep comes fresh from the system each call: its whole 2 MB pages are advised to
    be huge pages before anything writes to it (Linux), so its first touch faults once per 2 MB, not per 4 KB."""
    import sys

    from tokenizer.memory import fresh_array
    from tokenizer.shared_ids import huge_page_advice

    small = fresh_array(10, np.int32)
    assert small.shape == (10,) and small.dtype == np.int32
    large = fresh_array(3 << 20, np.int64)  # 24 MB
    assert large.shape == (3 << 20,) and large.dtype == np.int64
    if not sys.platform.startswith("linux") or not huge_page_advice():
        return
    inside = (large.ctypes.data + (4 << 20)) & ~((2 << 20) - 1)  # an address in one of its whole huge pages
    flags = None
    with open("/proc/self/smaps") as smaps:
        within = False
        for line in smaps:
            head = line.split()[0]
            if "-" in head and ":" not in head:
                start, end = (int(x, 16) for x in head.split("-"))
                within = start <= inside < end
            elif within and head == "VmFlags:":
                flags = line.split()[1:]
                break
    assert flags is not None and "hg" in flags
