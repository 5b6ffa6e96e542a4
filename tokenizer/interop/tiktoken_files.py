"""Reading tiktoken's ``.tiktoken`` files (one ``base64(token bytes) rank`` pair a line) as byte-level BPE models.

tiktoken encodes a pre-token by repeatedly merging the adjacent pair whose concatenation has the lowest rank, and
emits a pre-token that is itself a token as that one token. The model built here replays the same merges: every
token of two or more bytes is made by the split tiktoken's own merging of its bytes reaches (ranks below its own
only; the split is stored in ``provenance["bpe_merges"]``, as an imported ``tokenizer.json`` stores its merges), its
score is ``-rank``, ids are the ranks, and ``pretokenizer["ignore_merges"]`` emits whole-token pre-tokens as they
are. A token that no split reaches is an UNUSED piece: only a whole pre-token equal to it gives its id.

Pre-tokenizer patterns (``pattern=``), as ``tiktoken_ext/openai_public.py`` defines them:

- ``"gpt2"`` (r50k/p50k): the GPT-2 regex, which shardpiece's ``gpt2`` pre-tokenizer implements exactly;
- ``"cl100k"``: shardpiece's ``llama3`` pre-tokenizer. tiktoken's cl100k regex has one more alternative,
  ``\\s++$`` (whitespace that runs to the end of the text is one pre-token); the two differ only on a text that ends
  with whitespace after its last ``\\r``/``\\n`` (``"a\\n "``: tiktoken ``["a", "\\n "]``, here ``["a", "\\n", " "]``),
  never on lines read without their newline;
- ``"o200k"`` (o200k_base): shardpiece's ``o200k`` pre-tokenizer, which implements tiktoken's regex exactly
  (letters split by case, :mod:`tokenizer.kernels.pretokenize_o200k`; it has no ``\\s++$`` alternative).
- ``"superword"`` and ``"superbpe"``: superword BPE's coarse splits (:mod:`tokenizer.kernels.superword_split`),
  names of shardpiece's own, not tiktoken's. Their chunks are the regex's matches and the stretches between them,
  while tiktoken keeps only matches, so the ``pat_str`` tiktoken is given is the regex followed by a last
  alternative for a stretch: ``A|(?:(?!A)[\\s\\S])+`` (:func:`matches_and_gaps`). tiktoken's regex engine
  (fancy-regex) accepts both; it stops with ``BacktrackLimitExceeded`` on a stretch without a cut of a few hundred
  thousand characters, where shardpiece's split has no limit.

Writing a model (:func:`tiktoken_ranked_ids`): tiktoken merges the adjacent pair whose concatenation has the lowest
rank, even a pair that is not the piece's merge; merge replay only merges listed pairs. The two agree on every text
when each written piece is one that merge replay makes of its own bytes (then, at the first step where they would
part, replay would leave that piece's bytes as the two parts tiktoken joins). A piece replay never makes is never
emitted by a model that replays merges, so it is left out of the file (the ranks after it move down by one); a model
whose pre-tokens equal to a piece are emitted whole (``ignore_merges``, as an imported Llama-3 tokenizer.json) does
emit it, so such a model with such a piece is refused.

Example (hand-checkable): the file ``YQ== 0``, ``Yg== 1``, ... (the 256 single bytes), then ``YWI= 256``
(``b"ab"``) gives a 257-piece model with ``pieces[256] == b"ab"``, made by merging ``b"a"`` and ``b"b"``.
"""

from __future__ import annotations

import base64
import binascii
import os

import numpy as np

from tokenizer.errors import ConfigError, ModelFileError
from tokenizer.model import Model, PieceType
from tokenizer.pretokenize_patterns import PATTERN_TEXT

#: the file name ending of a tiktoken file; its pre-tokenizer pattern follows a colon (``FILE.tiktoken:gpt2``)
TIKTOKEN_SUFFIX = ".tiktoken"
#: tiktoken's pattern name -> shardpiece's byte_level pre-tokenizer pattern
PATTERNS = {"gpt2": "gpt2", "cl100k": "llama3", "o200k": "o200k", "superword": "superword", "superbpe": "superbpe"}


def matches_and_gaps(pattern_text: str) -> str:
    """A regex whose matches (tiktoken keeps only matches) are ``pattern_text``'s matches and the stretches between
    them, as a Hugging Face ``Split`` with behavior ``Isolated`` cuts: ``matches_and_gaps("1")`` ->
    ``"1|(?:(?!1)[\\s\\S])+"``, whose matches in ``"ab1c"`` are ``"ab"``, ``"1"``, ``"c"``."""
    return rf"{pattern_text}|(?:(?!{pattern_text})[\s\S])+"


