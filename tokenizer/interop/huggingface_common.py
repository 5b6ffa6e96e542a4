"""What the Hugging Face tokenizer.json exporters share: GPT-2's byte <-> character map (ByteLevel), control
tokens' text, and the post-processor that adds bos/eos and lists the control tokens.

    >>> encode_piece(b" a")
    'Ġa'
"""

from __future__ import annotations

import functools

from tokenizer.added_tokens import added_tokens_of
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
