"""The peer trainers the training benchmarks measure shardpiece against, each run as a subprocess, and the encoders
that count a model's tokens (bytes per token) and check its round trip.

One function per peer trainer, each ``(train text, model path, vocab size) -> processes.Measured`` (the model is
written to the path, or the command failed: ``returncode``):

* :func:`train_bytepiece`: bytepiece's ``Trainer`` (``common.BYTEPIECE_SETTINGS``: order 6, min_count 8, its
  built-in NFC), 2 worker processes, on the file's non-empty lines;
* :func:`train_sentencepiece`: sentencepiece's ``unigram`` or ``bpe`` trainer with the lossless settings
  (``common.LOSSLESS_SENTENCEPIECE``: identity normalizer, byte fallback, extra whitespace kept, no dummy prefix,
  whitespace-only pieces allowed), 2 threads, every sentence of the file (sentencepiece's defaults otherwise:
  ``input_sentence_size`` 0, ``character_coverage`` 0.9995, ``max_sentence_length`` 4192, ...);
  :data:`LOSSLESS_UNIGRAM_FLAGS` gives ``shardpiece train --algorithm unigram`` the same settings;
* :func:`train_tokenizers_bpe`: Hugging Face tokenizers' ``BpeTrainer`` with the ByteLevel pre-tokenizer (GPT-2
  regex, no prefix space), the 256-byte initial alphabet, :data:`SPECIAL_TOKENS`, min_frequency 2,
  ``RAYON_NUM_THREADS=2``.

The ``*_command`` functions (bytepiece's: ``common.bytepiece_command``) give the subprocess (command, extra
environment) for scripts that run it themselves (bpe.py, scaling.py). :func:`codec` loads any of these models, or a
shardpiece model, as ``(vocab size, encode lines, decode ids)``; :func:`evaluate` gives bytes/token and round trip.
"""

from __future__ import annotations

import json
import os
from typing import Callable, NamedTuple

from benchmarks import common, processes

SPECIAL_TOKENS = ("<pad>", "<s>", "</s>")  # tokenizers' special tokens: shardpiece bpe's defaults

#: ``shardpiece train --algorithm unigram`` flags for each of :data:`common.LOSSLESS_SENTENCEPIECE`'s settings
#: (identity is shardpiece's default normalizer: no flag).
LOSSLESS_UNIGRAM_FLAGS = {"normalization_rule_name": [], "byte_fallback": ["--byte-fallback"],
                          "remove_extra_whitespaces": ["--keep-extra-whitespaces"],
                          "add_dummy_prefix": ["--no-dummy-prefix"],
                          "allow_whitespace_only_pieces": ["--allow-whitespace-only-pieces"]}
assert LOSSLESS_UNIGRAM_FLAGS.keys() == common.LOSSLESS_SENTENCEPIECE.keys()

SENTENCEPIECE_TRAIN_SCRIPT = r"""
import json, os, sys
import sentencepiece as spm
path, prefix, settings = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
spm.SentencePieceTrainer.train(input=path, model_prefix=prefix + ".tmp", minloglevel=2, **settings)
os.replace(prefix + ".tmp.vocab", prefix + ".vocab")
os.replace(prefix + ".tmp.model", prefix + ".model")
"""

TOKENIZERS_TRAIN_SCRIPT = r"""
import os, sys
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
path, out, vocab = sys.argv[1], sys.argv[2], int(sys.argv[3])
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
tok.decoder = decoders.ByteLevel()
trainer = trainers.BpeTrainer(vocab_size=vocab, min_frequency=2, special_tokens=sys.argv[4:], show_progress=False,
                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
tok.train([path], trainer)
tok.save(out + ".tmp")
os.replace(out + ".tmp", out)
"""


def sentencepiece_settings(model_type: str, vocab_size: int, threads: int = 2, **more) -> dict:
    """The trainer arguments :func:`train_sentencepiece` gives sentencepiece (``more`` added or replacing)."""
    return {"model_type": model_type, "vocab_size": vocab_size, "num_threads": threads,
            **common.LOSSLESS_SENTENCEPIECE, **more}


