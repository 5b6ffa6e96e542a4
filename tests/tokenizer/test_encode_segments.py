"""The encoder's work arrays hold the longest segment it encodes on its own, not the longest document: a model that
cuts documents (regex pre-tokens, SentencePiece-style BPE words, BytePiece lines) encodes a long document of real
text with small arrays and the same ids; an entry stops before a segment its arrays cannot hold, and goes on from
there with larger ones."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tokenizer.compiled as compiled_module
from tokenizer import Tokenizer
from tokenizer.compiled import ALL_VALID, NO_CLAIMS
from tokenizer.kernels.batch import cuts_of, segment_end
from tokenizer.kernels.pretokenize import PATTERNS, char_class_table
from tokenizer.twins.batch import ref_segment_lengths
from tests.tokenizer.sample_models import sample_lines

PIECES = st.sampled_from(["a", "bc", " ", "  ", "\n", "\n\n", "\u2581", "\u2581\u2581", "7", "42", "中", "日本",
                          "'s", "!?", "\t", "é", "Ab", "CD"])
DOCUMENTS = st.lists(st.lists(PIECES, max_size=30).map(lambda parts: "".join(parts).encode()), min_size=1,
                     max_size=6)


def segment_lengths(segments, document: bytes) -> list[int]:
    """The lengths of the segments the kernels' segment_end cuts ``document`` into with a model's ``segments``."""
    data = np.frombuffer(document, np.uint8)
    char_class, pattern, words, lines = segments
    cuts = cuts_of(pattern, words, lines)
    lengths, at = [], 0
    while at < len(document):
        lengths.append(int(segment_end(cuts, char_class, pattern, data, at, len(document))) - at)
        at += lengths[-1]
    return lengths


@settings(max_examples=200, deadline=None)
@given(st.lists(PIECES, max_size=40).map(lambda parts: "".join(parts).encode()),
       st.sampled_from([None, "gpt2", "llama3", "o200k", "words", "lines"]))
def test_segment_end_agrees_with_its_twin(document, cut):
    pattern = PATTERNS[cut] if cut in PATTERNS else 0
    char_class = char_class_table() if pattern else np.zeros(0, np.uint8)
    got = segment_lengths((char_class, pattern, cut == "words", cut == "lines"), document)
    expected = ref_segment_lengths(document, cut if cut in PATTERNS else None, words=cut == "words",
                                   lines=cut == "lines")
    assert got == expected


@pytest.fixture(scope="module")
def cutting_tokenizers() -> dict[str, Tokenizer]:
    """One model of each kind that cuts documents: byte-level BPE (GPT-2 pre-tokens), SentencePiece-style BPE
    (words), a BytePiece model as read from BytePiece's JSON (lines: ``split_after_newlines``)."""
    from tokenizer.trainers import bpe, bytepiece

    lines = sample_lines(300)
    byte_piece = bytepiece.train_bytepiece_local(lines, bytepiece.TrainSettings(vocab_sizes=(1000,), min_count=2))
    by_lines = dataclasses.replace(byte_piece[1000], pretokenizer={"name": "none", "split_after_newlines": True})
    return {
        "bpe byte_level": Tokenizer(bpe.train_bpe_local(lines, bpe.BpeSettings(vocab_sizes=(1000,)))[1000]),
        "bpe sentencepiece": Tokenizer(bpe.train_bpe_local(
            lines, bpe.BpeSettings(vocab_sizes=(1000,), pretokenizer="sentencepiece"))[1000]),
        "bytepiece lines": Tokenizer(by_lines),
    }


@pytest.mark.parametrize("kind", ["bpe byte_level", "bpe sentencepiece", "bytepiece lines"])
@pytest.mark.parametrize("work_start", [1 << 16, 24])
def test_a_long_document_takes_work_arrays_for_its_longest_segment(cutting_tokenizers, kind, work_start,
                                                                  monkeypatch):
    """A long document of real text in three languages: the arrays start at ``WORK_START`` bytes and grow at
    each longer segment, to the longest (24: most documents hold longer ones); same ids as with arrays for the
    whole document."""
    monkeypatch.setattr(compiled_module, "KEEP_WORK_BYTES", 0)  # arrays of the size asked for, none kept
    tok = cutting_tokenizers[kind]
    lines = [line.decode("utf-8") for line in sample_lines(200)]
    document = ("\n".join(lines) + "\n\n") * 10
    texts = ["short", document, "", document[:5000], "a few words"]
    normalized = [tok.normalizer.normalize(text.encode()) for text in texts]
    longest = max(max(segment_lengths(tok.compiled.segments, text), default=0) for text in normalized)
    assert longest < len(normalized[1]) // 20
    sized = []
    work_arrays = compiled_module.CompiledModel.work_arrays
    monkeypatch.setattr(compiled_module.CompiledModel, "work_arrays",
                        lambda self, size: sized.append(size) or work_arrays(self, size))
    monkeypatch.setattr(compiled_module, "WORK_START", work_start)
    cut = tok.encode_batch(texts, num_threads=1)
    assert max(sized) == max(min(work_start, len(normalized[1])), longest)
    assert [tok.encode(text) for text in texts] == cut
    monkeypatch.setattr(compiled_module, "WORK_START", 1 << 40)  # arrays for the whole document
    sized.clear()
    assert tok.encode_batch(texts, num_threads=1) == cut
    assert sized == [len(normalized[1])]
    assert tok.decode(cut[1]) == document or kind == "bpe sentencepiece"  # its normalizer maps " " to "▁"


