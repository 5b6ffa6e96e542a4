"""The training engines side by side on nested slices: where ``--master auto``'s in-process default stops paying,
and what Apache Beam's direct runner costs.

    export SPARK_LOCAL_IP=127.0.0.1
    .venv/bin/python benchmarks/engines.py                                   # 64, 256, 512 MiB; bytepiece, bpe
    .venv/bin/python benchmarks/engines.py --slices 64 256 --algorithms unigram
    .venv/bin/python benchmarks/engines.py --slices 16 64 --algorithms bytepiece unigram bpe bpe-byte-level \
        --engines in-process spark beam                                     # the Beam table (pip install .[beam])

Each slice is build-large.sh's ``kernel-NNNm.txt`` (``--corpora DIR``); each algorithm trains at 32k with its
defaults twice, each run a measured subprocess (``processes.run_measured``: wall, CPU of the tree, peak RSS summed
over the tree: the Python driver, Spark's JVM and Python workers): ``--master none`` (this process, every core's
thread) and ``--master local[2]`` (Spark on the same two cores), and with ``--engines ... beam`` ``--engine beam``
(the direct runner, 2 worker processes), all ``--no-resume``. The model files must be byte-identical (a column says
so). The in-process engine holds the documents in memory and sums one table, so its
memory grows with the input where Spark's stays bounded (it spills); the table shows both, with the ratios.

Results: a table on stdout and ``benchmarks/results/engines.json`` keyed by the arguments.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import common, processes  # noqa: E402

ENGINES = {"in-process": ["--master", "none"], "spark": ["--master", "local[2]"],
           "beam": ["--engine", "beam", "--beam-option", "direct_num_workers=2",
                    "direct_running_mode=multi_processing"]}
ALGORITHMS = {"bytepiece": ["--algorithm", "bytepiece"], "unigram": ["--algorithm", "unigram"],
              "bpe": ["--algorithm", "bpe", "--pretokenizer", "sentencepiece"],
              "bpe-byte-level": ["--algorithm", "bpe"]}


def train(algorithm: str, engine: str, source: str, output: str, vocab_size: int) -> dict:
    command = [common.PYTHON, "-m", "jobs.cli", "train", *ALGORITHMS[algorithm], *ENGINES[engine], "--input", source,
               "--vocab-size", str(vocab_size), "--output", output, "--no-resume", "--quiet"]
    env = {"SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": common.PYTHON, "PYSPARK_DRIVER_PYTHON": common.PYTHON}
    print(f"[{algorithm} {engine}] {os.path.basename(source)} ({common.load_text()}) ...", flush=True)
    os.makedirs(os.path.dirname(output), exist_ok=True)
    run = processes.run_measured(command, env=env, cwd=common.REPO, log_path=output + ".log")
    if run.returncode != 0:
        raise RuntimeError(f"{algorithm} on {engine} failed ({run.returncode}); log {output}.log:\n{run.output_tail}")
    with open(output, "rb") as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()
    print(f"[{algorithm} {engine}] {run.seconds:.1f} s, peak {run.memory.peak_total_mib:,.0f} MiB", flush=True)
    return {"seconds": round(run.seconds, 3), "cpu_seconds": round(run.cpu_seconds, 3),
            "peak_tree_mib": round(run.memory.peak_total_mib, 1), "model_sha256": digest,
            "load_before": run.load_before, "load_after": run.load_after}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpora", default=common.DEFAULT_CORPORA)
    parser.add_argument("--work", default=os.path.join(common.DEFAULT_WORK, "engines"))
    parser.add_argument("--slices", type=int, nargs="+", default=[64, 256, 512], help="MiB (kernel-NNNm.txt)")
    parser.add_argument("--algorithms", nargs="+", choices=list(ALGORITHMS), default=["bytepiece", "bpe"])
    parser.add_argument("--vocab-size", type=int, default=32000)
    parser.add_argument("--engines", nargs="+", choices=list(ENGINES), default=["in-process", "spark"])
    args = parser.parse_args(argv)
    rows, runs = [], {}
    for mib in args.slices:
        source = os.path.join(args.corpora, f"kernel-{mib}m.txt")
        if not os.path.isfile(source):
            sys.exit(f"missing {source}: build the slices with corpora/build-large.sh, or pass --corpora")
        for algorithm in args.algorithms:
            measured = {engine: train(algorithm, engine, source,
                                      os.path.join(args.work, f"{algorithm}-{mib}-{engine}.model"), args.vocab_size)
                        for engine in args.engines}
            runs[f"{algorithm} {mib}"] = measured
            first = measured[args.engines[0]]
            rows.append((algorithm, mib, *(measured[e]["seconds"] for e in args.engines),
                         *(round(measured[e]["peak_tree_mib"]) for e in args.engines),
                         *(f"{measured[e]['seconds'] / first['seconds']:.2f}x time, "
                           f"{measured[e]['peak_tree_mib'] / first['peak_tree_mib']:.2f}x memory"
                           for e in args.engines[1:]),
                         "yes" if len({m["model_sha256"] for m in measured.values()}) == 1 else "NO"))
    print()
    print(common.markdown_table(["algorithm", "MiB", *(f"{e} s" for e in args.engines),
                                 *(f"{e} peak MiB (tree)" for e in args.engines),
                                 *(f"{e}/{args.engines[0]}" for e in args.engines[1:]), "same model bytes"], rows))
    path = common.write_results("engines", {"runs": runs},
                                key=common.run_key(argv))
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