#: the ``pat_str`` of each name: for gpt2, cl100k and o200k as tiktoken_ext/openai_public.py spells it
#: (r50k_pat_str, cl100k_base's and o200k_base's pat_str), for the coarse splits :func:`matches_and_gaps`
TIKTOKEN_PATTERN_TEXT = {
    "gpt2": r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s""",
    "cl100k": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|"""
              r"""\s*[\r\n]|\s+(?!\S)|\s""",
    "o200k": PATTERN_TEXT["o200k"],
    "superword": matches_and_gaps(PATTERN_TEXT["superword"]),
    "superbpe": matches_and_gaps(PATTERN_TEXT["superbpe"]),
}


def read_tiktoken_ranks(path: str | os.PathLike) -> dict[bytes, int]:
    """``{token bytes: rank}`` of a ``.tiktoken`` file (blank lines skipped), as ``tiktoken.load.load_tiktoken_bpe``
    reads it. ``b"YWI= 256\\n"`` -> ``{b"ab": 256}``. Raises :class:`ModelFileError` naming the bad line."""
    source = os.fspath(path)
    try:
        with open(source, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise ModelFileError(source, f"cannot read the file: {exc.strerror}") from None
    ranks: dict[bytes, int] = {}
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            token, rank = line.split()
            ranks[base64.b64decode(token, validate=True)] = int(rank)
        except (ValueError, binascii.Error):
            raise ModelFileError(source, f"line {number} ({line[:60]!r}) is not 'BASE64TOKEN RANK': the file is not "
                                 "a .tiktoken file or is corrupted") from None
    return ranks


def merge_split(ranks: dict[bytes, int], token: bytes) -> int | None:
    """Byte length of the left part of the last merge tiktoken's merging reaches on ``token``'s bytes using only
    ranks below ``token``'s, or None when that merging does not end in two parts (no merge makes the token).

    With ranks ``a 0, b 1, c 2, ab 3, abc 4``: ``merge_split(ranks, b"abc") == 2`` (``ab`` + ``c``)."""
    limit = ranks[token]
    parts = [token[i:i + 1] for i in range(len(token))]
    while len(parts) > 2:
        best, where = limit, -1
        for i in range(len(parts) - 1):
            rank = ranks.get(parts[i] + parts[i + 1])
            if rank is not None and rank < best:
                best, where = rank, i
        if where < 0:
            return None
        parts[where:where + 2] = [parts[where] + parts[where + 1]]
    if len(parts) == 2 and ranks.get(parts[0] + parts[1]) == limit:
        return len(parts[0])
    return None


def model_from_tiktoken_ranks(ranks: dict[bytes, int], pattern: str, source: str = "<.tiktoken>") -> Model:
    """A byte-level BPE :class:`Model` whose ids are the ranks (see the module docstring); ``pattern`` is
    one of :data:`PATTERNS` (``"gpt2"``, ``"cl100k"``, ``"o200k"``, ``"superword"``, ``"superbpe"``). Raises
    :class:`ConfigError` for another pattern, :class:`ModelFileError` when the ranks leave gaps, repeat or lack a
    single byte."""
    if pattern not in PATTERNS:
        raise ConfigError(f"unknown tiktoken pattern {pattern!r}: use one of {', '.join(PATTERNS)}")
    size = len(ranks)
    by_rank: list[bytes | None] = [None] * size
    for token, rank in ranks.items():
        if not 0 <= rank < size or by_rank[rank] is not None:
            raise ModelFileError(source, f"rank {rank} is repeated or leaves a gap (ranks must be 0..{size - 1}, "
                                 "each once): the file is corrupted")
        by_rank[rank] = token
    missing = [b for b in range(256) if bytes([b]) not in ranks]
    if missing:
        raise ModelFileError(source, f"{len(missing)} single bytes (e.g. {bytes([missing[0]])!r}) are not tokens: "
                             "a byte-level BPE vocabulary needs all 256")
    types = np.full(size, PieceType.NORMAL, dtype=np.int8)
    scores = -np.arange(size, dtype=np.float64)
    left_lengths = []
    for rank, token in enumerate(by_rank):
        if len(token) < 2:
            continue
        split = merge_split(ranks, token)
        if split is None:
            types[rank] = PieceType.UNUSED
        else:
            left_lengths.append(split)
    if size >= 1 << 24:
        raise ModelFileError(source, "more than 2**24 ranks do not fit float32 scores")
    return Model(by_rank, scores.astype(np.float32), types, algorithm="bpe",
                 pretokenizer={"name": "byte_level", "pattern": PATTERNS[pattern], "ignore_merges": True},
                 provenance={"imported_from": ".tiktoken", "tiktoken_pattern": pattern,
                             "bpe_merges": {"left_lengths": left_lengths}})


def split_tiktoken_pattern(spec: str) -> tuple[str, str | None]:
    """``(path, pattern or None)`` of a model path: ``"cl.tiktoken:cl100k"`` -> ``("cl.tiktoken", "cl100k")``;
    ``"bp.model"`` -> ``("bp.model", None)`` (a colon is a pattern only after ``.tiktoken``)."""
    path, colon, pattern = spec.rpartition(":")
    if colon and path.endswith(TIKTOKEN_SUFFIX) and pattern:
        return path, pattern
    return spec, None


def load_tiktoken(path: str | os.PathLike, pattern: str) -> Model:
    """:func:`model_from_tiktoken_ranks` of the ``.tiktoken`` file at ``path``."""
    return model_from_tiktoken_ranks(read_tiktoken_ranks(path), pattern, os.fspath(path))


def tiktoken_ranked_ids(model: Model) -> tuple[list[int], list[int]]:
    """``(written, left_out)``: the model ids of a byte-level BPE model's pieces in ``.tiktoken`` rank order (the
    256 single bytes by byte, then the merged pieces in merge order) and of the merged pieces left out because
    merge replay never makes them (see the module docstring). Merges ``b``+``c`` -> ``bc``, ``a``+``b`` ->
    ``ab``, ``ab``+``c`` -> ``abc``: replay makes ``a`` ``bc`` of ``abc``, so ``abc`` is left out (tiktoken
    would join ``a`` and ``bc``). Raises :class:`ConfigError` for another kind of model, or for a model that
    emits whole pre-tokens (``ignore_merges``) holding such a piece."""
    import dataclasses

    from tokenizer.compiled import CompiledModel

    byte_level = CompiledModel(model).byte_level
    if byte_level is None or not byte_level.is_bpe:
        raise ConfigError("only byte-level BPE models (train --algorithm bpe) can be written as a .tiktoken file: "
                          "export this one --to huggingface or --to sentencepiece")
    merged = byte_level.merges[2].tolist()
    replay = dataclasses.replace(model, pretokenizer={"name": "byte_level", "pattern": None},  # merges alone
                                 normalizer={"name": "identity"}, charsmap=b"")
    encode = CompiledModel(replay).one_text_encoder()
    made = [encode(model.pieces[i], -1, -1) for i in merged]
    left_out = [i for i, ids in zip(merged, made) if ids != [i]]
    if left_out and model.pretokenizer.get("ignore_merges"):
        raise ConfigError(f"{len(left_out)} pieces (the first: {left_out[0]}, {model.pieces[left_out[0]]!r}) are "
                          "not what replaying the merges makes of their bytes, yet this model emits one for a "
                          "pre-token equal to it (ignore_merges), and tiktoken would also join other parts into "
                          "it: a .tiktoken file cannot give this model's ids; export it --to huggingface")
    dropped = set(left_out)
    bytes_first = [model.piece_to_id(bytes([b])) for b in range(256)]
    return bytes_first + [i for i in merged if i not in dropped], left_out


def tiktoken_file_text(model: Model, ranked_ids: list[int] | None = None) -> bytes:
    """A byte-level BPE model's vocabulary as a ``.tiktoken`` file: the pieces of ``ranked_ids`` (default
    :func:`tiktoken_ranked_ids`'s first list) with their ranks, so that tiktoken's rank merging gives the model's
    pieces: a model whose first merge makes ``b"ab"`` has the line ``b"YWI= 256"`` (``base64(b"ab")``, rank 256).
    Raises :class:`ConfigError` for a model :func:`tiktoken_ranked_ids` refuses."""
    order = tiktoken_ranked_ids(model)[0] if ranked_ids is None else ranked_ids
    return b"".join(base64.b64encode(model.pieces[i]) + b" %d\n" % rank for rank, i in enumerate(order))
