"""Compression of SentencePiece-style BPE: ``shardpiece train --algorithm bpe --pretokenizer sentencepiece`` against
sentencepiece's BPE trainer with the same lossless settings (identity normalizer, byte fallback, no dummy prefix,
whitespace kept, whitespace-only pieces allowed), same vocabulary size, bytes/token on each corpus's test split.

    .venv/bin/python benchmarks/bpe_compression.py                       # en (first 4 MB), zh, ja, uk; 32k
    .venv/bin/python benchmarks/bpe_compression.py --corpus uk --vocab-size 16000

Corpora: ``--corpora DIR`` with ``NAME.train.txt`` / ``NAME.test.txt`` (the shared ``corpora/build.sh``); ``uk``
(Ukrainian manual pages, Debian's ``manpages-uk``, a Cyrillic-script corpus) is built into ``DIR`` on first use
with ``apt-get download`` and the same hash split as ``build.sh`` (1 distinct line in 20 held out). Both trainers
see the same training text, capped at ``--train-bytes`` at a line end, on one thread; shardpiece runs with
``--master none``. Prints one table (with the vocabulary each delivered and the share of pieces they share) and
writes ``benchmarks/results/bpe-compression.json``.
"""

from __future__ import annotations

import argparse
import glob
import gzip
import hashlib
import os
import subprocess
import sys
import tempfile

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))

from benchmarks import common  # noqa: E402


def build_uk(corpora: str) -> None:
    """``uk.train.txt`` and ``uk.test.txt`` from Debian's ``manpages-uk`` (roff sources, as build.sh's man pages)."""
    with tempfile.TemporaryDirectory() as work:
        subprocess.run(["apt-get", "download", "manpages-uk"], cwd=work, check=True, capture_output=True)
        deb = glob.glob(os.path.join(work, "manpages-uk_*.deb"))[0]
        subprocess.run(["dpkg-deb", "-x", deb, os.path.join(work, "x")], check=True)
        pages = sorted(glob.glob(os.path.join(work, "x", "**", "man", "**", "*.gz"), recursive=True))
        lines = b"".join(gzip.open(page).read() for page in pages).split(b"\n")
    train, test = [], []
    for line in lines:
        if line.strip():
            (test if hashlib.md5(line).digest()[0] % 20 == 0 else train).append(line)
    common.write_atomic(os.path.join(corpora, "uk.train.txt"), b"\n".join(train) + b"\n")
    common.write_atomic(os.path.join(corpora, "uk.test.txt"), b"\n".join(test) + b"\n")


SP_SCRIPT = r"""
import os, sys
import sentencepiece as spm
path, prefix, vocab = sys.argv[1], sys.argv[2], int(sys.argv[3])
spm.SentencePieceTrainer.train(input=path, model_prefix=prefix + ".tmp", model_type="bpe", vocab_size=vocab,
                               normalization_rule_name="identity", byte_fallback=True, remove_extra_whitespaces=False,
                               add_dummy_prefix=False, allow_whitespace_only_pieces=True, num_threads=1,
                               minloglevel=2)
os.replace(prefix + ".tmp.model", prefix + ".model")
"""


def compare(name: str, args) -> dict:
    import sentencepiece as spm

    from tokenizer import Tokenizer

    if name == "uk" and not os.path.isfile(os.path.join(args.corpora, "uk.train.txt")):
        build_uk(args.corpora)
    work = os.path.join(args.work, "bpe-compression")
    os.makedirs(work, exist_ok=True)
    train, train_bytes = common.capped_train_file(args.corpora, name, work, args.train_bytes)
    test = [line for line in common.read_lines(common.corpus_path(args.corpora, name, "test")) if line]
    prefix = os.path.join(work, f"sentencepiece-{name}-{train_bytes}-{args.vocab_size}")
    ours = os.path.join(work, f"shardpiece-{name}-{train_bytes}-{args.vocab_size}.model")
    subprocess.run([common.PYTHON, "-c", SP_SCRIPT, train, prefix, str(args.vocab_size)], check=True)
    subprocess.run([common.PYTHON, "-m", "jobs.cli", "train", "--algorithm", "bpe", "--pretokenizer",
                    "sentencepiece", "--input", train, "--vocab-size", str(args.vocab_size), "--output", ours,
                    "--master", "none", "--threads", "1", "--holdout-fraction", "0", "--no-resume", "--quiet"],
                   cwd=common.REPO, check=True, stdout=subprocess.DEVNULL)
    sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
    tok = Tokenizer.load(ours)
    total = sum(len(line.encode()) for line in test)
    theirs = {sp.id_to_piece(i) for i in range(sp.get_piece_size())}
    mine = {p.decode("utf-8", "replace") for p in tok.model.pieces}
    row = {"corpus": name, "train_bytes": train_bytes, "test_bytes": total,
           "sentencepiece_bytes_per_token": round(total / sum(map(len, sp.encode(test))), 4),
           "shardpiece_bytes_per_token": round(total / sum(map(len, tok.encode_batch(test))), 4),
           "sentencepiece_vocab": sp.get_piece_size(), "shardpiece_vocab": tok.vocab_size,
           "shared_pieces": round(len(theirs & mine) / len(theirs), 4)}
    row["ratio"] = round(row["shardpiece_bytes_per_token"] / row["sentencepiece_bytes_per_token"], 4)
    print(f"{name}: {row}", flush=True)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", nargs="+", default=["en", "zh", "ja", "uk"])
    parser.add_argument("--corpora", default=common.DEFAULT_CORPORA)
    parser.add_argument("--vocab-size", type=int, default=32000)
    parser.add_argument("--train-bytes", type=int, default=14_000_000, help="cap per corpus (default 14 MB)")
    parser.add_argument("--work", default=common.DEFAULT_WORK)
    args = parser.parse_args()
    rows = [compare(name, args) for name in args.corpus]
    print(common.markdown_table(
        ["corpus", "train MB", "sentencepiece bytes/token", "shardpiece bytes/token", "ratio", "vocab (sp / ours)",
         "pieces shared"],
        [[r["corpus"], f"{r['train_bytes'] / 1e6:.1f}", f"{r['sentencepiece_bytes_per_token']:.4f}",
          f"{r['shardpiece_bytes_per_token']:.4f}", f"{r['ratio']:.4f}",
          f"{r['sentencepiece_vocab']} / {r['shardpiece_vocab']}", f"{r['shared_pieces']:.3f}"] for r in rows]))
    print("wrote", common.write_results("bpe-compression", {"vocab_size": args.vocab_size, "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
