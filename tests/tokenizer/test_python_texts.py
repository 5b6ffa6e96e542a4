"""Texts packed by reading Python str/bytes objects in place (tokenizer.kernels.python_texts) against their twin
(str.encode), and the list input of encode_batch that uses them."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenizer import InputError, Model, Tokenizer
from tokenizer.packed import unpack
from tokenizer.python_texts import byte_bounds, pack_items, text_layout
from tokenizer.twins.python_texts import ref_byte_bounds, ref_pack_texts

# characters of every kind: ASCII, one byte (to U+00FF), two bytes (to U+FFFF, surrogates left out) and four
_CHARACTERS = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, blacklist_categories=("Cs",))
_TEXTS = st.lists(st.one_of(st.text(_CHARACTERS, max_size=40), st.text("ab\x00", max_size=9),
                            st.text(st.characters(max_codepoint=0xFF), max_size=9), st.binary(max_size=20)),
                  max_size=25)


@pytest.fixture(scope="module")
def layout():
    found = text_layout()
    if sys.implementation.name == "cpython" and sys.version_info < (3, 13):
        assert found is not None  # the interpreters this runs on read their texts in place
    if found is None:
        pytest.skip("this interpreter's str objects are not read in place")
    return found


@settings(max_examples=300, deadline=None)
@given(_TEXTS, st.data())
def test_packed_texts_agree_with_their_twin(layout, texts, data):
    items = tuple(texts)
    begin = data.draw(st.integers(0, len(items)))
    end = data.draw(st.integers(begin, len(items)))
    bounds = byte_bounds(items, begin, end, layout)
    assert bounds.tolist() == ref_byte_bounds(items[begin:end])
    packed_data, offsets = pack_items(items, begin, end, layout)
    twin_data, twin_offsets = ref_pack_texts(items[begin:end])
    assert packed_data.tobytes() == twin_data.tobytes() and offsets.tolist() == twin_offsets.tolist()
    assert unpack(packed_data, offsets) == [t.encode("utf-8") if isinstance(t, str) else t for t in items[begin:end]]


@pytest.mark.parametrize("surrogate", ["\ud800", "a\udfff", "\U0001F600\udc80", "中\ud83d"])
def test_an_unpaired_surrogate_is_not_packed(layout, surrogate):
    items = ("fine", surrogate)
    assert byte_bounds(items, 0, 2, layout) is not None  # the bound does not look at characters
    assert pack_items(items, 0, 2, layout) is None and ref_pack_texts(items) is None
    assert pack_items(items, 0, 1, layout)[0].tobytes() == b"fine"


class _Text(str):
    pass


@pytest.mark.parametrize("item", [bytearray(b"ab"), memoryview(b"ab"), _Text("ab"), 3, None])
def test_items_other_than_bytes_and_str_are_left_to_python(layout, item):
    assert byte_bounds(("x", item), 0, 2, layout) is None
    assert pack_items(("x", item), 0, 2, layout) is None
    assert byte_bounds(("x", item), 0, 1, layout).tolist() == [0, 1]


def test_encode_batch_lists_of_every_kind_equal_encode_on_one_and_two_threads():
    """More than 64 KB of texts (two threads really split, each packing its own ranges), of every str kind,
    bytes and a str subclass (which sends the whole list through pyarrow)."""
    tok = Tokenizer(Model.byte_level([b"ab", "é".encode(), "中".encode(), b"\xf0\x9f\x98"], [-1.0, -1.5, -0.5, -2.0]))
    texts = [("ab" * (i % 5) + "é" * (i % 3) + "中" * (i % 4) + "\U0001F600" * (i % 2)) for i in range(12000)]
    texts += [b"ab\xff\xfe", "", b""]
    expected = [tok.encode(t) for t in texts]
    for threads in (1, 2):
        assert tok.encode_batch(texts, num_threads=threads) == expected
        assert tok.encode_batch(tuple(texts), num_threads=threads) == expected
        assert tok.encode_batch(texts + [_Text("ab")], num_threads=threads) == expected + [[256]]
        assert tok.encode_batch(texts + [bytearray(b"ab")], num_threads=threads) == expected + [[256]]


@pytest.mark.parametrize("threads", [1, 2])
def test_encode_batch_names_an_unpaired_surrogate_anywhere_in_a_list(threads):
    tok = Tokenizer(Model.byte_level([b"ab"], [-1.0]))
    texts = ["ab" * 40] * 4000
    for where in (0, 2000, 3999):
        with pytest.raises(InputError, match="surrogate"):
            tok.encode_batch(texts[:where] + ["a\ud800"] + texts[where:], num_threads=threads)
    with pytest.raises(TypeError, match="str or bytes"):
        tok.encode_batch(texts + [3], num_threads=threads)


def test_the_layout_is_checked_on_probe_texts(layout):
    """A wrong layout (the two-byte kind's characters looked for where ASCII ones are) does not pack the probes
    as str.encode does: text_layout would refuse it."""
    from tokenizer.kernels import python_texts as kernels
    from tokenizer.python_texts import PROBE_TEXTS

    wrong = layout.copy()
    wrong[kernels.COMPACT_DATA] = wrong[kernels.ASCII_DATA]
    packed = pack_items(PROBE_TEXTS, 0, len(PROBE_TEXTS), wrong)
    assert packed is None or unpack(*packed) != [t.encode() if isinstance(t, str) else t for t in PROBE_TEXTS]
    assert np.array_equal(text_layout(), layout)



def test_a_failed_parallel_batch_frees_the_lists_it_had_made():
    """Two threads fill one outer list in place; when a range fails (here an unpaired surrogate in the last
    text, found while packing it), the lists the other ranges made are freed: every shared int has its count
    of before."""
    tok = Tokenizer(Model.byte_level([b"ab", b"cd"], [-1.0, -1.0]))
    shared = tok.compiled.shared_ids()
    texts = ["cd" * 40] * 4000
    assert tok.encode_batch(texts, num_threads=2) == [[257] * 40] * 4000  # (257: not one of Python's cached ints)
    before = _references(shared.objects, 257)
    for where in (0, 3999):
        with pytest.raises(InputError, match="surrogate"):
            tok.encode_batch(texts[:where] + ["cd\ud800"] + texts[where:], num_threads=2)
        assert _references(shared.objects, 257) == before


def test_id_lists_are_filled_range_by_range_in_any_order():
    from tokenizer.shared_ids import IdLists, SharedIds

    shared = SharedIds(400)
    lists = IdLists.for_documents(3, shared)
    if lists is None:
        pytest.skip("items are not written in place on this interpreter")
    lists.fill(1, np.array([7, 8], np.int32), np.array([0, 2, 2], np.int64))
    lists.fill(0, np.array([5], np.int32), np.array([0, 1], np.int64))
    assert lists.result() == [[5], [7, 8], []]
    dropped = IdLists.for_documents(2, shared)
    dropped.fill(1, np.array([300], np.int32), np.array([0, 1], np.int64))
    before = _references(shared.objects, 300)
    dropped.drop()  # document 0 never filled: its NULL item is skipped
    assert _references(shared.objects, 300) == before - 1
    with pytest.raises(IndexError):
        IdLists.for_documents(1, shared).fill(0, np.array([400], np.int32), np.array([0, 1], np.int64))


def _references(objects, index: int) -> int:
    """The reference count of ``objects[index]`` (a function: an assertion's record of the object would count)."""
    return sys.getrefcount(objects[index])
