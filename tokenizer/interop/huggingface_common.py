"""What the Hugging Face tokenizer.json exporters share: GPT-2's byte <-> character map (ByteLevel), control
tokens' text, the post-processor that adds bos/eos and lists the control tokens, and what an import reads back
from it (:func:`template_of`) and from ``added_tokens`` (:func:`added_tokens_of_json`).

    >>> encode_piece(b" a")
    'Ġa'
"""

from __future__ import annotations

import functools
import json
from typing import Any

from tokenizer.added_tokens import FLAGS, AddedToken, added_tokens_of
from tokenizer.errors import ModelError, ModelFileError
from tokenizer.model import Model


@functools.lru_cache(maxsize=1)
def bytes_to_unicode() -> tuple[str, ...]:
    """GPT-2's byte -> printable character map: printable Latin-1 bytes map to themselves, the other 68 bytes to
    U+0100 onwards in byte order. ``bytes_to_unicode()[32] == "Ġ"``, ``bytes_to_unicode()[97] == "a"``."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(
        range(ord("®"), ord("ÿ") + 1))
    out, extra = {}, 0
    for b in range(256):
        if b in keep:
            out[b] = chr(b)
        else:
            out[b] = chr(256 + extra)
            extra += 1
    return tuple(out[b] for b in range(256))


@functools.lru_cache(maxsize=1)
def unicode_to_bytes() -> dict[str, int]:
    return {c: b for b, c in enumerate(bytes_to_unicode())}


def encode_piece(piece: bytes) -> str:
    """A piece's bytes as the ByteLevel string: ``encode_piece(b" a") == "Ġa"``."""
    table = bytes_to_unicode()
    return "".join(table[b] for b in piece)


def decode_piece(text: str, source: str = "<tokenizer.json>") -> bytes:
    table = unicode_to_bytes()
    try:
        return bytes(table[c] for c in text)
    except KeyError as exc:
        raise ModelFileError(source, f"token {text!r} has the character {exc.args[0]!r}, which the ByteLevel "
                             "alphabet does not contain: the file is not a byte-level tokenizer") from None


# ---------------------------------------------------------------------------------------------- export
#: The score of a control token's Unigram vocabulary entry: no segmentation through it can win over the byte
#: pieces every byte-level model has, so text that spells a control token stays ordinary text, as natively.
CONTROL_SCORE = -1e9


def control_text(model: Model, i: int) -> str:
    try:
        return model.pieces[i].decode("utf-8")
    except UnicodeDecodeError:
        raise ModelError(f"control piece {i} ({model.pieces[i]!r}) is not UTF-8 text: it cannot be a token of a "
                         "tokenizer.json") from None


def post_processor(model: Model, controls: dict[int, str]) -> dict | None:
    """The ``TemplateProcessing`` post-processor: ``bos $A eos`` (each where the model has it, as ``tokenize
    --add-bos --add-eos`` writes), ``bos $A eos bos $B eos`` for pairs; its ``special_tokens`` list every control
    token (the ones the templates use and the rest), which is how an import knows them. None when there is
    nothing to list."""
    texts = {**controls, **{t.id: t.content for t in added_tokens_of(model)}}
    ends = [(model.bos_id, "before"), (model.eos_id, "after")]
    ends = [(i, where) for i, where in ends if i >= 0 and i in texts]
    if not ends and not controls:
        return None

    def sequence(name: str, type_id: int) -> list[dict]:
        items = [{"Sequence": {"id": name, "type_id": type_id}}]
        for i, where in ends:
            item = {"SpecialToken": {"id": texts[i], "type_id": type_id}}
            items = [item] + items if where == "before" else items + [item]
        return items

    listed = {i: texts[i] for i in sorted(set(controls) | {i for i, _ in ends})}
    return {"type": "TemplateProcessing", "single": sequence("A", 0), "pair": sequence("A", 0) + sequence("B", 1),
            "special_tokens": {text: {"id": text, "ids": [i], "tokens": [text]} for i, text in listed.items()}}


