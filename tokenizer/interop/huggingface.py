"""Hugging Face ``tokenizer.json`` export and import for byte-level models.

Export (:func:`to_tokenizer_json`):

- a byte-level BPE model (``pretokenizer {"name": "byte_level"}``) -> ``model.type = "BPE"`` with ``vocab`` and
  ``merges`` in rank order, behind a ``ByteLevel`` pre-tokenizer (``use_regex`` on for the GPT-2 pattern; for the
  Llama-3 pattern a ``Split`` with that regex, then ``ByteLevel`` without it);
- a byte-level unigram model (BytePiece, or any unigram model whose 256 single bytes are pieces and which has no
  SentencePiece pre-tokenizer) -> ``model.type = "Unigram"`` behind ``ByteLevel`` with the regex off.

Why this is exact: ``ByteLevel`` maps every byte to one printable character (GPT-2's ``bytes_to_unicode``, a
bijection), so a piece's bytes map to one string and the pieces' matches in the mapped text are exactly their
matches in the bytes, position for position. The Unigram model's Viterbi then sees the same lattice our byte
Viterbi sees (same scores: the float64 values our encoder uses, written with ``repr`` precision; ties go to the
first candidate in both). Special (CONTROL) tokens become ``added_tokens`` with ``special: true`` at their ids;
a model's own added tokens (``pretokenizer["added_tokens"]``, from an import) are written back with their flags.

Import (:func:`model_from_tokenizer_json`, used by ``Tokenizer.load``): BPE or Unigram models behind ``ByteLevel``
(GPT-2 regex, or no regex), or ``Sequence[Split(Llama-3 regex, Isolated), ByteLevel(no regex)]``, with no
normalizer or NFC/NFKC. BPE merges become scores ``-rank`` on the merged pieces plus the split of each merge
(``provenance["bpe_merges"]``), and the encoder replays them as ``tokenizers`` does; ``ignore_merges`` (a whole
pre-token that is a piece is emitted as is) is honoured. ``added_tokens`` become CONTROL (special) or
USER_DEFINED pieces listed with their flags in ``pretokenizer["added_tokens"]``, and are cut out of the text before
normalization and pre-tokenization exactly as ``tokenizers`` does (:mod:`tokenizer.added_tokens`: ``normalized``,
``lstrip``, ``rstrip``, ``single_word``, leftmost-longest). They decode to their (normalized) content, special ones
too; ``tokenizers``' ByteLevel decoder instead turns non-ASCII content into mojibake and skips special tokens by
default. Unigram scores are kept as the float64 values of the file (``provenance["float64_scores"]``) and summed
in float64, as ``tokenizers`` does, so near-ties break the same way.

Example::

    tok = Tokenizer.load("gpt2/tokenizer.json")          # by content
    save_tokenizer_json(model, "out/tokenizer.json")
"""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from tokenizer.added_tokens import AddedToken, added_tokens_of
from tokenizer.interop.huggingface_common import (CONTROL_SCORE, added_token_entries, added_tokens_of_json,
                                                  control_text, decode_piece, encode_piece, post_processor,
                                                  require_distinct_texts, template_of)
from tokenizer.interop.huggingface_sentencepiece import model_from_sentencepiece_json, sentencepiece_tokenizer_json
from tokenizer.errors import ModelError, ModelFileError
from tokenizer.pretokenize_patterns import PATTERN_TEXT
from tokenizer.files import write_atomic
from tokenizer.model import Model, PieceType


_NORMALIZERS = {"identity": None, "nfc": {"type": "NFC"}, "nfkc": {"type": "NFKC"}}


def _byte_level(use_regex: bool) -> dict:
    return {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": use_regex}


def _pre_tokenizer(pattern: str | None) -> dict:
    if pattern is None:
        return _byte_level(False)
    if pattern == "gpt2":
        return _byte_level(True)
    return {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": PATTERN_TEXT[pattern]}, "behavior": "Isolated", "invert": False},
        _byte_level(False)]}


