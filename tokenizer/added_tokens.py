"""Added tokens: literal tokens cut out of the text before normalization and segmentation (Hugging Face
``tokenizers`` semantics, for models imported from a ``tokenizer.json``).

A model lists them in ``model.pretokenizer["added_tokens"]``: one dict per token, sorted by id,
``{"id": int, "special": bool, "normalized": bool, "lstrip": bool, "rstrip": bool, "single_word": bool}``; the
token's content is the piece ``model.pieces[id]`` (UTF-8). Special tokens are CONTROL pieces, the others
USER_DEFINED (an imported unknown token keeps UNKNOWN); the segmenter never matches them, the splitter does.

Splitting one text, as ``tokenizers``' ``AddedVocabulary.extract_and_normalize`` does:

1. the tokens with ``normalized`` false are found in the raw text, leftmost first, the longest at one position,
   matches never overlapping (the scan goes on after each match, kept or not);
2. each stretch of text between them is normalized, and the tokens with ``normalized`` true are found in it the
   same way (their pattern is their normalized content);
3. the stretches left are segmented independently (pre-tokenizer and model), the tokens give their ids.

A match of a ``single_word`` token is dropped unless it has no word character (Unicode ``\\w``) right before and
after it; ``lstrip`` widens a match over the white space before it (not into the previous match), ``rstrip`` over
the white space after it; that white space then belongs to the token and is not encoded.

Example (hand-checkable): tokens ``<s>`` (id 5, lstrip) and ``ab`` (id 6): ``split(b"x <s>abc")`` ->
``[b"x", 5, 6, b"c"]``.
"""

from __future__ import annotations

import copy
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from tokenizer.errors import ModelError
from tokenizer.piece_types import PieceType

FLAGS = ("special", "normalized", "lstrip", "rstrip", "single_word")

# Unicode White_Space (what ``\s`` means in the Rust regex crate; Python's str.isspace also accepts U+001C..1F)
WHITE_SPACE = frozenset("\t\n\x0b\x0c\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B)))
                        + "\u2028\u2029\u202f\u205f\u3000")
# Other_Alphabetic characters outside the mark categories: circled and squared Latin letters
_ALPHABETIC_SYMBOLS = ((0x24B6, 0x24E9), (0x1F130, 0x1F149), (0x1F150, 0x1F169), (0x1F170, 0x1F189))


def is_word_char(char: str) -> bool:
    """Unicode ``\\w`` as the Rust regex crate defines it: Alphabetic, Mark, Decimal_Number, Connector_Punctuation
    or Join_Control. ``is_word_char("é") is True``, ``is_word_char("-") is False``. Characters come from Python's
    Unicode database (14.0 in Python 3.11): a code point assigned in a later Unicode version counts as no word
    character here, where ``tokenizers`` (a newer version) may count it as one."""
    category = unicodedata.category(char)
    if category[0] in "LM" or category in ("Nd", "Nl", "Pc") or char in "\u200c\u200d":
        return True
    code = ord(char)
    return any(low <= code <= high for low, high in _ALPHABETIC_SYMBOLS)


@dataclass(frozen=True)
class AddedToken:
    id: int
    content: str
    special: bool = False
    normalized: bool = True
    lstrip: bool = False
    rstrip: bool = False
    single_word: bool = False

    def spec(self) -> dict[str, Any]:
        """The entry stored in ``model.pretokenizer["added_tokens"]`` (the content is the piece itself)."""
        return {"id": self.id, **{flag: getattr(self, flag) for flag in FLAGS}}