def added_token_entries(model: Model) -> list[dict]:
    """The model's own added tokens (an import's, or the control tokens of
    :func:`~tokenizer.added_tokens.with_control_tokens_in_text`) as ``added_tokens`` entries, by id."""
    return [{"id": t.id, "content": t.content, "single_word": t.single_word, "lstrip": t.lstrip, "rstrip": t.rstrip,
             "normalized": t.normalized, "special": t.special}
            for t in sorted(added_tokens_of(model), key=lambda t: t.id)]


def require_distinct_texts(texts) -> None:
    """Raise :class:`ModelError` unless the token strings ``texts`` are distinct: a tokenizer.json maps each string to
    one id. ``require_distinct_texts(["a", "<s>"])`` passes; ``["<s>", "<s>"]`` raises."""
    texts = list(texts)
    if len(set(texts)) != len(texts):
        raise ModelError("two pieces map to the same token string (a control token spells a learned piece): "
                         "rename the control token when training (--special-tokens)")


def template_of(node: Any) -> dict:
    """What an import takes from a ``TemplateProcessing`` post-processor (alone or in a ``Sequence``):
    ``{"special": {id: text} of its single-id special tokens, "bos": id before $A or None, "eos": id after it}``.
    ``bos $A eos`` with ``<s>`` = 1 and ``</s>`` = 2 -> ``{"special": {1: "<s>", 2: "</s>"}, "bos": 1, "eos": 2}``."""
    found = {"special": {}, "bos": None, "eos": None}
    if isinstance(node, dict) and node.get("type") == "Sequence":
        for item in node.get("processors") or []:
            if isinstance(item, dict) and item.get("type") == "TemplateProcessing":
                node = item
    if not isinstance(node, dict) or node.get("type") != "TemplateProcessing":
        return found
    for text, entry in (node.get("special_tokens") or {}).items():
        ids = entry.get("ids") if isinstance(entry, dict) else None
        if isinstance(ids, list) and len(ids) == 1 and isinstance(ids[0], int) and not isinstance(ids[0], bool):
            found["special"][ids[0]] = text
    by_text = {text: i for i, text in found["special"].items()}
    single = [item for item in node.get("single") or [] if isinstance(item, dict)]
    for index, item in enumerate(single):
        if "Sequence" in item:
            before = single[index - 1].get("SpecialToken", {}) if index > 0 else {}
            after = single[index + 1].get("SpecialToken", {}) if index + 1 < len(single) else {}
            found["bos"] = by_text.get(before.get("id"))
            found["eos"] = by_text.get(after.get("id"))
            break
    return found


def added_tokens_of_json(entries: Any, source: str) -> list[AddedToken]:
    """The ``added_tokens`` list, checked: int ids, non-empty string contents, boolean flags (``normalized``
    defaults to ``not special``, the others to false, as ``tokenizers``' ``AddedToken.from``)."""
    tokens, seen = [], set()
    for entry in entries or []:
        if not isinstance(entry, dict) or isinstance(entry.get("id"), bool) or not isinstance(entry.get("id"), int) \
                or not isinstance(entry.get("content"), str) or not entry["content"]:
            raise ModelFileError(source, f"added token {json.dumps(entry)[:200]} needs an integer id and a "
                                 "non-empty string content")
        if entry["id"] < 0 or entry["id"] in seen:
            raise ModelFileError(source, f"added token id {entry['id']} is negative or listed twice")
        seen.add(entry["id"])
        special = bool(entry.get("special", False))
        flags = {"special": special, "normalized": entry.get("normalized", not special)}
        flags.update({flag: entry.get(flag, False) for flag in FLAGS if flag not in flags})
        if not all(isinstance(value, bool) for value in flags.values()):
            raise ModelFileError(source, f"added token {entry['id']} has non-boolean flags {flags}")
        tokens.append(AddedToken(entry["id"], entry["content"], **flags))
    return tokens
