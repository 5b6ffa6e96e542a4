"""allowed_special / disallowed_special against tiktoken (an Encoding built here from a byte-level BPE model's
merges, nothing downloaded), and decode's skip_special_tokens."""

from __future__ import annotations

import pytest

from tests.tokenizer.sample_models import sample_texts
from tokenizer import DisallowedSpecialError, InputError

tiktoken = pytest.importorskip("tiktoken")

GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def tiktoken_twin(tok):
    """``(encoding, to_ours)``: a tiktoken Encoding with the model's merges as ranks and its special tokens, and
    the map from tiktoken's ids to ours."""
    left, right, merged = tok.compiled.byte_level.merges
    ranks = {bytes([b]): b for b in range(256)}
    for piece in merged.tolist():
        ranks.setdefault(tok.model.pieces[piece], len(ranks))
    specials = {text: len(ranks) + k for k, text in enumerate(sorted(tok.special_tokens))}
    to_ours = {rank: tok.piece_to_id(piece) for piece, rank in ranks.items()}
    to_ours.update({specials[text]: tok.special_tokens[text] for text in specials})
    encoding = tiktoken.Encoding("shardpiece-test", pat_str=GPT2_PATTERN, mergeable_ranks=ranks,
                                 special_tokens=specials)
    return encoding, to_ours


@pytest.fixture(scope="module")
def byte_level(tokenizers):
    return tokenizers["bpe byte_level"]


def texts_with_specials() -> list[str]:
    lines = sample_texts(12)
    out = []
    for k, line in enumerate(lines):
        cut = len(line) // 2
        out.append([f"{line[:cut]}<s>{line[cut:]}", f"<s>{line}</s>", f"{line[:cut]}<pad>{line[cut:]}</s>",
                    line, f"{line}<s<s>></s>"][k % 5])
    return out


CASES = [
    {"allowed_special": set(), "disallowed_special": ()},
    {"allowed_special": "all", "disallowed_special": ()},
    {"allowed_special": {"<s>"}, "disallowed_special": ()},
    {"allowed_special": {"<s>", "</s>"}, "disallowed_special": ()},
    {"allowed_special": set(), "disallowed_special": "all"},
    {"allowed_special": {"<s>"}, "disallowed_special": "all"},
    {"allowed_special": set(), "disallowed_special": {"</s>"}},
    {"allowed_special": {"<s>"}, "disallowed_special": {"<pad>"}},
    {"allowed_special": "all", "disallowed_special": "all"},
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"allowed={c['allowed_special']}-disallowed="
                                                      f"{c['disallowed_special']}")
def test_special_arguments_mean_what_tiktokens_mean(byte_level, case):
    encoding, to_ours = tiktoken_twin(byte_level)
    compared = 0
    for text in texts_with_specials():
        if [to_ours[r] for r in encoding.encode_ordinary(text)] != byte_level.encode(text):
            continue  # tiktoken merges any pair whose concatenation is a token; this model replays its merges
        compared += 1
        try:
            theirs = [to_ours[r] for r in encoding.encode(text, **case)]
        except ValueError:
            with pytest.raises(DisallowedSpecialError, match="pass allowed_special="):
                byte_level.encode(text, **case)
            with pytest.raises(DisallowedSpecialError):
                byte_level.encode_batch([text, "plain"], **case)
            continue
        assert byte_level.encode(text, **case) == theirs, text
        assert byte_level.encode_batch(["plain", text], **case)[1] == theirs
        ids, _ = byte_level.encode_with_offsets(text, **case)
        assert ids == theirs
    assert compared >= len(texts_with_specials()) // 2


def test_tiktoken_default_raises_where_disallowed_all_does(byte_level):
    encoding, to_ours = tiktoken_twin(byte_level)
    with pytest.raises(ValueError):
        encoding.encode("a<s>b")
    with pytest.raises(DisallowedSpecialError, match="'<s>'"):
        byte_level.encode("a<s>b", disallowed_special="all")
    # the defaults differ: here special-token text is ordinary text unless disallowed_special says otherwise
    assert byte_level.encode("a<s>b") == [to_ours[r] for r in encoding.encode("a<s>b", disallowed_special=())]


def test_special_names_are_checked(byte_level):
    with pytest.raises(InputError, match="not a special token of this model"):
        byte_level.encode("x", allowed_special={"<bos>"})
    with pytest.raises(InputError, match='pass "all" or a set'):
        byte_level.encode("x", allowed_special="<s>")
    assert byte_level.special_tokens == {"<pad>": byte_level.pad_id, "<s>": byte_level.bos_id,
                                         "</s>": byte_level.eos_id}


def test_decode_skips_special_tokens(tokenizers):
    for name, tok in tokenizers.items():
        text = "a b"
        ids = tok.encode(text, add_bos=True, add_eos=True)
        assert tok.decode(ids, skip_special_tokens=True) == text, name
        with_specials = tok.encode("x<s>y", allowed_special={"<s>"})
        assert tok.bos_id in with_specials
        assert tok.decode(with_specials, skip_special_tokens=True) == tok.decode(
            [i for i in with_specials if i != tok.bos_id])
        assert tok.decode_batch([ids, with_specials], skip_special_tokens=True) == [
            text, tok.decode(with_specials, skip_special_tokens=True)]