def added_tokens_of(model) -> list[AddedToken]:
    """The model's added tokens, validated (raises :class:`ModelError` naming the bad entry); ``[]`` if none."""
    spec = model.pretokenizer.get("added_tokens")
    if spec is None:
        return []
    if not isinstance(spec, list):
        raise ModelError("pretokenizer added_tokens must be a list of {id, special, normalized, lstrip, rstrip, "
                         "single_word} dicts: re-import the tokenizer.json")
    tokens, seen = [], set()
    for entry in spec:
        if not isinstance(entry, dict) or isinstance(entry.get("id"), bool) or not isinstance(entry.get("id"), int):
            raise ModelError(f"added token entry {entry!r} has no integer id: re-import the tokenizer.json")
        i = entry["id"]
        if not 0 <= i < model.vocab_size or i in seen:
            raise ModelError(f"added token id {i} is outside the vocabulary of {model.vocab_size} pieces or "
                             "listed twice: re-import the tokenizer.json")
        seen.add(i)
        flags = {flag: entry.get(flag) for flag in FLAGS}
        if not all(isinstance(value, bool) for value in flags.values()):
            raise ModelError(f"added token {i} needs boolean flags {', '.join(FLAGS)}, got {flags}")
        try:
            content = model.pieces[i].decode("utf-8")
        except UnicodeDecodeError:
            raise ModelError(f"added token {i} ({model.pieces[i]!r}) is not valid UTF-8") from None
        if not content:
            raise ModelError(f"added token {i} is empty: an added token needs at least one character")
        tokens.append(AddedToken(i, content, **flags))
    return tokens


def with_control_tokens_in_text(model):
    """A copy of ``model`` whose control tokens (CONTROL pieces, e.g. ``<s>``, and the unknown piece ``<unk>``, which
    transformers treats alike) are also matched in text, as added special tokens are: the explicit opt-in to the default rule, under which text that spells a control token is
    ordinary text. Tokens the model already lists keep their flags; the others match literally (not normalized, no
    strip, anywhere). With ``<s>`` as piece 1: ``Tokenizer(with_control_tokens_in_text(m)).encode("a<s>")`` ends
    with ``1``, ``Tokenizer(m).encode("a<s>")`` spells ``<s>`` with ordinary pieces."""
    listed = {entry["id"] for entry in model.pretokenizer.get("added_tokens") or []}
    extra = [{"id": i, "special": True, "normalized": False, "lstrip": False, "rstrip": False, "single_word": False}
             for i, kind in enumerate(model.types.tolist())
             if kind in (PieceType.CONTROL, PieceType.UNKNOWN) and i not in listed and model.pieces[i]]
    copied = copy.copy(model)
    copied.pretokenizer = {**model.pretokenizer, "added_tokens": sorted(
        [*(model.pretokenizer.get("added_tokens") or []), *extra], key=lambda entry: entry["id"])}
    added_tokens_of(copied)  # validates (a control piece that is not UTF-8 text is refused here)
    return copied


class _Matcher:
    """Leftmost-longest literal search (``re`` alternation, longest patterns first), on str and on bytes."""

    def __init__(self, tokens: list[AddedToken], pattern_of: Callable[[AddedToken], str]):
        self.token_of: dict[str, AddedToken] = {}
        for token in tokens:
            pattern = pattern_of(token)
            if pattern:
                self.token_of.setdefault(pattern, token)
        ordered = sorted(self.token_of, key=lambda p: (-len(p), p))
        self.text_regex = re.compile("|".join(map(re.escape, ordered)))
        self.bytes_regex = re.compile(b"|".join(re.escape(p.encode("utf-8", "surrogateescape")) for p in ordered))

    def find(self, text: str) -> list[tuple[int | None, int, int]]:
        """``(id or None, start, stop)`` splits covering ``text``, as ``tokenizers``' ``find_matches``."""
        splits: list[tuple[int | None, int, int]] = []
        start_offset, length = 0, len(text)
        for match in self.text_regex.finditer(text):
            start, stop = match.span()
            token = self.token_of[match.group()]
            if token.single_word:
                if (start > 0 and is_word_char(text[start - 1])) or (stop < length and is_word_char(text[stop])):
                    continue
            if token.lstrip:
                new_start = start
                while new_start > 0 and text[new_start - 1] in WHITE_SPACE:
                    new_start -= 1
                start = max(new_start, start_offset)
            if token.rstrip:
                while stop < length and text[stop] in WHITE_SPACE:
                    stop += 1
            if start_offset < start:
                splits.append((None, start_offset, start))
            splits.append((token.id, start, stop))
            start_offset = stop
        if start_offset != length:
            splits.append((None, start_offset, length))
        return splits


