"""tokenizer.json for SentencePiece-style models (pretokenizer ``sentencepiece``): unigram and BPE, with the ids
of the native encoder (and of sentencepiece, for the models that export there) on every line.

The normalizer reproduces SentencePiece's whitespace rules, which only ever touch ``' '`` (tokenizers' ``Strip``
would trim tabs and newlines too): ``Precompiled`` (the charsmap, when the model has one), then with
``remove_extra_whitespaces`` ``Replace(\\A +, "")`` and ``Replace( {2,}, " ")``, then ``Replace(" ", "▁")``, then
with ``add_dummy_prefix`` ``Prepend("▁")`` (tokenizers prepends only to non-empty text, as SentencePiece), then
with ``remove_extra_whitespaces`` ``Replace(▁+\\z, "")``. No pre-tokenizer: the whole text is one lattice (unigram)
or one merge sequence (BPE), as in SentencePiece.

- Unigram: ``vocab`` in id order with the model's float32 scores; unknown, control, byte and unused pieces get
  ``SP_HIDDEN_SCORE`` so that no text reaches them (SentencePiece never matches them; tokenizers puts every entry
  in its trie); ``unk_id`` and ``byte_fallback`` as the model's. Exact ties: the lattice sums match only when both
  sides sum exactly, which the unigram models trained here guarantee (scores are multiples of 2**-8, see
  :data:`tokenizer.model.SCORE_STEP_FLOAT32_SUMS`); a model imported from sentencepiece keeps its own scores.
- BPE (the byte-based models ``train --algorithm bpe --pretokenizer sentencepiece`` writes: all 256 bytes are
  pieces, characters are merges of their bytes): ByteLevel characters (regex off) after the normalizer, and the
  merges SentencePiece's rule implies — every split ``(left, right)`` of a piece into two pieces, ranked by the
  merged piece's score (best first), then its id, then the split — so tokenizers' lowest-rank-first merging is
  SentencePiece's best-score-first merging.

Control tokens follow the exporters' one policy (:mod:`tokenizer.interop.huggingface_common`): vocabulary entries no
text reaches, listed in the post-processor with bos/eos.

Import (:func:`model_from_sentencepiece_json`, used by ``Tokenizer.load``): a tokenizer.json of exactly this shape
(the normalizer ``Sequence`` above, no pre-tokenizer for Unigram, ``ByteLevel`` without regex for BPE) gives back a
SentencePiece-style model with the same ids: Unigram pieces with their scores (``SP_HIDDEN_SCORE`` entries that are
no unknown, control or byte piece become UNUSED), BPE pieces scored ``-rank`` of the first merge that makes them.
"""

from __future__ import annotations

import base64
import re
from typing import Any

import numpy as np

from tokenizer.errors import ModelError, ModelFileError
from tokenizer.interop.huggingface_common import (added_token_entries, added_tokens_of_json, control_text,
                                                  decode_piece, encode_piece, post_processor, require_distinct_texts,
                                                  template_of)
from tokenizer.model import Model, PieceType

#: Score of the pieces SentencePiece never matches (unknown, control, byte, unused) in an exported Unigram vocab:
#: far below any path of learned pieces, yet small enough that float64 sums keep the learned scores' precision.
SP_HIDDEN_SCORE = -1000.0


