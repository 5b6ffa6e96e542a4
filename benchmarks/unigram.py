"""Unigram training side by side: ``shardpiece train --algorithm unigram`` (Spark, start-up included) vs
sentencepiece's unigram trainer (same normalizer: identity; SentencePiece's own defaults on both sides: shardpiece
with ``--unigram-defaults sentencepiece``; 2 threads), then bytes/token of both on the test split, and whether
sentencepiece, loading shardpiece's exported .model, gives shardpiece's ids.

    .venv/bin/python benchmarks/unigram.py --corpus en --vocab-size 32000 [--master local[2]] [--test-lines N]
        [--reuse-models]

Prints one table row per corpus and writes each into ``benchmarks/results/unigram.json`` under the corpus's name
(with the load average at the start and the end; a later run on that corpus replaces it). ``--reuse-models`` evaluates the models a previous run left in ``--work`` instead of training
again (their training times are then not measured: ``null``).
"""

from __future__ import annotations

import os
import sys


import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from benchmarks import common


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", nargs="+", default=["en"])
    parser.add_argument("--corpora", default=os.environ.get("SHARDPIECE_CORPORA", "/work/corpora"))
    parser.add_argument("--vocab-size", type=int, default=32000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--test-lines", type=int, default=20000)
    parser.add_argument("--work", default="/tmp/shardpiece-bench/unigram")
    parser.add_argument("--reuse-models", action="store_true", help="skip training when --work holds both models")
    args = parser.parse_args()
    import sentencepiece as spm

    from tokenizer import Tokenizer
    from tokenizer.interop.sentencepiece_export import save_sentencepiece

    os.makedirs(args.work, exist_ok=True)
    rows = []
    for corpus in args.corpus:
        train = os.path.join(args.corpora, f"{corpus}.train.txt")
        test = open(os.path.join(args.corpora, f"{corpus}.test.txt"), encoding="utf-8").read().split("\n")
        test = [t for t in test if t][:args.test_lines]
        prefix = os.path.join(args.work, f"sp-{corpus}")
        ours_path = os.path.join(args.work, f"shardpiece-{corpus}.model")
        load_start = os.getloadavg()
        sp_seconds = ours_seconds = None
        if not (args.reuse_models and os.path.exists(prefix + ".model")):
            started = time.perf_counter()
            spm.SentencePieceTrainer.train(input=train, model_prefix=prefix, vocab_size=args.vocab_size,
                                           model_type="unigram", normalization_rule_name="identity", num_threads=2,
                                           minloglevel=2)
            sp_seconds = round(time.perf_counter() - started, 1)
            print(f"{corpus}: sentencepiece trained in {sp_seconds} s", flush=True)
        if not (args.reuse_models and os.path.exists(ours_path)):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-m", "jobs.cli", "train", "--algorithm", "unigram",
                            "--unigram-defaults", "sentencepiece", "--input", train,
                            "--vocab-size", str(args.vocab_size), "--output", ours_path, "--master", args.master,
                            "--holdout-fraction", "0", "--eval-documents", "10", "--quiet", "--no-resume"],
                           check=True, cwd=REPO)
            ours_seconds = round(time.perf_counter() - started, 1)
            print(f"{corpus}: shardpiece trained in {ours_seconds} s", flush=True)
        sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
        tok = Tokenizer.load(ours_path)
        n_bytes = sum(len(t.encode()) for t in test)
        sp_bpt = n_bytes / sum(len(x) for x in sp.encode(test))
        ours_ids = [tok.encode(t) for t in test]
        ours_bpt = n_bytes / sum(len(x) for x in ours_ids)
        exported = os.path.join(args.work, f"shardpiece-{corpus}-sp.model")
        save_sentencepiece(tok.model, exported)
        same = sum(a == b for a, b in zip(spm.SentencePieceProcessor(model_file=exported).encode(test), ours_ids))
        row = {"corpus": corpus, "vocab_size": args.vocab_size, "sentencepiece_train_s": sp_seconds,
               "shardpiece_train_s": ours_seconds, "sentencepiece_bytes_per_token": round(sp_bpt, 4),
               "shardpiece_bytes_per_token": round(ours_bpt, 4), "test_lines": len(test),
               "exported_identical_ids": f"{same}/{len(test)}",
               "relative_difference": round(ours_bpt / sp_bpt - 1, 5),
               "load_average": {"start": [round(x, 2) for x in load_start],
                                "end": [round(x, 2) for x in os.getloadavg()]}}
        rows.append(row)
        print(json.dumps(row), flush=True)
        common.write_results("unigram", row, key=corpus)
    return 0


if __name__ == "__main__":
    sys.exit(main())
