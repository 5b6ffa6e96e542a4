"""``shardpiece train`` of this tree against an older revision's, interleaved, on the same corpus: wall and CPU
seconds of the whole process tree and whether the model bytes are equal, for every algorithm and reader.

    .venv/bin/python benchmarks/train_versions.py --old cd54951 --corpus zh --repeats 2

The old revision is exported with ``git archive`` into ``--work`` and run with the same Python (its own ``jobs`` and
``tokenizer`` packages first on ``PYTHONPATH``), one subprocess per run, old and new alternating, each with
``--no-resume`` where the revision has it, so every stage is computed (:func:`takes_no_resume`: revisions before the
one training job resumed only BytePiece). Runs: bytepiece (Spark's reader), unigram and bpe with ``--reader auto``
(pyarrow in the tasks) and ``--reader spark`` (Spark's reader and the job's reduce), all at ``--vocab-size`` on
``local[2]``. Old revisions took ``--max-piece-length`` and ran unigram and BPE without a work directory; the commands
here use only options both understand. Prints a table (best wall and CPU seconds of
``--repeats``, new / old) and writes the run into
``benchmarks/results/train-versions.json`` under the corpus's name (a later run on that corpus replaces it).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from benchmarks import processes  # noqa: E402  (common put the repository on sys.path)

RUNS = {  # name: (algorithm options, extra options for the new tree only)
    "bytepiece": (["--algorithm", "bytepiece", "--min-count", "8", "--normalization", "nfc", "--no-resume"], []),
    "unigram (pyarrow in tasks)": (["--algorithm", "unigram"], ["--no-resume", "--unigram-defaults", "sentencepiece"]),
    "unigram (Spark reader)": (["--algorithm", "unigram", "--reader", "spark"],
                               ["--no-resume", "--unigram-defaults", "sentencepiece"]),
    "bpe (pyarrow in tasks)": (["--algorithm", "bpe"], ["--no-resume"]),
    "bpe (Spark reader)": (["--algorithm", "bpe", "--reader", "spark"], ["--no-resume"]),
}


def export_revision(revision: str, work: str) -> str:
    """The directory holding ``git archive REVISION`` (made once)."""
    target = os.path.join(work, f"tree-{revision}")
    if not os.path.isdir(target):
        os.makedirs(target + ".part", exist_ok=True)
        archive = subprocess.run(["git", "archive", revision], cwd=common.REPO, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", target + ".part"], input=archive.stdout, check=True)
        os.replace(target + ".part", target)
    return target


def takes_no_resume(tree: str) -> bool:
    """Whether the revision in ``tree`` resumes unigram and BPE training from a work directory (and so takes
    ``--no-resume`` for them): then both trees run with it, so neither reuses a stage."""
    jobs = os.path.join(tree, "jobs")
    for name in os.listdir(jobs):
        if name.endswith(".py"):
            with open(os.path.join(jobs, name), encoding="utf-8") as handle:
                if '"--no-resume"' in handle.read():
                    return True
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--old", required=True, help="git revision to compare with")
    parser.add_argument("--corpus", default="zh", choices=common.CORPORA)
    parser.add_argument("--corpora", default=common.DEFAULT_CORPORA)
    parser.add_argument("--work", default=common.DEFAULT_WORK)
    parser.add_argument("--vocab-size", type=int, default=32000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--runs", nargs="+", choices=list(RUNS), default=list(RUNS))
    args = parser.parse_args()

    old_tree = export_revision(args.old, args.work)
    train = common.corpus_path(args.corpora, args.corpus, "train")
    trees = {"old": old_tree, "new": common.REPO}
    old_takes_no_resume = takes_no_resume(old_tree)
    results, rows = [], []
    for name in args.runs:
        options, new_only = RUNS[name]
        measured: dict[str, list] = {"old": [], "new": []}
        outputs = {}
        for _ in range(args.repeats):
            for version, tree in trees.items():
                slug = name.split()[0] + ("-spark" if "Spark" in name else "")
                out = os.path.join(args.work, f"versions-{args.corpus}-{slug}-{version}.model")
                command = [common.PYTHON, "-m", "jobs.cli", "train", *options, "--input", train, "--vocab-size",
                           str(args.vocab_size), "--output", out, "--master", "local[2]", "--holdout-fraction", "0",
                           "--quiet", *(new_only if version == "new" or old_takes_no_resume else [])]
                env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1",
                           PYTHONPATH=tree + os.pathsep + os.environ.get("PYTHONPATH", ""))
                log = os.path.join(args.work, f"versions-{slug}-{version}.log")
                run = processes.run_measured(command, env=env, cwd=tree, log_path=log)
                if run.returncode != 0:
                    raise SystemExit(f"{version} {name} failed:\n{run.output_tail}")
                measured[version].append(run)
                outputs[version] = out
        with open(outputs["old"], "rb") as a, open(outputs["new"], "rb") as b:
            equal = a.read() == b.read()
        best = {v: (min(r.seconds for r in runs), min(r.cpu_seconds for r in runs)) for v, runs in measured.items()}
        entry = {"run": name, "old": best["old"], "new": best["new"], "model_bytes_equal": equal,
                 "peak_tree_pss_mib": {v: max(r.memory.peak_total_pss_mib for r in runs)
                                       for v, runs in measured.items()}}
        results.append(entry)
        rows.append([name, f"{best['old'][0]:.1f}", f"{best['new'][0]:.1f}",
                     f"{best['new'][0] / best['old'][0]:.2f}", f"{best['old'][1]:.1f}", f"{best['new'][1]:.1f}",
                     f"{best['new'][1] / best['old'][1]:.2f}", "yes" if equal else "NO"])
        print(rows[-1], flush=True)
    print(common.markdown_table(["run", "old wall s", "new wall s", "new/old", "old CPU s", "new CPU s", "new/old",
                                 "same model bytes"], rows))
    path = common.write_results("train-versions", {
        "command": " ".join(["benchmarks/train_versions.py"] + sys.argv[1:]), "old": args.old,
        "corpus": args.corpus, "vocab_size": args.vocab_size, "repeats": args.repeats,
        "load_average": common.load_average(), "results": results}, key=args.corpus)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
