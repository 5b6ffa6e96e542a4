"""Special tokens in text: tiktoken's ``allowed_special`` / ``disallowed_special`` for :class:`tokenizer.Tokenizer`.

A model's special tokens are its CONTROL pieces (``<s>``, ``</s>``, ``<pad>``, ...), its unknown piece ``<unk>``
(transformers treats it alike) and the added tokens marked ``special`` of a model imported from a tokenizer.json,
each by its text. By default text that spells one is ordinary text (the native rule; an imported model's own added
tokens keep matching as ``tokenizers`` matches them):

- ``allowed_special``: ``"all"`` or a set of token texts; those are cut out of the text and give their ids (matched
  literally, leftmost-longest, as :mod:`tokenizer.added_tokens` does), the rest stays ordinary text;
- ``disallowed_special``: ``"all"`` (every special token not allowed) or a set; :class:`DisallowedSpecialError` when
  the raw text contains one of them.

Differences from tiktoken: its default is ``disallowed_special="all"`` (it raises on special-token text unless told
otherwise); here the default is ``()``, because special-token text is ordinary text by default. A name that is no
special token of the model raises :class:`InputError` here (tiktoken ignores it in ``allowed_special``).

Example: with ``<s>`` as piece 257, ``resolve_allowed({"<s>": 257}, {"<s>"}) == frozenset({257})``.
"""

from __future__ import annotations

import copy
import re
from typing import AbstractSet, Literal, Union

from tokenizer.added_tokens import added_tokens_of
from tokenizer.errors import DisallowedSpecialError, InputError
from tokenizer.piece_types import PieceType

#: What ``allowed_special`` and ``disallowed_special`` accept: ``"all"`` or a collection of token texts.
SpecialSet = Union[Literal["all"], AbstractSet[str], "tuple[str, ...]", "list[str]"]


def special_tokens_of(model) -> dict[str, int]:
    """``{text: id}`` of the model's special tokens (see the module docstring); a text two ids share keeps the
    lowest. A byte-level model with specials ``<s>``, ``</s>`` -> ``{"<s>": 256, "</s>": 257}``."""
    found: dict[str, int] = {}
    kinds = model.types.tolist()
    for i, kind in enumerate(kinds):
        if kind in (PieceType.CONTROL, PieceType.UNKNOWN) and model.pieces[i]:
            try:
                found.setdefault(model.pieces[i].decode("utf-8"), i)
            except UnicodeDecodeError:
                continue  # a control piece that is no text cannot be spelled in text
    for token in added_tokens_of(model):
        if token.special:
            found.setdefault(token.content, token.id)
    return found


def _names(value, which: str, specials: dict[str, int]) -> frozenset[str]:
    if isinstance(value, str):
        if value != "all":
            raise InputError(f"{which}={value!r}: pass \"all\" or a set of special-token texts, e.g. "
                             f"{which}={{{value!r}}}")
        return frozenset(specials)
    try:
        names = frozenset(value)
    except TypeError:
        raise InputError(f"{which} must be \"all\" or a set of special-token texts, not "
                         f"{type(value).__name__}") from None
    unknown = sorted(n for n in names if n not in specials)
    if unknown:
        known = ", ".join(sorted(specials)[:8]) or "none"
        raise InputError(f"{which} names {unknown[0]!r}, which is not a special token of this model (its special "
                         f"tokens: {known}); see tok.special_tokens")
    return names


def resolve_allowed(specials: dict[str, int], allowed_special) -> frozenset[int]:
    """Ids of the tokens ``allowed_special`` names (``"all"`` or texts of ``specials``)."""
    return frozenset(specials[name] for name in _names(allowed_special, "allowed_special", specials))


def check_disallowed(specials: dict[str, int], allowed_special, disallowed_special, data: bytes,
                     patterns: dict) -> None:
    """Raise :class:`DisallowedSpecialError` naming the first token of ``disallowed_special`` (minus the allowed
    ones when it is ``"all"``, as tiktoken) that the raw text ``data`` contains; ``patterns`` caches the compiled
    searches by set of names."""
    names = _names(disallowed_special, "disallowed_special", specials)
    if disallowed_special == "all" and allowed_special:
        names = names - _names(allowed_special, "allowed_special", specials)
    if not names:
        return
    pattern = patterns.get(names)
    if pattern is None:
        ordered = sorted(names, key=lambda n: (-len(n), n))
        pattern = patterns[names] = re.compile(b"|".join(re.escape(n.encode("utf-8")) for n in ordered))
    match = pattern.search(data)
    if match is not None:
        raise DisallowedSpecialError(match.group().decode("utf-8"))


def model_matching(model, allowed_ids: frozenset[int]):
    """A copy of ``model`` whose added tokens also hold the special tokens ``allowed_ids`` (matched literally, not
    normalized, no strip, anywhere), as :func:`tokenizer.added_tokens.with_control_tokens_in_text` does for all of
    them; the tokens the model already lists keep their flags."""
    listed = {entry["id"] for entry in model.pretokenizer.get("added_tokens") or []}
    extra = [{"id": i, "special": True, "normalized": False, "lstrip": False, "rstrip": False, "single_word": False}
             for i in sorted(allowed_ids) if i not in listed]
    copied = copy.copy(model)
    copied.pretokenizer = {**model.pretokenizer, "added_tokens": sorted(
        [*(model.pretokenizer.get("added_tokens") or []), *extra], key=lambda entry: entry["id"])}
    return copied
