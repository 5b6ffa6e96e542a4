"""Check, line by line, that imported SentencePiece models normalize, encode and decode exactly as sentencepiece.

For each corpus pair (train file, test file) it trains SentencePiece models over a grid (vocab sizes x unigram/bpe x
nmt_nfkc/identity x byte_fallback on/off; 2 trainer threads), imports each with shardpiece, and counts test lines
where shardpiece differs from sentencepiece in:

  normalize     SentencePieceNormalizer.normalize(line)   vs  sp.normalize(line)
  decode        decode_pieces(sp.encode(line))              vs  sp.decode(sp.encode(line))
  denormalize   denormalize(joined piece bytes)             vs  sp.decode(sp.encode(line))
  encode        Tokenizer.load(model).encode(line)          vs  sp.encode(line)        (when tokenizer.core exists)
  tok_decode    Tokenizer.decode(sp ids)                    vs  sp.decode(ids)         (likewise)

Usage::

    python benchmarks/check_sentencepiece_equality.py \\
        --pair en /work/corpora/en.train.txt /work/corpora/en.test.txt \\
        --pair zh /work/corpora/zh.train.txt /work/corpora/zh.test.txt \\
        [--vocab-sizes 8000 32000] [--input-sentence-size 300000] [--speed FILE] [--no-results]

Writes one entry per model to ``benchmarks/results/check-sentencepiece-equality.json`` (``--no-results``: not).
``--speed FILE`` also reports normalize throughput (MB/s, one thread) of the nmt_nfkc normalizer on FILE's lines,
next to sentencepiece's own ``normalize``.
"""

from __future__ import annotations

import os
import sys

# Run as a script, sys.path[0] is benchmarks/: put the repository root there too, for ``benchmarks.common``.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))

import argparse  # noqa: E402
import io  # noqa: E402
import itertools  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402


import sentencepiece as spm  # noqa: E402  (benchmark oracle only)

from tokenizer.interop.sentencepiece import load_sentencepiece  # noqa: E402
from tokenizer.model import PieceType  # noqa: E402
from tokenizer.normalizers import for_model  # noqa: E402

try:  # the Tokenizer API may not exist yet in this checkout
    from tokenizer.core import Tokenizer  # noqa: E402
except ImportError:  # pragma: no cover
    Tokenizer = None


def read_lines(path: str) -> list[str]:
    with open(path, encoding="utf-8", newline="\n") as handle:
        return [line.rstrip("\n") for line in handle]


def train(train_path: str, vocab_size: int, model_type: str, rule: str, byte_fallback: bool,
          input_sentence_size: int) -> bytes:
    buffer = io.BytesIO()
    spm.SentencePieceTrainer.train(
        input=train_path, model_writer=buffer, vocab_size=vocab_size, model_type=model_type,
        normalization_rule_name=rule, byte_fallback=byte_fallback, num_threads=2, minloglevel=2,
        input_sentence_size=input_sentence_size, shuffle_input_sentence=True, hard_vocab_limit=False,
    )
    return buffer.getvalue()


def joined_piece_bytes(model, ids) -> bytes:
    out = bytearray()
    unk = model.pretokenizer.get("unk_surface", "").encode()
    for i in ids:
        kind = model.types[i]
        if kind == PieceType.BYTE:
            out.append(int(model.pieces[i][3:5], 16))
        elif kind == PieceType.UNKNOWN:
            out += unk
        elif kind != PieceType.CONTROL:
            out += model.pieces[i]
    return bytes(out)


def check(model_bytes: bytes, lines: list[str], show: int = 3) -> dict:
    sp = spm.SentencePieceProcessor(model_proto=model_bytes)
    model = load_sentencepiece(model_bytes)
    normalizer = for_model(model)
    tok = None
    if Tokenizer is not None:
        with tempfile.NamedTemporaryFile(suffix=".model", delete=False) as handle:
            handle.write(model_bytes)
        try:
            tok = Tokenizer.load(handle.name)
        finally:
            os.unlink(handle.name)
    counts = dict(normalize=0, decode=0, denormalize=0, encode=0, tok_decode=0)
    examples: list[str] = []
    for line in lines:
        data = line.encode()
        ids = sp.encode(line)
        expected_text = sp.decode(ids)
        results = {
            "normalize": normalizer.normalize(data) == sp.normalize(data),
            "decode": normalizer.decode_pieces([model.pieces[i] for i in ids], model.types[ids])
            == expected_text.encode(),
            "denormalize": normalizer.denormalize(joined_piece_bytes(model, ids)) == expected_text.encode(),
        }
        if tok is not None:
            results["encode"] = tok.encode(line) == ids
            results["tok_decode"] = tok.decode(ids) == expected_text
        for key, ok in results.items():
            if not ok:
                counts[key] += 1
                if len(examples) < show:
                    examples.append(f"{key}: {line[:120]!r}")
    if tok is None:
        counts["encode"] = counts["tok_decode"] = None
    return {"counts": counts, "examples": examples, "vocab_size": model.vocab_size}


