"""The driver's table bound at work: each algorithm trained with ``--max-table-entries`` set to a quarter of the
entries its largest table has on the slice (never below the option's minimum), once with ``--partitions 4`` and
once with ``--partitions 16``: the run completes, the manifest says what the bound dropped and how much of the
corpus the kept entries cover, and both partitionings give the same model bytes.

    .venv/bin/python benchmarks/bound_partitions.py --slice 32          # kernel-32m.txt of build-large.sh
    .venv/bin/python benchmarks/bound_partitions.py --slice 128 --algorithms unigram

The unbounded table sizes come from ``benchmarks/scaling.py``'s run of the same slice (``--scaling-work``), else
from an unbounded run here. Prints one table and writes ``benchmarks/results/bound-partitions.json``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))

from benchmarks import common, processes, scaling  # noqa: E402

ALGORITHMS = {"bytepiece": "shardpiece-bytepiece", "unigram": "shardpiece-unigram",
              "bpe-sp": "shardpiece-bpe-sp", "bpe-bl": "shardpiece-bpe-bl"}
MIN_LIMIT = 65536  # the option's minimum (tokenizer.trainers.limits.MIN_TABLE_ENTRIES)


def largest_table(system: str, row: dict) -> int:
    stage, key = scaling.STAGE_KINDS[system][2]
    return int(row["stages"][stage][key])


def train(system: str, train_path: str, out_dir: str, bound: int | None, partitions: int | None, args) -> dict:
    """Train ``system`` with the scaling benchmark's settings (plus the bound and partitions); returns the run's
    figures, the model's sha256 and the manifest's table bounds."""
    os.makedirs(out_dir, exist_ok=True)
    command, env = scaling.train_command(system, train_path, out_dir, argparse.Namespace(
        vocab_size=args.vocab_size, max_table_entries=bound))
    if partitions:
        command += ["--partitions", str(partitions)]
    measured = processes.run_measured(command, env=env, cwd=common.REPO, log_path=os.path.join(out_dir, "log.txt"))
    if measured.returncode != 0:
        raise RuntimeError(f"{system} failed ({measured.returncode}):\n{measured.output_tail}")
    model = scaling.model_path(out_dir, system)
    with open(model, "rb") as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()
    with open(model + ".manifest.json", encoding="utf-8") as handle:
        manifest = json.load(handle)
    return {"seconds": round(measured.seconds, 1), "sha256": digest,
            "table_bounds": manifest.get("table_bounds") or {},
            "stages": {s["name"]: s["counts"] for s in manifest["stages"]}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpora", default=os.path.join(common.DEFAULT_CORPORA, "large"))
    parser.add_argument("--slice", type=int, default=32, help="MiB (default 32)")
    parser.add_argument("--algorithms", nargs="+", default=list(ALGORITHMS), choices=list(ALGORITHMS))
    parser.add_argument("--vocab-size", type=int, default=32000)
    parser.add_argument("--scaling-work", default=os.path.join(common.DEFAULT_WORK, "scaling"))
    parser.add_argument("--work", default=os.path.join(common.DEFAULT_WORK, "bound-partitions"))
    args = parser.parse_args()
    train_path = os.path.join(args.corpora, f"kernel-{args.slice}m.txt")
    rows = []
    for name in args.algorithms:
        system = ALGORITHMS[name]
        known = os.path.join(args.scaling_work, "results", f"{system}-{args.slice}m.json")
        if os.path.isfile(known):
            with open(known, encoding="utf-8") as handle:
                unbounded = json.load(handle)
        else:
            unbounded = train(system, train_path, os.path.join(args.work, f"{name}-unbounded"), 0, None, args)
        entries = largest_table(system, unbounded)
        bound = max(entries // 4, MIN_LIMIT)
        runs = {p: train(system, train_path, os.path.join(args.work, f"{name}-p{p}"), bound, p, args) for p in (4, 16)}
        bounds = runs[4]["table_bounds"]
        dropped = {table: (info["dropped_entries"], info["kept_share"]) for table, info in bounds.items()}
        row = {"algorithm": name, "slice_mib": args.slice, "unbounded_entries": entries, "bound": bound,
               "dropped": dropped, "same_model_bytes": runs[4]["sha256"] == runs[16]["sha256"],
               "sha256": runs[4]["sha256"], "seconds": {p: runs[p]["seconds"] for p in runs},
               "table_bounds": bounds}
        print(json.dumps(row), flush=True)
        rows.append(row)
    print(common.markdown_table(
        ["algorithm", "largest table (unbounded)", "--max-table-entries", "dropped (kept share of occurrences)",
         "same model bytes, --partitions 4 / 16", "seconds (4 / 16)"],
        [[r["algorithm"], f"{r['unbounded_entries']:,}", f"{r['bound']:,}",
          "; ".join(f"{t}: {d:,} ({share:.4f})" for t, (d, share) in r["dropped"].items() if d) or "none",
          "yes" if r["same_model_bytes"] else "NO", f"{r['seconds'][4]} / {r['seconds'][16]}"] for r in rows]))
    print("wrote", common.write_results("bound-partitions", {"slice_mib": args.slice, "rows": rows}))
    return 0 if all(r["same_model_bytes"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