def to_tokenizer_json(model: Model) -> dict[str, Any]:
    """The ``tokenizer.json`` object of a byte-level model (see the module docstring) or of a SentencePiece-style
    one (:mod:`tokenizer.interop.huggingface_sentencepiece`); raises
    :class:`ModelError` saying why a model cannot be exported."""
    if model.pretokenizer.get("name") == "sentencepiece":
        return sentencepiece_tokenizer_json(model)
    name = model.normalizer.get("name", "identity")
    if name not in _NORMALIZERS:
        raise ModelError(f"normalizer {name!r} has no tokenizer.json equivalent here: export identity, nfc or nfkc "
                         "models, or export to SentencePiece")
    spec = model.pretokenizer
    if spec.get("name") not in ("none", "byte_level"):
        raise ModelError(f"pre-tokenizer {spec.get('name')!r} has no tokenizer.json equivalent: export this model to "
                         "SentencePiece")
    if any(model.piece_to_id(bytes([b])) < 0 for b in range(256)):
        raise ModelError("the model lacks some of the 256 single-byte pieces, so it is not byte level: export it to "
                         "SentencePiece")
    kinds = model.types.tolist()
    own_added = {t.id: t for t in added_tokens_of(model)}
    for i, kind in enumerate(kinds):
        own_user_defined = i in own_added and kind == PieceType.USER_DEFINED
        if kind not in (PieceType.NORMAL, PieceType.CONTROL) and not own_user_defined:
            raise ModelError(f"piece {i} has type {PieceType(kind).name}; only NORMAL and CONTROL pieces (and added "
                             "tokens) export to a byte-level tokenizer.json")
    added = added_token_entries(model)
    controls = {i: control_text(model, i) for i, kind in enumerate(kinds)
                if kind == PieceType.CONTROL and i not in own_added}
    pattern = spec.get("pattern") if spec.get("name") == "byte_level" else None
    if model.algorithm == "bpe":
        if spec.get("name") != "byte_level":
            raise ModelError("only byte_level BPE models (merge replay) export as a tokenizer.json BPE model")
        from tokenizer.compiled import CompiledModel  # (here: reading a tokenizer.json needs no kernels)

        compiled = CompiledModel(model).byte_level
        texts = [(encode_piece(piece) if kind == PieceType.NORMAL else controls.get(i))
                 or piece.decode("utf-8", "replace") for i, (piece, kind) in enumerate(zip(model.pieces, kinds))]
        require_distinct_texts(texts)
        vocab = {text: i for i, text in enumerate(texts)}
        left, right, _ = compiled.merges
        merges = [[encode_piece(model.pieces[a]), encode_piece(model.pieces[b])]
                  for a, b in zip(left.tolist(), right.tolist())]
        body = {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                "vocab": vocab, "merges": merges}
    else:
        from tokenizer.compiled import CompiledModel

        compiled = CompiledModel(model)
        scores = np.asarray(compiled.piece_score, dtype=np.float64)
        vocab_list = []
        for i, (piece, kind) in enumerate(zip(model.pieces, kinds)):
            if kind == PieceType.NORMAL:
                vocab_list.append([encode_piece(piece), float(scores[i])])
            elif i in controls:
                vocab_list.append([controls[i], CONTROL_SCORE])
            else:
                vocab_list.append([piece.decode("utf-8", "replace"), 0.0])
        require_distinct_texts(text for text, _ in vocab_list)
        body = {"type": "Unigram", "unk_id": None, "vocab": vocab_list, "byte_fallback": False}
    return {"version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
            "normalizer": _NORMALIZERS[name], "pre_tokenizer": _pre_tokenizer(pattern),
            "post_processor": post_processor(model, controls),
            "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
            "model": body}


