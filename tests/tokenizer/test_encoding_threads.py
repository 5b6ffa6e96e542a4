"""The encoding threads a parallel batch checks out: jobs run on them, errors come back, threads are kept."""

from __future__ import annotations

import threading
import time

import pytest

import tokenizer.shared_ranges as shared_ranges
from tokenizer import encoding_threads
from tokenizer.encoding_threads import check_in, check_out
from tests.tokenizer.sample_models import sample_texts


def test_a_job_runs_on_another_thread_and_its_error_comes_back():
    (thread,) = check_out(1)
    ran_on = []
    thread.start_job(lambda: ran_on.append(threading.current_thread().name))
    assert thread.join_job() is None
    assert ran_on and ran_on[0].startswith("shardpiece-encode-") and ran_on[0] != threading.current_thread().name

    def fails():
        raise ValueError("the job's own error")

    thread.start_job(fails)
    error = thread.join_job()
    assert isinstance(error, ValueError) and str(error) == "the job's own error"
    thread.start_job(lambda: None)  # the thread goes on after an error
    assert thread.join_job() is None
    check_in([thread])


def test_threads_are_kept_and_callers_at_once_get_their_own():
    first = check_out(2)
    check_in(first)
    again = check_out(2)
    assert {id(t) for t in again} == {id(t) for t in first}  # kept, not started anew
    other = check_out(2)  # a second caller while the first still holds its threads
    assert not {id(t) for t in other} & {id(t) for t in again}
    check_in(again)
    check_in(other)


def test_a_helper_error_reaches_the_batch_caller(tokenizers, monkeypatch):
    """A parallel batch whose helper thread fails raises the helper's error (list and Arrow input), and the
    threads serve the next batch."""
    import pyarrow as pa

    tok = tokenizers["bytepiece"]
    lines = sample_texts(600)
    texts = [lines[i % len(lines)] for i in range(3000)]
    expected = tok.encode_batch(texts, num_threads=1)
    encode = shared_ranges.encode_documents

    def fails_off_the_calling_thread(*args):
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("helper failed")
        time.sleep(0.2)  # (so that the helper takes the other range, not the calling thread after its own)
        return encode(*args)

    monkeypatch.setattr(shared_ranges, "encode_documents", fails_off_the_calling_thread)
    for batch in (texts, pa.array(texts)):
        with pytest.raises(RuntimeError, match="helper failed"):
            tok.encode_batch(batch, num_threads=2)
    monkeypatch.undo()
    assert tok.encode_batch(texts, num_threads=2) == expected
    assert tok.encode_batch(pa.array(texts), num_threads=2).to_pylist() == expected


def test_a_forked_child_forgets_the_parents_threads():
    check_in(check_out(1))
    assert encoding_threads._IDLE
    encoding_threads._forget_threads_after_fork()
    assert not encoding_threads._IDLE
