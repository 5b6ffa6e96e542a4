"""Superword BPE against byte-level BPE trained on the same text: held-out bytes/token, encode speed, training time
and memory, side by side.

    .venv/bin/python benchmarks/superword.py                                   # en, 64k, transitions 0.6 0.75 0.9
    .venv/bin/python benchmarks/superword.py --vocab-size 128000 --transitions 0.75 0.9
    .venv/bin/python benchmarks/superword.py --reuse-models --cpu-time           # encode again, models as trained
    .venv/bin/python benchmarks/superword.py --corpus kernel --train kernel-256m.txt --vocab-size 200000

Each model is trained on ``NAME.train.txt`` (or ``--train FILE``, a file of ``--corpora`` such as build-large.sh's
slices) by ``shardpiece train --algorithm bpe`` (GPT-2 pattern, ``--master none``, ``--no-resume``) in its own
subprocess, one after the other, with wall time, CPU seconds and peak memory of the process tree;
superword models add ``--superword-transition T`` (and ``--superword-max-words``). Then, in this process, every
model encodes ``NAME.test.txt`` line by line (Arrow batch, one thread): tokens and bytes/token, whether every line
decodes back to its bytes, and encode MB/s, the models timed in turn (best of ``--repeats``) so that load changes
hit all alike; ``--cpu-time`` times them in CPU seconds of this process instead (one thread: what the encoder
did, not what other processes of a loaded machine took of the cores). ``--reuse-models`` takes the models already
in ``--work`` as they are (their training columns then empty). Ratios are against byte-level BPE of the same
vocabulary: ``tokens`` the share of its tokens (0.85: 15% fewer), ``speed`` its MB/s. Prints one table and writes
``benchmarks/results/superword.json`` (one run per command line).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))

from benchmarks import common, processes  # noqa: E402


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", default=common.DEFAULT_CORPORA)
    parser.add_argument("--corpus", default="en", help="NAME: trains on NAME.train.txt, tests on NAME.test.txt")
    parser.add_argument("--train", help="train on this file of --corpora instead of NAME.train.txt")
    parser.add_argument("--vocab-size", type=int, default=64000)
    parser.add_argument("--transitions", type=float, nargs="+", default=[0.6, 0.75, 0.9])
    parser.add_argument("--max-words", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2, help="training threads (--threads of train)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--work", default=os.path.join(common.DEFAULT_WORK, "superword"))
    parser.add_argument("--reuse-models", action="store_true", help="encode with the models in --work, untrained")
    parser.add_argument("--cpu-time", action="store_true", help="time encoding in CPU seconds, not wall seconds")
    return parser.parse_args(argv)


def train(args, train_path: str, name: str, extra: list[str]) -> tuple[str, dict]:
    """Train one model in a measured subprocess; ``(model path, measured run as a dict)``."""
    model = os.path.join(args.work, f"{name}.model")
    if args.reuse_models and os.path.exists(model):
        print(f"reusing {model}", flush=True)
        return model, None
    command = [common.PYTHON, "-m", "jobs.cli", "train", "--algorithm", "bpe", "--input", train_path,
               "--vocab-size", str(args.vocab_size), "--output", model, "--pattern", "gpt2", "--master", "none",
               "--threads", str(args.threads), "--holdout-fraction", "0", "--eval-documents", "10", "--no-resume",
               "--work-dir", os.path.join(args.work, "stages"), "--quiet", *extra]
    print(f"training {name} ({common.load_text()}) ...", flush=True)
    run = processes.run_measured(command, env={"SPARK_LOCAL_IP": "127.0.0.1"}, cwd=common.REPO,
                                 log_path=os.path.join(args.work, f"{name}.log"))
    if run.returncode != 0:
        sys.exit(f"{name} training failed ({run.returncode}):\n{run.output_tail}")
    print(f"  {run.seconds:.1f} s wall, {run.cpu_seconds:.1f} s CPU, peak {run.memory.peak_total_mib:.0f} MiB",
          flush=True)
    return model, run.to_dict()


def main(argv=None) -> None:
    args = parse_args(argv)
    import pyarrow as pa

    from tokenizer import Tokenizer

    os.makedirs(args.work, exist_ok=True)
    train_path = os.path.join(args.corpora, args.train) if args.train else \
        common.corpus_path(args.corpora, args.corpus, "train")
    if not os.path.isfile(train_path):
        sys.exit(f"missing {train_path}: build the corpora (corpora/build-large.sh) or pass --corpora DIR")
    test_path = common.corpus_path(args.corpora, args.corpus, "test")
    systems = {"byte-level BPE": []}
    for transition in args.transitions:
        systems[f"superword t={transition:g}"] = ["--superword-transition", f"{transition:g}",
                                                  "--superword-max-words", str(args.max_words)]
    trained = {name: train(args, train_path, name.replace(" ", "-").replace("=", ""), extra)
               for name, extra in systems.items()}

    with open(test_path, "rb") as handle:
        lines = handle.read().split(b"\n")
    texts = pa.array(lines, pa.binary())
    test_bytes = sum(map(len, lines))
    tokenizers = {name: Tokenizer.load(path) for name, (path, _) in trained.items()}
    results = {}
    for name, tok in tokenizers.items():
        encoded = tok.encode_batch(lines, num_threads=1)
        results[name] = {"tokens": sum(map(len, encoded)), "pieces": tok.vocab_size,
                         "round_trip": all(tok.decode_bytes(ids) == line for ids, line in zip(encoded, lines))}
        del encoded
    timed = {name: (lambda tok=tok: tok.encode_batch(texts, num_threads=1)) for name, tok in tokenizers.items()}
    best = common.interleaved_best(timed, args.repeats, warm_up=True,
                                   clock=time.process_time if args.cpu_time else time.perf_counter)
    base = "byte-level BPE"
    clock = "CPU seconds" if args.cpu_time else "wall seconds"
    rows = []
    for name, result in results.items():
        run = trained[name][1]
        result.update(bytes_per_token=round(test_bytes / result["tokens"], 4),
                      encode_mb_per_s=round(test_bytes / best[name] / 1e6, 2), encode_clock=clock)
        if run is not None:
            result.update(train_seconds=run["seconds"], train_cpu_seconds=run["cpu_seconds"],
                          train_peak_mib=run["memory"]["peak_total_mib"], load_before=run["load_before"])
        result["tokens_ratio"] = round(result["tokens"] / results[base]["tokens"], 4)
        result["speed_ratio"] = round(best[base] / best[name], 3)
        rows.append([name, result["pieces"], f"{result['bytes_per_token']:.3f}", f"{result['tokens']:,}",
                     f"{100 * (1 - result['tokens_ratio']):.1f}%", "yes" if result["round_trip"] else "NO",
                     result["encode_mb_per_s"], f"{result['speed_ratio']:.2f}",
                     *([f"{run['seconds']:.0f}", f"{run['cpu_seconds']:.0f}", f"{run['memory']['peak_total_mib']:.0f}"]
                       if run is not None else ["—"] * 3)])
    print(f"\ntrained on {os.path.basename(train_path)}; {args.corpus}.test ({test_bytes:,} bytes, "
          f"{len(lines):,} lines), {args.vocab_size:,} pieces; "
          f"encode timed in {clock}; {common.load_text()}\n")
    print(common.markdown_table(
        ["model", "pieces", "bytes/token", "tokens", "fewer tokens", "round trip", "encode MB/s", "speed ratio",
         "train s", "train CPU s", "peak MiB"], rows))
    targets = {name: {"fewer_tokens_10pct": r["tokens_ratio"] <= 0.9, "speed_0_7x": r["speed_ratio"] >= 0.7,
                      "round_trip": r["round_trip"]} for name, r in results.items() if name != base}
    path = common.write_results("superword", {"corpus": args.corpus, "train": os.path.basename(train_path),
                                              "vocab_size": args.vocab_size,
                                              "max_words": args.max_words, "test_bytes": test_bytes,
                                              "results": results, "targets": targets},
                                key=common.run_key(argv))
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