def save_tokenizer_json(model: Model, path: str | os.PathLike) -> None:
    """Write :func:`to_tokenizer_json` to ``path`` atomically (UTF-8, compact)."""
    text = json.dumps(to_tokenizer_json(model), ensure_ascii=False, separators=(",", ":"))
    write_atomic(path, text.encode("utf-8"), what="tokenizer.json")


def special_tokens_map(model: Model) -> dict[str, str]:
    """``{"bos_token": ..., "eos_token": ..., "unk_token": ..., "pad_token": ...}`` for the specials the model has."""
    found = {}
    for name in ("bos", "eos", "unk", "pad"):
        i = getattr(model, f"{name}_id")
        if i >= 0:
            found[f"{name}_token"] = model.pieces[i].decode("utf-8", "replace")
    return found


def tokenizer_config(model: Model) -> dict[str, Any]:
    """``tokenizer_config.json`` for transformers' ``AutoTokenizer``: the fast tokenizer class, the special tokens,
    no clean-up of spaces (decoding stays lossless), and ``split_special_tokens`` on, so that text spelling a control
    token is ordinary text, as in the native encoder (transformers registers the special tokens as added tokens; this
    switch keeps them out of the text). A model with its own added tokens (imported from a tokenizer.json that
    matched them in text) keeps that rule."""
    matches_in_text = any(t.special for t in added_tokens_of(model))
    return {"tokenizer_class": "PreTrainedTokenizerFast", **special_tokens_map(model),
            "clean_up_tokenization_spaces": False, "split_special_tokens": not matches_in_text,
            "model_max_length": 1 << 62, "padding_side": "right"}


