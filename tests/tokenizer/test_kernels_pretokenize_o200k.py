"""The o200k pre-split kernel vs its Python twin, vs the `regex` module and vs tiktoken's own regex engine, with
tiktoken's pattern text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from tokenizer.pretokenize_patterns import PATTERN_TEXT
from tokenizer.twins.pretokenize_o200k import ref_pretokenize_o200k
from tests.tokenizer.test_kernels_pretokenize import kernel_split as split_with

# upper, lower, title case (ǅ), modifier letters (ʰ, Lm), other letters (中 ひ ا), marks (Mn U+0301, Mc U+0903,
# Me U+20DD), numbers (Nd, No, Nl), apostrophes and contraction letters (ſ folds to s), whitespace and newlines
ALPHABET = (list("AaBbZzSsTtRrEeVvMmLlDdΣσДдİß") + ["ǅ", "ʰ", "中", "ひ", "ا", "ſ"] + ["\u0301", "\u0903", "\u20dd"]
            + list("09١²Ⅻ") + ["'", "'", "/", "!", ".", "-", "_", " ", " ", " ", "\n", "\r", "\t", "\u3000",
                               "\u00a0", "\u2028", "\x85", "\x0b"])
texts = st.text(alphabet=st.sampled_from(ALPHABET), max_size=40)


def kernel_split(data: bytes) -> list[bytes]:
    """The o200k kernel's pre-tokens of ``data``."""
    return split_with(data, "o200k")


def test_docstring_example_and_pattern_text_is_tiktokens():
    text = "HelloWORLD'LL ABCdef x/\n/y".encode()
    assert kernel_split(text) == [b"Hello", b"WORLD'LL", b" ABCdef", b" x", b"/\n/", b"y"]
    assert kernel_split(b"ABCdef") == [b"ABCdef"] and kernel_split(b"WORLD'LL x")[0] == b"WORLD'LL"
    openai_public = pytest.importorskip("tiktoken_ext.openai_public")
    from unittest import mock

    with mock.patch.object(openai_public, "load_tiktoken_bpe", lambda *args, **kwargs: {}):  # no download
        assert openai_public.o200k_base()["pat_str"] == PATTERN_TEXT["o200k"]


@pytest.mark.parametrize("text, expected", [
    ("ʰA", ["ʰ", "A"]),  # U*W+ gives back the A: it ends after ʰ, the last character in both classes
    (" \u0301A", [" \u0301", "A"]),  # the mark is in both classes too
    ("\u0301ABC", ["\u0301", "ABC"]),  # with the mark as the optional first character nothing lower follows
    ("it'ſ x", ["it'ſ", " x"]),  # case-insensitive 's also matches ſ
    ("a \n\n b", ["a", " \n\n", " b"]),
    ("x  ", ["x", "  "]),  # no \s++$ alternative in o200k: whitespace at the end is one pre-token anyway
])
def test_hand_checked_cases(text, expected):
    assert kernel_split(text.encode()) == [t.encode() for t in expected]
    assert ref_pretokenize_o200k(text.encode()) == [t.encode() for t in expected]


@settings(max_examples=300, deadline=None)
@given(text=texts)
def test_kernel_matches_twin_and_tiles(text):
    data = text.encode()
    got = kernel_split(data)
    assert got == ref_pretokenize_o200k(data)
    assert b"".join(got) == data and all(got)


@settings(max_examples=300, deadline=None)
@given(text=texts)
def test_kernel_matches_regex_module(text):
    regex = pytest.importorskip("regex")
    expected = [m.encode() for m in regex.findall(PATTERN_TEXT["o200k"], text)]
    assert kernel_split(text.encode()) == expected


@settings(max_examples=150, deadline=None)
@given(data=st.binary(max_size=40), text=texts)
def test_arbitrary_bytes_tile(data, text):
    mixed = text.encode() + data + text.encode()
    got = kernel_split(mixed)
    assert b"".join(got) == mixed and got == ref_pretokenize_o200k(mixed)


def test_long_runs_split_as_the_regex_splits_them():
    regex = pytest.importorskip("regex")
    for text in ["A" * 5000 + "a", "\u0301" + "A" * 5000, "ʰA" * 2000, " " * 5000 + "x", "\n " * 2000 + "!" * 3000]:
        assert kernel_split(text.encode()) == [m.encode() for m in regex.findall(PATTERN_TEXT["o200k"], text)]


@settings(max_examples=100, deadline=None)
@given(texts=st.lists(texts, min_size=1, max_size=8))
def test_tiktokens_regex_engine_splits_where_the_kernel_does(texts):
    """tiktoken's Rust engine with the o200k pattern and ranks that are the 256 bytes plus every pre-token of three
    bytes or more the kernel cuts: tiktoken emits such a pre-token as its one id and any other as its bytes (no
    2-byte token, so no merge), so its ids are the kernel's pre-tokens mapped that way."""
    tiktoken = pytest.importorskip("tiktoken")
    text = "".join(texts)
    pieces = kernel_split(text.encode())
    ranks = {bytes([b]): b for b in range(256)}
    for piece in pieces:
        if len(piece) >= 3:
            ranks.setdefault(piece, len(ranks))
    encoding = tiktoken.Encoding("o200k-test", pat_str=PATTERN_TEXT["o200k"], mergeable_ranks=ranks,
                                 special_tokens={})
    expected = [i for piece in pieces for i in ([ranks[piece]] if piece in ranks else list(piece))]
    assert encoding.encode_ordinary(text) == expected


LINEAR_SCRIPT = r"""
import json, sys
import numpy as np
from tokenizer.kernels import KERNELS_DIRECTORY
from tokenizer.kernels.pretokenize import PATTERNS, char_class_table, pretokenize_into

CASES = {"upper run": "A", "mark then upper run": "\u0301" + "A" * 9, "modifier letter and upper": "ʰA",
         "upper then lower": "Aa", "spaces": " ", "newline and space": "\n ", "marks": "\u0301",
         "punctuation and slash": "!/", "digits": "7"}
counted = [0]

def local(frame, event, arg):
    counted[0] += event == "line"
    return local

def tracer(frame, event, arg):
    return local if frame.f_code.co_filename.startswith(KERNELS_DIRECTORY) else None

table, small, result = char_class_table(), int(sys.argv[1]), {}
for name, unit in CASES.items():
    work = []
    for size in (small, 10 * small):
        data = np.frombuffer((unit * size).encode() + b"x", np.uint8)
        ends = np.empty(len(data) + 1, np.int64)
        counted[0] = 0
        sys.settrace(tracer)
        pretokenize_into(table, PATTERNS["o200k"], data, 0, len(data), ends, 0)
        sys.settrace(None)
        work.append(counted[0])
    result[name] = work
print(json.dumps(result))
"""


def test_work_grows_linearly_on_long_runs():
    """The kernel run as plain Python (``SHARDPIECE_DISABLE_JIT=1``) on long runs, the lines it executes counted:
    ten times the text costs at most 1.5 x ten times the work (a rescan per character would cost a hundred)."""
    import json
    import os
    import subprocess
    import sys

    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {**os.environ, "SHARDPIECE_DISABLE_JIT": "1", "PYTHONPATH": repo}
    done = subprocess.run([sys.executable, "-c", LINEAR_SCRIPT, "200"], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    work = json.loads(done.stdout.strip().splitlines()[-1])
    assert all(small > 200 for small, _ in work.values()), work  # the trace did count the kernel's work
    superlinear = {name: (small, large) for name, (small, large) in work.items() if large > 15 * small}
    assert not superlinear, superlinear
