"""Document ranges shared between the threads of a batch: the claims word (tokenizer.kernels.claims) and the
tasks around it (tokenizer.shared_ranges)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tokenizer.shared_ranges as shared_ranges
from tokenizer.compiled import ALL_VALID
from tokenizer.kernels.claims import CLAIM_BYTES, claims_state, claims_word, next_claim, steal_documents
from tokenizer.twins.claims import CLAIM_BYTES as REF_CLAIM_BYTES
from tokenizer.twins.claims import ref_next_claim, ref_steal_documents
from tests.tokenizer.sample_models import sample_lines, sample_texts


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 3000), min_size=1, max_size=40), st.data())
def test_claims_and_steals_agree_with_their_twins(sizes, data):
    """From any word (claimed end <= limit) and any first document, a claim and a steal return and leave what
    their twins do; a steal leaves the owner at least one document and takes at least one."""
    assert CLAIM_BYTES == REF_CLAIM_BYTES
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = len(sizes)
    limit = data.draw(st.integers(0, n))
    claimed = data.draw(st.integers(0, limit))
    first = data.draw(st.integers(0, n))
    claims = np.array([claims_word(claimed, limit)], np.int64)
    end, word = ref_next_claim((claimed, limit), offsets.tolist(), first)
    assert next_claim(claims, offsets, first) == end and claims_state(claims) == word
    least = data.draw(st.integers(1, 4000))
    claims = np.array([claims_word(claimed, limit)], np.int64)
    (begin, stop), word = ref_steal_documents((claimed, limit), offsets.tolist(), least)
    assert tuple(steal_documents(claims, offsets, least)) == (begin, stop) and claims_state(claims) == word
    if stop:
        assert claimed < begin < stop == limit


@pytest.mark.parametrize("kind", ["unigram", "bytepiece", "bpe sentencepiece", "bpe byte_level"])
def test_a_range_taken_in_parts_gives_the_ids_of_one_thread(tokenizers, kind):
    """A range whose back part is taken before its owner starts, then again after its first claim: the owner
    stops at the limit it finds, the parts' ids and offsets join into those of one pass (bos/eos included)."""
    tok = tokenizers[kind]
    texts = [line for line in sample_lines(400) if line][:600]
    data = np.frombuffer(b"".join(texts), np.uint8)
    offsets = np.concatenate([[0], np.cumsum([len(t) for t in texts])]).astype(np.int64)
    data, offsets = shared_ranges.normalized(tok, data, offsets)
    n = len(texts)
    batch = shared_ranges.Batch()  # (one batch: every result below stays valid)
    whole_ids, whole_offsets = shared_ranges.encode_documents(tok, data, offsets, ALL_VALID, 0, n, 1, 2, batch)
    claims = np.array([claims_word(0, n)], np.int64)
    middle, end = steal_documents(claims, offsets, 1024)
    assert 0 < middle < end == n
    assert next_claim(claims, offsets, 0) < middle  # the owner's first claim, as its kernel would make it
    quarter, _ = steal_documents(claims, offsets, 1024)
    owner = shared_ranges.encode_documents(tok, data, offsets, ALL_VALID, 0, n, 1, 2, batch, claims)
    parts = [owner,
             shared_ranges.encode_documents(tok, data, offsets, ALL_VALID, quarter, middle, 1, 2, batch),
             shared_ranges.encode_documents(tok, data, offsets, ALL_VALID, middle, n, 1, 2, batch)]
    assert [len(part_offsets) - 1 for _, part_offsets in parts] == [quarter, middle - quarter, n - middle]
    assert np.concatenate([ids for ids, _ in parts]).tolist() == whole_ids.tolist()
    shift, joined = 0, [0]
    for ids, part_offsets in parts:
        joined.extend((part_offsets[1:] + shift).tolist())
        shift += len(ids)
    assert joined == whole_offsets.tolist()