def save_huggingface(model: Model, directory: str | os.PathLike) -> list[str]:
    """Write a Hugging Face tokenizer folder: ``tokenizer.json``, ``tokenizer_config.json`` and
    ``special_tokens_map.json`` (``AutoTokenizer.from_pretrained(directory)`` loads it); returns the paths."""
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    written = [os.path.join(directory, name) for name in
               ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")]
    save_tokenizer_json(model, written[0])
    for path, value in zip(written[1:], (tokenizer_config(model), special_tokens_map(model))):
        write_atomic(path, (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8"),
                     what=os.path.basename(path))
    return written


# ---------------------------------------------------------------------------------------------- import
def _pattern_of(pre: Any, source: str) -> str | None:
    def byte_level(node: dict, regex_allowed: bool) -> bool:
        if node.get("add_prefix_space"):
            raise ModelFileError(source, "ByteLevel add_prefix_space=true is not supported: set it to false (the "
                                 "prefix space changes the text)")
        use_regex = node.get("use_regex", True)
        if use_regex and not regex_allowed:
            raise ModelFileError(source, "a Split followed by ByteLevel with use_regex=true is not supported")
        return bool(use_regex)

    if isinstance(pre, dict) and pre.get("type") == "ByteLevel":
        return "gpt2" if byte_level(pre, True) else None
    if isinstance(pre, dict) and pre.get("type") == "Sequence" and len(pre.get("pretokenizers", [])) == 2:
        split, last = pre["pretokenizers"]
        if split.get("type") == "Split" and last.get("type") == "ByteLevel":
            regex = (split.get("pattern") or {}).get("Regex")
            # every pattern's matches tile the text, so keeping the matches (Isolated) and removing what lies
            # between them (Removed, inverted: how GPT-4o's tokenizer.json spells o200k) cut the same pieces
            spelling = (split.get("behavior"), bool(split.get("invert")))
            for name, text in PATTERN_TEXT.items():
                if regex == text and spelling in (("Isolated", False), ("Removed", True)):
                    byte_level(last, False)
                    return name
            raise ModelFileError(source, f"Split regex {regex!r} is not one of the supported patterns "
                                 f"({', '.join(sorted(PATTERN_TEXT))}, behavior Isolated, or Removed inverted)")
    raise ModelFileError(source, f"pre_tokenizer {json.dumps(pre)[:200]} is not supported: shardpiece reads "
                         "byte-level tokenizer.json files (ByteLevel, or Split + ByteLevel)")


def model_from_tokenizer_json(obj: dict, source: str = "<tokenizer.json>") -> Model:
    """A :class:`Model` from a parsed ``tokenizer.json`` (see the module docstring for what is supported).

    Every refusal raises :class:`ModelFileError` naming the file as a Hugging Face tokenizer.json and the feature.
    """
    try:
        return _model_from_tokenizer_json(obj, source)
    except ModelFileError as exc:
        if exc.problem.startswith("Hugging Face"):
            raise
        raise ModelFileError(source, f"Hugging Face tokenizer.json: {exc.problem}") from None


def _model_from_tokenizer_json(obj: dict, source: str) -> Model:
    normalizer = obj.get("normalizer")
    names = {None: "identity", "NFC": "nfc", "NFKC": "nfkc"}
    kind = normalizer.get("type") if isinstance(normalizer, dict) else None
    if kind == "Sequence":
        model = model_from_sentencepiece_json(obj, source)
        if model is not None:
            return model
    if normalizer is not None and kind not in names:
        raise ModelFileError(source, f"normalizer {kind!r} is not supported (only none, NFC, NFKC, or the Sequence "
                             "that export --to huggingface writes for SentencePiece-style models)")
    pattern = _pattern_of(obj.get("pre_tokenizer"), source)
    body = obj.get("model") or {}
    added_tokens = added_tokens_of_json(obj.get("added_tokens"), source)
    added = {t.id: t.content for t in added_tokens}
    template = template_of(obj.get("post_processor"))
    controls = {i: text for i, text in template["special"].items() if i not in added}
    if body.get("type") == "BPE":
        for key in ("continuing_subword_prefix", "end_of_word_suffix"):
            if body.get(key):
                raise ModelFileError(source, f"BPE {key}={body[key]!r} is not supported")
        vocab = body.get("vocab") or {}
        size = max(list(vocab.values()) + list(added), default=-1) + 1
        pieces: list[bytes | None] = [None] * size
        types = np.full(size, PieceType.NORMAL, dtype=np.int8)
        for text, i in vocab.items():
            control = controls.get(i) == text
            pieces[i] = text.encode() if i in added or control else decode_piece(text, source)
            types[i] = PieceType.CONTROL if control else types[i]
        _place_added_tokens(added_tokens, pieces, types, {i: text for text, i in vocab.items()})
        if any(p is None for p in pieces):
            raise ModelFileError(source, "vocabulary ids have gaps: every id below the largest must be used")
        index = {p: i for i, p in enumerate(pieces) if types[i] == PieceType.NORMAL}
        scores = np.zeros(size, dtype=np.float32)
        merged_rank: dict[int, int] = {}
        left_lengths: dict[int, int] = {}
        for rank, merge in enumerate(body.get("merges") or []):
            left, right = merge.split(" ", 1) if isinstance(merge, str) else merge
            a, b = decode_piece(left, source), decode_piece(right, source)
            z = index.get(a + b)
            if z is None or a not in index or b not in index:
                raise ModelFileError(source, f"merge {rank} ({left!r}, {right!r}) uses or makes a token missing "
                                     "from the vocabulary")
            if z not in merged_rank:
                merged_rank[z] = rank
                left_lengths[z] = len(a)
        for i, p in enumerate(pieces):
            if types[i] == PieceType.NORMAL and len(p) > 1:
                if i in merged_rank:
                    scores[i] = -float(merged_rank[i])
                elif i in added:
                    types[i] = PieceType.USER_DEFINED  # an added token that no merge makes: only the splitter
                else:
                    types[i] = PieceType.UNUSED  # not reachable by any merge
        if len(merged_rank) >= 1 << 24:
            raise ModelFileError(source, "more than 2**24 merges do not fit float32 ranks")
        ordered = sorted(merged_rank, key=lambda i: (merged_rank[i], i))
        provenance = {"imported_from": "tokenizer.json",
                      "bpe_merges": {"left_lengths": [left_lengths[i] for i in ordered]},
                      "ignore_merges": bool(body.get("ignore_merges", False))}
        algorithm = "bpe"
    elif body.get("type") == "Unigram":
        if body.get("byte_fallback"):
            raise ModelFileError(source, "Unigram byte_fallback behind ByteLevel is not supported")
        entries = body.get("vocab") or []
        size = max([len(entries)] + [i + 1 for i in added])
        pieces = [None] * size
        types = np.full(size, PieceType.NORMAL, dtype=np.int8)
        scores = np.zeros(size, dtype=np.float32)
        for i, (text, score) in enumerate(entries):
            control = controls.get(i) == text
            pieces[i] = text.encode() if i in added or control else decode_piece(text, source)
            types[i] = PieceType.CONTROL if control else types[i]
            scores[i] = 0.0 if control else score
        _place_added_tokens(added_tokens, pieces, types, {i: text for i, (text, _) in enumerate(entries)})
        if body.get("unk_id") is not None:
            types[int(body["unk_id"])] = PieceType.UNKNOWN
        # the scores as tokenizers holds them (f64): its lattice sums them in f64, and float32 copies could break
        # near-ties differently
        exact = [0.0] * size
        for i, (_, score) in enumerate(entries):
            exact[i] = float(score)
        provenance = {"imported_from": "tokenizer.json", "float64_scores": exact}
        algorithm = "unigram"
    else:
        raise ModelFileError(source, f"model type {body.get('type')!r} is not supported (BPE or Unigram)")
    named = {**controls, **added}
    specials = {text: i for i, text in sorted(named.items(), reverse=True)}  # the lowest id of equal contents
    for name, i in (("<s>", template["bos"]), ("</s>", template["eos"])):
        if i is not None and types[i] == PieceType.CONTROL:
            specials[name] = i  # the template's ends are the bos and eos, whatever their text
    unk = [i for i in range(size) if types[i] == PieceType.UNKNOWN]
    try:
        model = Model(pieces, scores, types, algorithm=algorithm, normalizer={"name": names[kind]},
                      pretokenizer={"name": "byte_level", "pattern": pattern}, unk_id=unk[0] if unk else -1,
                      bos_id=specials.get("<s>", -1), eos_id=specials.get("</s>", -1),
                      pad_id=specials.get("<pad>", -1), provenance=provenance)
    except ModelError as exc:
        raise ModelFileError(source, f"inconsistent tokenizer.json: {exc}") from None
    if model.provenance.get("ignore_merges"):
        model.pretokenizer["ignore_merges"] = True
    if added_tokens:
        model.pretokenizer["added_tokens"] = [t.spec() for t in sorted(added_tokens, key=lambda t: t.id)]
        try:
            model.validate()
        except ModelError as exc:
            raise ModelFileError(source, f"inconsistent tokenizer.json: {exc}") from None
    return model


def _place_added_tokens(tokens: list[AddedToken], pieces: list, types: np.ndarray, vocab_text: dict[int, str]):
    """Set the pieces and types of added tokens: a special token is a CONTROL piece; a non-special one whose id
    is also a vocabulary entry with the same bytes (``tokenizers`` gives an added token the id of the equal
    vocabulary string) stays a NORMAL piece, so the model keeps using it; any other is USER_DEFINED."""
    for token in tokens:
        content = token.content.encode()
        learned = None
        if token.id in vocab_text:
            try:
                learned = decode_piece(vocab_text[token.id])
            except ModelFileError:
                learned = None  # not a ByteLevel string: the entry is the added token only
        pieces[token.id] = content
        if token.special:
            types[token.id] = PieceType.CONTROL
        elif learned != content:
            types[token.id] = PieceType.USER_DEFINED