def test_an_entry_stops_before_a_segment_its_arrays_cannot_hold_and_goes_on_from_it(cutting_tokenizers,
                                                                                     monkeypatch):
    """Arrays that hold the first text but not a segment of the second: the entry returns the ids it wrote and
    where it stopped, nothing past the arrays; a call from there with larger arrays finishes the same ids (and
    the stopped document's bos stays written once)."""
    monkeypatch.setattr(compiled_module, "KEEP_WORK_BYTES", 0)
    for tok in cutting_tokenizers.values():
        compiled = tok.compiled
        texts = [tok.normalizer.normalize(text) for text in (b"short", b"a much longer text than the arrays hold " * 4)]
        data = np.frombuffer(b"".join(texts), np.uint8)
        offsets = np.array([0, len(texts[0]), len(texts[0]) + len(texts[1])], np.int64)
        bos = compiled.vocab_size - 1  # any id serves as a marker here
        expected = [[bos] + compiled.encode_one(text, -1, -1) for text in texts]
        out_ids, out_offsets = np.full(len(data) + 4, -7, np.int32), np.zeros(3, np.int64)
        written, document, stopped, end = compiled.kernel(*compiled.record, data, offsets, ALL_VALID, 0, 2,
                                                          NO_CLAIMS, -1, -1, bos, -1,
                                                          *compiled.work_arrays(len(texts[0])), out_ids,
                                                          out_offsets, compiled.cuts)
        assert document == 1 and offsets[1] <= stopped < stopped + len(texts[0]) < end <= offsets[2]
        assert out_ids[:out_offsets[1]].tolist() == expected[0] and out_ids[out_offsets[1]] == bos
        assert (out_ids[written:] == -7).all()
        total, *failed = compiled.kernel(*compiled.record, data, offsets, ALL_VALID, 1, 2, NO_CLAIMS, stopped, end,
                                         bos, -1, *compiled.work_arrays(len(texts[1])), out_ids[written:],
                                         out_offsets[1:], compiled.cuts)
        assert failed == [-1, -1, -1]
        assert out_ids[:written + total].tolist() == expected[0] + expected[1]
        # without the segment's end (-1), the resumed call looks for it again: the same ids
        again = np.full(len(data) + 4, -7, np.int32)
        total_again, *_ = compiled.kernel(*compiled.record, data, offsets, ALL_VALID, 1, 2, NO_CLAIMS, stopped, -1,
                                          bos, -1, *compiled.work_arrays(len(texts[1])), again, np.zeros(2, np.int64),
                                          compiled.cuts)
        assert total_again == total and again[:total].tolist() == out_ids[written:written + total].tolist()


def test_a_thread_keeps_its_work_arrays_up_to_a_size(cutting_tokenizers, monkeypatch):
    """Arrays up to KEEP_WORK_BYTES serve the thread's next calls (no fresh pages, a warm pre-token cache), with
    room to grow into; larger ones are dropped after their call. Other threads have their own."""
    import threading

    compiled = cutting_tokenizers["bpe byte_level"].compiled
    first = compiled.work_arrays(100)
    assert compiled.work_arrays(200) is first  # power-of-two room: 256 positions
    assert compiled.work_arrays(300) is not first
    in_thread = []
    worker = threading.Thread(target=lambda: in_thread.append(compiled.work_arrays(100)))
    worker.start()
    worker.join()
    assert in_thread[0][0] is not compiled.work_arrays(100)[0]
    monkeypatch.setattr(compiled_module, "KEEP_WORK_BYTES", 0)
    kept = compiled.work_arrays(100)
    large = compiled.work_arrays(100_000)
    assert compiled.work_arrays(100) is kept and compiled.work_arrays(100_000)[0] is not large[0]