def test_a_thread_done_early_takes_parts_of_a_slow_one(tokenizers, monkeypatch):
    """Two threads, the helper held at the start of its range until the calling thread, done with its own, has
    taken parts of it twice (or found nothing more to take); list and Arrow results equal one thread's, nulls
    kept. The order is forced with events, whatever else the machine runs: the calling thread starts its range
    only once the helper holds one."""
    import pyarrow as pa

    tok = tokenizers["unigram"]
    lines = sample_texts(600)
    texts = [lines[i % len(lines)] * (1 + i % 3) for i in range(3000)]
    with_nulls = pa.array([None if i % 17 == 0 else t for i, t in enumerate(texts)], pa.string())
    expected_lists = tok.encode_batch(texts, num_threads=1, add_eos=True)
    expected_arrow = tok.encode_batch(with_nulls, num_threads=1)
    steals = []
    steal, encode = shared_ranges.steal_documents, shared_ranges.encode_documents
    deadlock_guard = 600  # seconds; reached only if the batch stopped taking work (a bug), never by a slow run

    def counted_steal(*args):
        taken = steal(*args)
        steals.append(taken[1] > taken[0])
        if sum(steals) >= 2 or not steals[-1]:
            released.set()
        return taken

    def ordered_encode(*args):
        if threading.current_thread() is threading.main_thread():
            assert held.wait(deadlock_guard), "the helper thread never started its range"
        elif not held.is_set():
            held.set()
            assert released.wait(deadlock_guard), "the calling thread never took parts of the helper's range"
        return encode(*args)

    monkeypatch.setattr(shared_ranges, "steal_documents", counted_steal)
    monkeypatch.setattr(shared_ranges, "encode_documents", ordered_encode)
    for call in (lambda: tok.encode_batch(texts, num_threads=2, add_eos=True) == expected_lists,
                 lambda: tok.encode_batch(with_nulls, num_threads=2).equals(expected_arrow)):
        held, released, steals[:] = threading.Event(), threading.Event(), []
        assert call()
        assert held.is_set() and sum(steals) >= 2, steals


def test_output_buffers_are_kept_per_thread_and_batch(monkeypatch):
    """Slices of one batch do not overlap; the next batch reuses the memory once the last one is done, never
    before (its caller may still be joining its ids); a request past the cap gets an array of its own, and a
    buffer grows for a larger one."""
    buffers = shared_ranges.OutputBuffers()

    def done_batch():
        batch = shared_ranges.Batch()
        batch.done = True
        return batch

    first = buffers.take(done_batch(), 100, np.int32)
    batch = shared_ranges.Batch()
    again, second = buffers.take(batch, 100, np.int32), buffers.take(batch, 50, np.int32)  # (grows for the 50)
    assert np.shares_memory(again, first) and again.dtype == np.int32 and len(second) == 50
    assert not np.shares_memory(again, second)
    next_batch = shared_ranges.Batch()
    later = buffers.take(next_batch, 150, np.int32)  # the batch before is not done
    assert not np.shares_memory(later, second) and not np.shares_memory(later, again)
    next_batch.done = True
    assert np.shares_memory(buffers.take(done_batch(), 150, np.int32), later)
    monkeypatch.setattr(shared_ranges, "KEEP_OUTPUT_BYTES", 4096)
    alone = buffers.take(done_batch(), 2000, np.int64)
    assert len(alone) == 2000 and buffers.take(done_batch(), 10, np.int64).base is not alone.base
    grown = buffers.take(done_batch(), 900, np.int32)
    assert len(grown) == 900 and not np.shares_memory(grown, first)


def test_results_do_not_share_the_kept_buffers(tokenizers):
    """An Arrow result of one or two threads is left as it was by the batches after it (which reuse the
    buffers its ids were encoded into)."""
    import pyarrow as pa

    tok = tokenizers["bpe byte_level"]
    lines = sample_texts(600)
    for threads in (1, 2):
        first = tok.encode_batch(pa.array(lines * 3), num_threads=threads)
        expected = first.to_pylist()
        tok.encode_batch(pa.array(lines[::-1] * 3), num_threads=threads)
        tok.encode_batch(lines[::2] * 3, num_threads=threads)
        assert first.to_pylist() == expected


def test_callers_on_several_threads_get_their_own_ids(tokenizers):
    """Two threads each calling two-thread batches at once (the encoding threads go from one caller's batch to
    the other's): every result equals its one-thread encoding."""
    import pyarrow as pa

    tok = tokenizers["unigram"]
    lines = sample_texts(600)
    arrays = [pa.array(lines * 4), pa.array(lines[::-1] * 3)]
    expected = [tok.encode_batch(array, num_threads=1) for array in arrays]
    wrong = []

    def call(k: int) -> None:
        for _ in range(15):
            if not tok.encode_batch(arrays[k], num_threads=2).equals(expected[k]):
                wrong.append(k)

    callers = [threading.Thread(target=call, args=(k,)) for k in (0, 1)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join()
    assert wrong == []