class AddedTokenSplitter:
    """Cuts a model's added tokens out of texts (see the module docstring). ``normalizer`` is the model's
    :class:`~tokenizer.normalizers.Normalizer`; the pieces it returns are already normalized."""

    def __init__(self, tokens: list[AddedToken], normalizer):
        self.normalizer = normalizer
        identity = normalizer.is_identity

        def normalized_pattern(token: AddedToken) -> str:
            if identity:
                return token.content
            return normalizer.normalize(token.content.encode("utf-8")).decode("utf-8")

        raw = [t for t in tokens if not t.normalized]
        normalized = [t for t in tokens if t.normalized]
        self.raw = _Matcher(raw, lambda t: t.content) if raw else None
        self.normalized = _Matcher(normalized, normalized_pattern) if normalized else None
        # decoding gives what the token matches: the normalized content for normalized tokens, as tokenizers does
        self.decode_bytes = {t.id: (normalized_pattern(t) if t.normalized else t.content).encode("utf-8")
                             for t in tokens}

    def needs_split(self, data: bytes, normalized: bytes) -> bool:
        """Whether :meth:`split` of ``data`` (whose normalized form is ``normalized``) finds any token; when not,
        the text is encoded as one piece, ``normalized``."""
        return bool((self.raw is not None and self.raw.bytes_regex.search(data))
                    or (self.normalized is not None and self.normalized.bytes_regex.search(normalized)))

    def split(self, data: bytes) -> list[bytes | int]:
        """The normalized stretches (bytes, never empty) and token ids of one text, in order."""
        text = data.decode("utf-8", "surrogateescape")  # invalid bytes stay (as U+DC80..), never match, round trip
        stretches = self.raw.find(text) if self.raw is not None else [(None, 0, len(text))]
        out: list[bytes | int] = []
        for token_id, start, stop in stretches:
            if token_id is not None:
                out.append(token_id)
                continue
            piece = text[start:stop].encode("utf-8", "surrogateescape")
            if not self.normalizer.is_identity:
                piece = self.normalizer.normalize(piece)
            if self.normalized is None:
                if piece:
                    out.append(piece)
                continue
            piece_text = piece.decode("utf-8", "surrogateescape")
            for inner_id, begin, end in self.normalized.find(piece_text):
                if inner_id is not None:
                    out.append(inner_id)
                elif end > begin:
                    out.append(piece_text[begin:end].encode("utf-8", "surrogateescape"))
        return out

    def candidate_documents(self, data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """Indices (int64, ascending) of the packed texts ``data`` (uint8), ``offsets`` (n + 1) that may contain a
        token: a superset of those :meth:`split` cuts. One C-speed scan of the whole buffer per matcher; a text is
        a candidate when a match overlaps it (a match across two texts still marks both, so none is missed)."""
        offsets = np.asarray(offsets, dtype=np.int64)
        n = len(offsets) - 1
        marks = np.zeros(n + 1, dtype=np.int64)
        scans = []
        if self.raw is not None:
            scans.append((self.raw, data, offsets))
        if self.normalized is not None:
            if self.normalizer.is_identity:
                scans.append((self.normalized, data, offsets))
            else:
                scans.append((self.normalized, *self.normalizer.normalize_batch(data, offsets)))
        for matcher, buffer, bounds in scans:
            bounds = np.asarray(bounds, dtype=np.int64)
            first, last = int(bounds[0]), int(bounds[-1])
            spans = [m.span() for m in matcher.bytes_regex.finditer(np.asarray(buffer[first:last]).tobytes())]
            if not spans:
                continue
            span = np.array(spans, dtype=np.int64) + first
            low = np.searchsorted(bounds[1:], span[:, 0], side="right")    # first text ending after the start
            high = np.searchsorted(bounds[:-1], span[:, 1], side="left")   # one past the last text starting before
            np.add.at(marks, low, 1)
            np.add.at(marks, high, -1)
        return np.flatnonzero(np.cumsum(marks[:n]) > 0).astype(np.int64)