def speed(model_bytes: bytes, path: str, repeats: int = 3) -> dict:
    lines = read_lines(path)
    encoded = [line.encode() for line in lines]
    total = sum(len(e) for e in encoded)
    blob = np.frombuffer(b"".join(encoded), np.uint8)
    offsets = np.zeros(len(encoded) + 1, np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    normalizer = for_model(load_sentencepiece(model_bytes))
    sp = spm.SentencePieceProcessor(model_proto=model_bytes)
    start = time.perf_counter()
    normalizer.normalize_batch(blob[:64], offsets[:2])  # compile / load the kernel cache
    warmup = time.perf_counter() - start

    def best(function) -> float:
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            function()
            times.append(time.perf_counter() - t0)
        return min(times)

    batch = best(lambda: normalizer.normalize_batch(blob, offsets))
    per_line = best(lambda: [normalizer.normalize(e) for e in encoded])
    theirs = best(lambda: [sp.normalize(line) for line in lines])
    megabytes = total / 1e6
    return {"file": path, "megabytes": megabytes, "warmup_s": round(warmup, 3),
            "normalize_batch_MBps": round(megabytes / batch, 1),
            "normalize_per_line_MBps": round(megabytes / per_line, 1),
            "sentencepiece_normalize_MBps": round(megabytes / theirs, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pair", nargs=3, action="append", metavar=("NAME", "TRAIN", "TEST"), default=[])
    parser.add_argument("--vocab-sizes", nargs="+", type=int, default=[8000, 32000])
    parser.add_argument("--model-types", nargs="+", default=["unigram", "bpe"])
    parser.add_argument("--rules", nargs="+", default=["nmt_nfkc", "identity"])
    parser.add_argument("--byte-fallback", nargs="+", default=["on", "off"], choices=["on", "off"])
    parser.add_argument("--input-sentence-size", type=int, default=300000)
    parser.add_argument("--no-results", dest="results", action="store_false",
                        help="do not write benchmarks/results/check-sentencepiece-equality.json")
    parser.add_argument("--speed", help="a text file for the normalize throughput measurement")
    args = parser.parse_args(argv)

    results = []
    total_mismatches = 0
    for name, train_path, test_path in args.pair:
        lines = read_lines(test_path)
        for vocab, model_type, rule, fallback in itertools.product(args.vocab_sizes, args.model_types, args.rules,
                                                                   args.byte_fallback):
            t0 = time.perf_counter()
            model_bytes = train(train_path, vocab, model_type, rule, fallback == "on", args.input_sentence_size)
            train_s = time.perf_counter() - t0
            outcome = check(model_bytes, lines)
            row = dict(corpus=name, vocab=vocab, model_type=model_type, rule=rule, byte_fallback=fallback,
                       lines=len(lines), train_s=round(train_s, 1), **outcome)
            results.append(row)
            total_mismatches += sum(v for v in outcome["counts"].values() if v)
            print(f"{name:3} {vocab:6} {model_type:7} {rule:9} bytes={fallback:3} lines={len(lines):6} "
                  f"pieces={outcome['vocab_size']:6} mismatches={outcome['counts']} train={train_s:.1f}s", flush=True)
            for example in outcome["examples"]:
                print("    ", example)
            if args.speed and rule == "nmt_nfkc" and not any("speed" in r for r in results):
                row["speed"] = speed(model_bytes, args.speed)
                print("    speed:", row["speed"], flush=True)
    print(f"total mismatching (line, check) pairs: {total_mismatches}")
    if args.results:
        from benchmarks import common

        print("wrote", common.write_results("check-sentencepiece-equality",
                                            {"mismatching_pairs": total_mismatches, "models": results}))
    return 1 if total_mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