def sentencepiece_command(train_path: str, model: str, settings: dict) -> tuple[list[str], dict[str, str]]:
    """sentencepiece's trainer on ``train_path`` with ``settings`` (trainer arguments), writing ``model``
    (``PREFIX.model``, its ``PREFIX.vocab`` beside it)."""
    prefix = model[:-len(".model")] if model.endswith(".model") else model
    return [common.PYTHON, "-c", SENTENCEPIECE_TRAIN_SCRIPT, train_path, prefix, json.dumps(settings)], {}


def tokenizers_command(train_path: str, model: str, vocab_size: int, threads: int = 2) -> tuple[list[str], dict]:
    return ([common.PYTHON, "-c", TOKENIZERS_TRAIN_SCRIPT, train_path, model, str(vocab_size), *SPECIAL_TOKENS],
            {"RAYON_NUM_THREADS": str(threads)})


def _run(command_env: tuple[list[str], dict], model: str, max_seconds: float | None) -> processes.Measured:
    command, env = command_env
    os.makedirs(os.path.dirname(os.path.abspath(model)), exist_ok=True)
    return processes.run_measured(command, env=env, cwd=common.REPO, log_path=model + ".log", max_seconds=max_seconds)


def train_bytepiece(train_path: str, model: str, vocab_size: int, *, workers: int = 2,
                    max_seconds: float | None = None) -> processes.Measured:
    return _run(common.bytepiece_command(train_path, model, vocab_size, workers), model, max_seconds)


def train_sentencepiece(train_path: str, model: str, vocab_size: int, *, model_type: str, threads: int = 2,
                        max_seconds: float | None = None) -> processes.Measured:
    settings = sentencepiece_settings(model_type, vocab_size, threads)
    return _run(sentencepiece_command(train_path, model, settings), model, max_seconds)


def train_tokenizers_bpe(train_path: str, model: str, vocab_size: int, *, threads: int = 2,
                         max_seconds: float | None = None) -> processes.Measured:
    return _run(tokenizers_command(train_path, model, vocab_size, threads), model, max_seconds)


class Codec(NamedTuple):
    vocab_size: int
    encode: Callable[[list[str]], list[list[int]]]  # lines -> ids per line (no bos/eos)
    decode: Callable[[list[int]], str]


def codec(system: str, model: str) -> Codec:
    """A trained model as a :class:`Codec`; ``system``: ``shardpiece``, ``bytepiece``, ``sentencepiece`` or
    ``tokenizers``. Encoding is one thread, each line on its own."""
    if system == "bytepiece":
        from bytepiece import Tokenizer as BytePieceTokenizer

        bp = BytePieceTokenizer(model)
        return Codec(bp.vocab_size, lambda lines: [bp.encode(line) for line in lines], bp.decode)
    if system == "sentencepiece":
        import sentencepiece as spm

        sp = spm.SentencePieceProcessor(model_file=model)
        return Codec(sp.get_piece_size(), lambda lines: sp.encode(lines, num_threads=1), sp.decode)
    if system == "tokenizers":
        from tokenizers import Tokenizer as HfTokenizer

        hf = HfTokenizer.from_file(model)
        return Codec(hf.get_vocab_size(), lambda lines: [e.ids for e in hf.encode_batch(lines,
                                                                                     add_special_tokens=False)],
                     lambda ids: hf.decode(ids, skip_special_tokens=False))
    if system == "shardpiece":
        from tokenizer import Tokenizer

        tok = Tokenizer.load(model)
        return Codec(tok.vocab_size, lambda lines: tok.encode_batch(lines, num_threads=1), tok.decode)
    raise ValueError(f"unknown system {system!r}")


def evaluate(system: str, model: str, lines: list[str], expected: list[str] | None = None) -> dict:
    """Bytes per token of ``model`` on ``lines`` (their UTF-8 bytes over the tokens, each line without its
    newline) and the share of lines that decode back to ``expected`` (default: the lines themselves)."""
    c = codec(system, model)
    ids = c.encode(lines)
    tokens = sum(len(x) for x in ids)
    nbytes = sum(len(line.encode("utf-8")) for line in lines)
    expected = lines if expected is None else expected
    same = sum(c.decode(x) == e for x, e in zip(ids, expected))
    return {"vocab_size": c.vocab_size, "tokens": tokens, "bytes_per_token": round(nbytes / max(1, tokens), 4),
            "round_trip": round(same / max(1, len(lines)), 5)}