def _normalizer(model: Model) -> dict:
    spec = model.pretokenizer
    if spec.get("treat_whitespace_as_suffix"):
        raise ModelError("treat_whitespace_as_suffix has no tokenizer.json equivalent: export to SentencePiece")
    if not spec.get("escape_whitespaces", True):
        raise ModelError("a model that does not escape spaces has no tokenizer.json equivalent here: export to "
                         "SentencePiece")
    name = model.normalizer.get("name", "identity")
    steps: list[dict[str, Any]] = []
    if name == "precompiled" and model.charsmap:
        steps.append({"type": "Precompiled", "precompiled_charsmap": base64.b64encode(model.charsmap).decode()})
    elif name not in ("identity", "precompiled"):
        raise ModelError(f"normalizer {name!r} of a SentencePiece-style model has no tokenizer.json equivalent here")
    squeeze = bool(spec.get("remove_extra_whitespaces"))
    if squeeze:
        steps += [{"type": "Replace", "pattern": {"Regex": "\\A +"}, "content": ""},
                  {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]
    steps.append({"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"})
    if spec.get("add_dummy_prefix"):
        steps.append({"type": "Prepend", "prepend": "\u2581"})
    if squeeze:
        steps.append({"type": "Replace", "pattern": {"Regex": "\u2581+\\z"}, "content": ""})
    return {"type": "Sequence", "normalizers": steps}


def _decoder(model: Model, byte_level: bool) -> dict:
    steps: list[dict[str, Any]] = []
    if byte_level:
        steps.append({"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False})
    steps.append({"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "})
    if model.byte_fallback:
        steps.append({"type": "ByteFallback"})
    if not byte_level:
        steps.append({"type": "Fuse"})
    if model.pretokenizer.get("add_dummy_prefix"):
        steps.append({"type": "Strip", "content": " ", "start": 1, "stop": 0})
    return {"type": "Sequence", "decoders": steps}


def _unigram(model: Model, listed: set[int]) -> dict:
    """The Unigram body; ``listed``: ids of the model's own added tokens (they may be USER_DEFINED)."""
    vocab = []
    for i, (piece, kind) in enumerate(zip(model.pieces, model.types.tolist())):
        if kind == PieceType.USER_DEFINED and i not in listed:
            raise ModelError("user-defined symbols have no exact tokenizer.json equivalent here: export to "
                             "SentencePiece")
        text = control_text(model, i)
        vocab.append([text, float(model.scores[i]) if kind == PieceType.NORMAL else SP_HIDDEN_SCORE])
    require_distinct_texts(text for text, _ in vocab)
    return {"type": "Unigram", "unk_id": model.unk_id if model.unk_id >= 0 else None, "vocab": vocab,
            "byte_fallback": bool(model.byte_fallback)}


def merges_by_score(model: Model) -> list[tuple[int, int]]:
    """SentencePiece's BPE as ranked merges: ``(left id, right id)`` for every split of a NORMAL piece into two
    NORMAL pieces, best merged score first, then the merged piece's id, then the split position. Pieces ``a``,
    ``b``, ``ab`` (score -1), ``abb`` (-2): ``[(a, b), (ab, b)]`` (``a`` + ``bb`` is no merge: ``bb`` is no piece)."""
    normal = model.types == PieceType.NORMAL
    index = {p: i for i, p in enumerate(model.pieces) if normal[i]}
    found = []
    for z in np.flatnonzero(normal).tolist():
        piece = model.pieces[z]
        for k in range(1, len(piece)):
            left, right = index.get(piece[:k]), index.get(piece[k:])
            if left is not None and right is not None:
                found.append((-float(model.scores[z]), z, k, left, right))
    found.sort()
    return [(left, right) for *_, left, right in found]


def _bpe(model: Model) -> dict:
    if any(model.piece_to_id(bytes([b])) < 0 for b in range(256)):
        raise ModelError("only the byte-based SentencePiece-style BPE models trained here (all 256 bytes are pieces) "
                         "export to tokenizer.json; export this one to SentencePiece")
    kinds = model.types.tolist()
    texts = []
    for i, (piece, kind) in enumerate(zip(model.pieces, kinds)):
        if kind not in (PieceType.NORMAL, PieceType.CONTROL):
            raise ModelError(f"piece {i} has type {PieceType(kind).name}: only NORMAL and CONTROL pieces export")
        texts.append(encode_piece(piece) if kind == PieceType.NORMAL else control_text(model, i))
    require_distinct_texts(texts)
    vocab = {text: i for i, text in enumerate(texts)}
    merges = [[encode_piece(model.pieces[a]), encode_piece(model.pieces[b])] for a, b in merges_by_score(model)]
    return {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
            "vocab": vocab, "merges": merges}


def sentencepiece_tokenizer_json(model: Model) -> dict[str, Any]:
    """The ``tokenizer.json`` object of a SentencePiece-style model (see the module docstring); raises
    :class:`ModelError` saying why a model cannot be exported."""
    added = added_token_entries(model)
    listed = {entry["id"] for entry in added}
    byte_level = model.algorithm == "bpe"
    body = _bpe(model) if byte_level else _unigram(model, listed)
    controls = {i: control_text(model, i) for i, kind in enumerate(model.types.tolist())
                if kind == PieceType.CONTROL and i not in listed}
    pre = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
            "normalizer": _normalizer(model), "pre_tokenizer": pre if byte_level else None,
            "post_processor": post_processor(model, controls), "decoder": _decoder(model, byte_level),
            "model": body}


BYTE_PIECE = re.compile(r"<0x[0-9A-F]{2}>\Z")


def _settings_of(normalizer: Any) -> tuple[bytes, dict] | None:
    """``(charsmap, pretokenizer spec)`` of a normalizer :func:`_normalizer` writes, or None for any other."""
    if not isinstance(normalizer, dict) or normalizer.get("type") != "Sequence":
        return None
    steps = list(normalizer.get("normalizers") or [])
    charsmap = b""
    if steps and steps[0].get("type") == "Precompiled":
        charsmap = base64.b64decode(steps.pop(0).get("precompiled_charsmap") or "")
    squeeze = [{"type": "Replace", "pattern": {"Regex": "\\A +"}, "content": ""},
               {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]
    remove_extra = steps[:2] == squeeze
    del steps[:2 if remove_extra else 0]
    if steps[:1] != [{"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]:
        return None
    del steps[:1]
    dummy = steps[:1] == [{"type": "Prepend", "prepend": "\u2581"}]
    del steps[:1 if dummy else 0]
    if remove_extra and steps[:1] == [{"type": "Replace", "pattern": {"Regex": "\u2581+\\z"}, "content": ""}]:
        del steps[:1]
    if steps:
        return None
    return charsmap, {"name": "sentencepiece", "add_dummy_prefix": dummy, "remove_extra_whitespaces": remove_extra,
                      "escape_whitespaces": True, "treat_whitespace_as_suffix": False}


def model_from_sentencepiece_json(obj: dict, source: str) -> Model | None:
    """The SentencePiece-style model of a tokenizer.json that :func:`sentencepiece_tokenizer_json` wrote (see the
    module docstring), or None when ``obj`` has another shape (a ``Sequence`` normalizer written elsewhere)."""
    settings = _settings_of(obj.get("normalizer"))
    body = obj.get("model") or {}
    pre = obj.get("pre_tokenizer")
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    if settings is None or (body.get("type"), pre) not in (("Unigram", None), ("BPE", byte_level)):
        return None
    charsmap, pretokenizer = settings
    template = template_of(obj.get("post_processor"))
    added_tokens = added_tokens_of_json(obj.get("added_tokens"), source)
    added = {t.id: t for t in added_tokens}
    controls = {i: text for i, text in template["special"].items() if i not in added}
    byte_fallback = bool(body.get("byte_fallback"))
    if body["type"] == "Unigram":
        entries = body.get("vocab") or []
        pieces = [text.encode("utf-8") for text, _ in entries]
        scores = np.array([score for _, score in entries], dtype=np.float32)
        types = np.full(len(pieces), PieceType.NORMAL, dtype=np.int8)
        for i, (text, score) in enumerate(entries):
            if byte_fallback and BYTE_PIECE.match(text):
                types[i] = PieceType.BYTE
            elif score == SP_HIDDEN_SCORE:
                types[i] = PieceType.UNUSED
        if body.get("unk_id") is not None:
            types[int(body["unk_id"])] = PieceType.UNKNOWN
    else:
        vocab = body.get("vocab") or {}
        pieces = [b""] * len(vocab)
        for text, i in vocab.items():
            pieces[i] = text.encode("utf-8") if i in controls or i in added else decode_piece(text, source)
        types = np.full(len(pieces), PieceType.NORMAL, dtype=np.int8)
        scores = np.zeros(len(pieces), dtype=np.float32)
        index = {p: i for i, p in enumerate(pieces) if i not in controls}
        for rank, merge in reversed(list(enumerate(body.get("merges") or []))):
            left, right = merge.split(" ", 1) if isinstance(merge, str) else merge
            merged = index.get(decode_piece(left, source) + decode_piece(right, source))
            if merged is None:
                raise ModelFileError(source, f"merge {rank} ({left!r}, {right!r}) makes no token of the vocabulary")
            scores[merged] = -float(rank)
    for i in controls:
        types[i], scores[i] = PieceType.CONTROL, 0.0
    for token in added_tokens:
        pieces[token.id] = token.content.encode("utf-8")
        types[token.id] = PieceType.CONTROL if token.special else PieceType.USER_DEFINED
    named = {text: i for i, text in sorted(controls.items(), reverse=True)}
    unknown = np.flatnonzero(types == PieceType.UNKNOWN)
    try:
        model = Model(pieces, scores, types, algorithm=body["type"].lower(),
                      normalizer={"name": "precompiled" if charsmap else "identity"}, charsmap=charsmap,
                      pretokenizer=pretokenizer, unk_id=int(unknown[0]) if len(unknown) else -1,
                      bos_id=template["bos"] if template["bos"] is not None else named.get("<s>", -1),
                      eos_id=template["eos"] if template["eos"] is not None else named.get("</s>", -1),
                      pad_id=named.get("<pad>", -1), byte_fallback=byte_fallback,
                      provenance={"imported_from": "tokenizer.json"})
        if added_tokens:
            model.pretokenizer["added_tokens"] = [t.spec() for t in sorted(added_tokens, key=lambda t: t.id)]
            model.validate()
    except ModelError as exc:
        raise ModelFileError(source, f"inconsistent tokenizer.json: {exc}") from None
    return model
