"""Training at growing corpus sizes: how time, tables, shuffle and memory grow, for every algorithm and its peer.

    .venv/bin/python benchmarks/scaling.py --corpora /work/corpora/large            # all systems, all slices
    .venv/bin/python benchmarks/scaling.py --slices 16 32 --systems shardpiece-bytepiece bytepiece
    .venv/bin/python benchmarks/scaling.py --report                                  # tables and plot only

Corpus: ``kernel-{64,128,256,512}m.txt`` (nested slices: each larger one holds the smaller) and ``kernel.test.txt``
(held out of every slice), as the shared ``corpora/build-large.sh`` builds them into ``--corpora``; a slice it does
not build (1024 MiB) is cut here from its ``kernel.txt`` the same way (the first N MiB, up to the end of the line
that reaches N MiB) into ``--work``/slices. Every shardpiece run pins ``--master 'local[2]'``.

Systems (32k pieces, 2 cores each), side by side with the peer that trains the same kind of model:

====================== ================================================================================
shardpiece-bytepiece   ``train --algorithm bytepiece`` (order 6, min_count 8, NFC), ``local[2]``
bytepiece              bytepiece's Trainer, same settings, 2 workers
shardpiece-unigram     ``train --algorithm unigram`` (identity normalizer), ``local[2]``
sentencepiece-unigram  sentencepiece unigram, identity normalizer, 2 threads, ``train_extremely_large_corpus``
shardpiece-bpe-sp      ``train --algorithm bpe --pretokenizer sentencepiece``, ``local[2]``
sentencepiece-bpe      sentencepiece BPE, lossless settings, 2 threads, ``train_extremely_large_corpus``
shardpiece-bpe-bl      ``train --algorithm bpe --pretokenizer byte_level --pattern gpt2``, ``local[2]``
tokenizers-bpe         Hugging Face tokenizers' BpeTrainer, ByteLevel pre-tokenizer, 2 threads
====================== ================================================================================

Every run is a subprocess whose process tree is sampled every 0.1 s: wall time, the peak RSS of the driver Python
process (the measured command; for a peer, its only Python process), of the JVM, and the peak PSS sum of the whole
tree. shardpiece runs add their manifest's stage seconds and table sizes (n-grams kept, chunks, pieces; what a table
bound dropped) and the shuffle bytes that Spark's event log records. Then bytes/token of the model on the held-out
file's lines. A run that takes longer than ``--limit-minutes`` or whose tree grows past ``--limit-gib`` is killed;
that system is not run on larger slices, and the table says where it stopped.

Each (system, slice) result is kept in ``--work``/results, so the benchmark resumes where it was stopped (it takes
hours: run it in the background); on a machine whose ``--work`` is empty, the runs recorded in
``benchmarks/results/scaling.json`` count as done (each row says the commit it measured; ``--rerun`` repeats).
Output: tables on stdout (one row per run; the growth factor per doubling of time, driver memory and tree memory),
``benchmarks/results/scaling.json`` and a log-log plot beside it (``scaling.png``, time and memory against corpus
size, one line per system; needs matplotlib, the ``bench`` extra).
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import shutil
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))

from benchmarks import common, peers, processes  # noqa: E402

SLICES = (64, 128, 256, 512, 1024)
#: system -> (algorithm it trains, whose it is)
SYSTEMS = {
    "shardpiece-bytepiece": "bytepiece", "bytepiece": "bytepiece",
    "shardpiece-unigram": "unigram", "sentencepiece-unigram": "unigram",
    "shardpiece-bpe-sp": "sentencepiece-style bpe", "sentencepiece-bpe": "sentencepiece-style bpe",
    "shardpiece-bpe-bl": "byte-level bpe", "tokenizers-bpe": "byte-level bpe",
}


def model_path(run_dir: str, system: str) -> str:
    suffix = {"bytepiece": ".json", "tokenizers-bpe": ".json", "sentencepiece-unigram": ".model",
              "sentencepiece-bpe": ".model"}.get(system, ".shardpiece")
    return os.path.join(run_dir, "model" + suffix)


def train_command(system: str, train: str, run_dir: str, args) -> tuple[list[str], dict[str, str]]:
    """The subprocess that trains ``system`` on ``train`` into ``run_dir``, and its extra environment."""
    out = model_path(run_dir, system)
    vocab = str(args.vocab_size)
    if system == "bytepiece":
        return common.bytepiece_command(train, out, args.vocab_size, workers=2)
    if system == "sentencepiece-unigram":  # the identity normalizer only: sentencepiece's defaults otherwise
        return peers.sentencepiece_command(train, out, {"model_type": "unigram", "vocab_size": args.vocab_size,
                                                        "normalization_rule_name": "identity", "num_threads": 2,
                                                        "train_extremely_large_corpus": True})
    if system == "sentencepiece-bpe":
        return peers.sentencepiece_command(train, out, peers.sentencepiece_settings(
            "bpe", args.vocab_size, 2, train_extremely_large_corpus=True))
    if system == "tokenizers-bpe":
        return peers.tokenizers_command(train, out, args.vocab_size, threads=2)
    events = os.path.join(run_dir, "events")
    os.makedirs(events, exist_ok=True)
    algorithm = {"shardpiece-bytepiece": ["--algorithm", "bytepiece", "--order", "6", "--min-count", "8",
                                          "--normalization", "nfc"],
                 "shardpiece-unigram": ["--algorithm", "unigram", "--unigram-defaults", "sentencepiece"],
                 "shardpiece-bpe-sp": ["--algorithm", "bpe", "--pretokenizer", "sentencepiece"],
                 "shardpiece-bpe-bl": ["--algorithm", "bpe", "--pretokenizer", "byte_level", "--pattern", "gpt2"]}
    command = [common.PYTHON, "-m", "jobs.cli", "train", *algorithm[system], "--input", train, "--vocab-size", vocab,
               "--output", out, "--master", "local[2]", "--holdout-fraction", "0", "--eval-documents", "10",
               "--no-resume", "--work-dir", os.path.join(run_dir, "work"),
               "--set", "spark.eventLog.enabled=true", "--set", f"spark.eventLog.dir=file://{events}",
               "--set", "spark.eventLog.compress=false"]
    if args.max_table_entries is not None:
        command += ["--max-table-entries", str(args.max_table_entries)]
    return command, {"SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": common.PYTHON,
                     "PYSPARK_DRIVER_PYTHON": common.PYTHON}


def shuffle_bytes(events_dir: str) -> dict[str, int]:
    """Bytes written to and read from Spark's shuffle, summed over the tasks of every event log in ``events_dir``."""
    written = read = 0
    for path in glob.glob(os.path.join(events_dir, "**", "*"), recursive=True):  # Spark 4: a folder per app
        if not os.path.isfile(path) or os.path.basename(path).startswith("appstatus"):
            continue
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                if '"SparkListenerTaskEnd"' not in line:
                    continue
                metrics = json.loads(line).get("Task Metrics") or {}
                written += (metrics.get("Shuffle Write Metrics") or {}).get("Shuffle Bytes Written", 0)
                reads = metrics.get("Shuffle Read Metrics") or {}
                read += reads.get("Remote Bytes Read", 0) + reads.get("Local Bytes Read", 0)
    return {"written": written, "read": read}


def held_out_lines(corpora: str) -> list[str]:
    return [line for line in common.read_lines(os.path.join(corpora, "kernel.test.txt")) if line]


def bytes_per_token(system: str, path: str, lines: list[str]) -> float:
    """UTF-8 bytes of ``lines`` over the tokens the model at ``path`` gives them (no bos/eos)."""
    if system == "bytepiece":
        from bytepiece import Tokenizer as BytePieceTokenizer

        tokenizer = BytePieceTokenizer(path)
        tokens = sum(len(tokenizer.encode(line)) for line in lines)
    elif system.startswith("sentencepiece-"):
        import sentencepiece as spm

        tokens = sum(map(len, spm.SentencePieceProcessor(model_file=path).encode(lines)))
    elif system == "tokenizers-bpe":
        from tokenizers import Tokenizer as HfTokenizer

        encoded = HfTokenizer.from_file(path).encode_batch(lines, add_special_tokens=False)
        tokens = sum(len(e.ids) for e in encoded)
    else:
        from tokenizer import Tokenizer

        tokens = sum(map(len, Tokenizer.load(path).encode_batch(lines)))
    return sum(len(line.encode()) for line in lines) / max(1, tokens)


def summarize(system: str, measured: processes.Measured, run_dir: str) -> dict:
    """One run's figures: seconds, peak memory by role, and (shardpiece) stages, tables and shuffle bytes."""
    peaks = measured.memory.peak_by_process
    java = [v["rss_mib"] for k, v in peaks.items() if k.startswith("java ")]
    driver = [v["rss_mib"] for k, v in peaks.items() if k.startswith("driver ")]
    row = {"system": system, "seconds": round(measured.seconds, 1), "cpu_seconds": round(measured.cpu_seconds, 1),
           "driver_mib": max(driver, default=0.0), "jvm_mib": max(java, default=0.0),
           "tree_mib": round(measured.memory.peak_total_pss_mib, 1), "returncode": measured.returncode,
           "stopped_by": measured.stopped_by, "load_before": measured.load_before, "load_after": measured.load_after}
    manifest_path = model_path(run_dir, system) + ".manifest.json"
    if system.startswith("shardpiece-") and os.path.isfile(manifest_path):
        with open(manifest_path, encoding="utf-8") as handle:
            manifest = json.load(handle)
        row["stages"] = {s["name"]: {"seconds": s["seconds"], **s["counts"],
                                     **({"driver_peak_mib": s["driver_peak_mib"]} if s.get("driver_peak_mib") else {})}
                         for s in manifest["stages"]}
        row["table_bounds"] = manifest.get("table_bounds") or {}
        row["shuffle"] = shuffle_bytes(os.path.join(run_dir, "events"))
    if measured.returncode != 0 and not measured.stopped_by:
        row["output_tail"] = measured.output_tail
    return row


def slice_path(args, slice_mib: int) -> str:
    """``kernel-{slice_mib}m.txt``: build-large.sh's, or else cut here from its ``kernel.txt`` (the first
    ``slice_mib`` MiB up to the end of the line that reaches them, as build-large.sh cuts its slices) into
    ``--work``/slices, once. Raises SystemExit naming the fix when ``kernel.txt`` is too short or missing."""
    built = os.path.join(args.corpora, f"kernel-{slice_mib}m.txt")
    if os.path.isfile(built):
        return built
    cut = os.path.join(args.work, "slices", f"kernel-{slice_mib}m.txt")
    if os.path.isfile(cut):
        return cut
    source, size = os.path.join(args.corpora, "kernel.txt"), slice_mib << 20
    if not os.path.isfile(source) or os.path.getsize(source) < size:
        raise SystemExit(f"{source} is missing or shorter than {slice_mib} MiB: run build-large.sh into --corpora")
    os.makedirs(os.path.dirname(cut), exist_ok=True)
    with open(source, "rb") as handle:
        head = handle.read(size)
        rest = b"" if head.endswith(b"\n") else handle.readline()  # up to the end of the line reaching the size
    common.write_atomic(cut, head + rest)
    return cut


def run_one(system: str, slice_mib: int, args, lines: list[str]) -> dict:
    run_dir = os.path.join(args.work, "runs", f"{system}-{slice_mib}m")
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(run_dir)
    train = slice_path(args, slice_mib)
    command, env = train_command(system, train, run_dir, args)
    print(f"[{system} {slice_mib} MiB] training ({common.load_text()})", flush=True)
    measured = processes.run_measured(command, env=env, cwd=common.REPO, log_path=os.path.join(run_dir, "log.txt"),
                                   max_seconds=args.limit_minutes * 60, max_tree_mib=args.limit_gib * 1024)
    row = {"slice_mib": slice_mib, "train_bytes": os.path.getsize(train), **common.git_revision(),
           **summarize(system, measured, run_dir)}
    if measured.returncode == 0:
        row["bytes_per_token"] = round(bytes_per_token(system, model_path(run_dir, system), lines), 4)
    shutil.rmtree(os.path.join(run_dir, "work"), ignore_errors=True)  # keep the model, log and events, not stages
    print(f"[{system} {slice_mib} MiB] {row['seconds']} s, tree {row['tree_mib']} MiB"
          + (f", stopped by {row['stopped_by']}" if row["stopped_by"] else "")
          + (f", {row.get('bytes_per_token')} bytes/token" if "bytes_per_token" in row else ""), flush=True)
    return row


def result_path(args, system: str, slice_mib: int) -> str:
    return os.path.join(args.work, "results", f"{system}-{slice_mib}m.json")


def load_rows(args) -> list[dict]:
    rows = []
    for system in args.systems:
        for slice_mib in args.slices:
            path = result_path(args, system, slice_mib)
            if os.path.isfile(path):
                with open(path, encoding="utf-8") as handle:
                    rows.append(json.load(handle))
    return rows


def restore_results(args) -> int:
    """Put the runs of ``benchmarks/results/scaling.json`` (made with the same vocab size and bound) into
    ``--work`` where it holds none for that (system, slice), so a new machine goes on where the last one stopped
    (``--rerun`` measures them again). Returns how many it restored."""
    path = os.path.join(common.RESULTS_DIR, "scaling.json")
    if not os.path.isfile(path):
        return 0
    with open(path, encoding="utf-8") as handle:
        recorded = json.load(handle)
    same = {k: recorded.get("settings", {}).get(k) for k in ("vocab_size", "max_table_entries")} == {
        "vocab_size": args.vocab_size, "max_table_entries": args.max_table_entries}
    restored = 0
    for row in recorded.get("runs", []) if same else []:
        target = result_path(args, row["system"], row["slice_mib"])
        if not os.path.isfile(target):
            common.write_atomic(target, (json.dumps(row, indent=2) + "\n").encode())
            restored += 1
    return restored


def finished(row: dict) -> bool:
    return row["returncode"] == 0 and not row["stopped_by"]


def growth(rows: list[dict], key: str) -> list[float]:
    """``key``'s factor between consecutive finished slices of one system (the slices double)."""
    done = [r for r in sorted(rows, key=lambda r: r["slice_mib"]) if finished(r)]
    return [round(b[key] / a[key], 2) if a[key] else float("nan") for a, b in zip(done, done[1:])]


def tables_text(row: dict) -> str:
    """The stage counts that measure a table: n-grams kept, chunks, pieces, what a bound dropped."""
    parts = []
    for stage in (row.get("stages") or {}).values():
        for key, value in stage.items():
            if key != "seconds" and any(word in key for word in ("ngram", "chunk", "piece", "pair", "merge")):
                parts.append(f"{key} {value:,}")
    for name, bound in (row.get("table_bounds") or {}).items():
        if bound.get("dropped_entries"):
            parts.append(f"{name} bound dropped {bound['dropped_entries']:,}")
    return "; ".join(parts) or "—"


#: per shardpiece system: (stages that run in the executors, stages on the driver, (stage, count) of its largest
#: driver table)
STAGE_KINDS = {
    "shardpiece-bytepiece": (("read", "ngrams", "pieces", "candidates"), ("ngram_model", "prune"),
                             ("ngrams", "kept_ngrams")),
    "shardpiece-unigram": (("chunks",), ("em_",), ("chunks", "distinct_chunks")),
    "shardpiece-bpe-sp": (("chunks",), ("merges",), ("chunks", "distinct_chunks")),
    "shardpiece-bpe-bl": (("chunks",), ("merges",), ("chunks", "distinct_chunks")),
}


def _fit_line(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least squares ``y = a + b x``; ``(a, b)``."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    return my - b * mx, b


def _fit_power(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """``y = A x**k`` fitted in log-log; ``(A, k)``."""
    a, k = _fit_line([math.log(x) for x in xs], [math.log(max(y, 1e-9)) for y in ys])
    return math.exp(a), k


def _stage_seconds(row: dict, names: tuple[str, ...]) -> float:
    return sum(stage["seconds"] for name, stage in (row.get("stages") or {}).items()
               if any(name == n or (n.endswith("_") and name.startswith(n)) for n in names))


def projection(rows: list[dict], target_gib: float, cores: int, bound: int) -> list[dict]:
    """The cost model of each shardpiece system, from its finished slices (at least two), projected to
    ``target_gib`` of text on ``cores`` executor cores with the driver table bound ``bound``:

    - executor stages: the core-seconds per GiB of the largest slice (its executor-stage seconds x the 2 measured
      cores / its size; fixed costs included, so an overestimate), divided over ``cores`` (perfect scaling);
    - the driver's table: entries ``K bytes**beta`` (Heaps' law, fitted in log-log over the slices: the table sizes
      are exact counts, not timings), capped at ``bound``;
    - driver stages: their seconds at the largest slice times the table's growth from there to its size at the
      target (linear in the table; the table stops growing at the bound);
    - driver memory: a line through (entries, driver peak RSS) over the slices, at the kept entries;
    - shuffle bytes: the largest slice's bytes per input byte.
    """
    out = []
    for system, (executor, driver, (table_stage, table_key)) in STAGE_KINDS.items():
        done = sorted((r for r in rows if r["system"] == system and finished(r) and r.get("stages")),
                      key=lambda r: r["slice_mib"])
        if len(done) < 2:
            continue
        mib = [r["train_bytes"] / 2**20 for r in done]
        largest, largest_mib = done[-1], mib[-1]
        entries = [r["stages"][table_stage][table_key] for r in done]
        heaps_k, beta = _fit_power(mib, entries)
        target_mib = target_gib * 1024
        table_target = heaps_k * target_mib ** beta
        kept = min(table_target, bound)
        core_seconds_per_mib = _stage_seconds(largest, executor) * 2 / largest_mib
        executor_seconds = core_seconds_per_mib * target_mib / cores
        driver_seconds = _stage_seconds(largest, driver) * kept / entries[-1]
        mem_a, mem_per_entry = _fit_line(entries, [r["driver_mib"] for r in done])
        shuffle_per_mib = largest.get("shuffle", {}).get("written", 0) / largest_mib
        _, wall_exponent = _fit_power(mib, [r["seconds"] for r in done])
        out.append({
            "system": system, "slices_mib": [r["slice_mib"] for r in done],
            "wall_exponent": round(wall_exponent, 3),
            "executor_core_seconds_per_gib": round(core_seconds_per_mib * 1024, 1),
            "heaps_beta": round(beta, 3), "table_entries_at_target": int(table_target),
            "table_entries_kept": int(kept),
            "corpus_gib_where_bound_binds": round((bound / heaps_k) ** (1 / beta) / 1024, 2) if beta > 0 else None,
            "driver_seconds_at_target": round(driver_seconds, 1),
            "driver_mib_per_million_entries": round(mem_per_entry * 1e6, 1),
            "driver_mib_at_target": round(mem_a + mem_per_entry * kept, 0),
            "shuffle_gib_at_target": round(shuffle_per_mib * target_mib / 2**30, 1),
            "executor_seconds_at_target": round(executor_seconds, 0),
            "hours_at_target": round((executor_seconds + driver_seconds) / 3600, 2),
        })
    return out


def report(rows: list[dict], args) -> dict:
    """Print the tables, write the JSON and the plot; returns the payload."""
    table = []
    for row in sorted(rows, key=lambda r: (list(SYSTEMS).index(r["system"]), r["slice_mib"])):
        shuffle = row.get("shuffle", {}).get("written")
        status = "ok" if finished(row) else (f"stopped ({row['stopped_by']})" if row["stopped_by"]
                                            else f"failed ({row['returncode']})")
        table.append([row["system"], row["slice_mib"], row["seconds"], row["driver_mib"], row["jvm_mib"] or "—",
                      row["tree_mib"], "—" if shuffle is None else round(shuffle / 2**20, 1),
                      row.get("bytes_per_token", float("nan")), status, tables_text(row)])
    print(common.markdown_table(["system", "slice MiB", "seconds", "driver py MiB", "JVM MiB", "tree MiB",
                                 "shuffle MiB", "bytes/token", "status", "tables"], table))
    growth_rows, by_system = [], {}
    for system in SYSTEMS:
        own = [r for r in rows if r["system"] == system]
        if not own:
            continue
        by_system[system] = {key: growth(own, key) for key in ("seconds", "driver_mib", "tree_mib")}
        done = sorted(r["slice_mib"] for r in own if finished(r))
        stopped = [r["slice_mib"] for r in own if not finished(r)]
        growth_rows.append([system, f"{done[0]}–{done[-1]}" if done else "—",
                            " ".join(map(str, by_system[system]["seconds"])) or "—",
                            " ".join(map(str, by_system[system]["driver_mib"])) or "—",
                            " ".join(map(str, by_system[system]["tree_mib"])) or "—",
                            f"{min(stopped)} MiB" if stopped else "—"])
    print()
    print(common.markdown_table(["system", "slices done", "time x per doubling", "driver x per doubling",
                                 "tree x per doubling", "stopped at"], growth_rows))
    projected = projection(rows, args.project_gib, args.project_cores, args.max_table_entries or 10_000_000)
    if projected:
        print(f"\nprojection to {args.project_gib:,.0f} GiB on {args.project_cores} executor cores "
              "(fitted to the finished slices; see projection())")
        print(common.markdown_table(
            ["system", "slices", "wall ~ size^k", "executor core-s/GiB", "table ~ size^beta", "table at target (kept)",
             "bound binds at GiB", "driver s", "driver MiB (per M entries)", "shuffle GiB", "hours"],
            [[p["system"], "-".join(map(str, p["slices_mib"])), p["wall_exponent"],
              p["executor_core_seconds_per_gib"], p["heaps_beta"],
              f"{p['table_entries_at_target']:,} ({p['table_entries_kept']:,})", p["corpus_gib_where_bound_binds"],
              p["driver_seconds_at_target"],
              f"{p['driver_mib_at_target']:,.0f} ({p['driver_mib_per_million_entries']:,.0f})",
              p["shuffle_gib_at_target"], p["hours_at_target"]] for p in projected]))
    payload = {"projection": {"target_gib": args.project_gib, "cores": args.project_cores, "systems": projected},
               "settings": {"vocab_size": args.vocab_size, "limit_minutes": args.limit_minutes,
                            "limit_gib": args.limit_gib, "max_table_entries": args.max_table_entries,
                            "corpora": args.corpora},
               "runs": rows, "growth_per_doubling": by_system}
    path = common.write_results("scaling", payload)
    plot(rows, path[:-len(".json")] + ".png")
    print(f"\nwrote {path}")
    return payload


def plot(rows: list[dict], path: str) -> None:
    """Log-log plot of time and tree memory against slice size, one line per system (finished runs only)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install -e .[bench]): no plot")
        return
    figure, axes = plt.subplots(1, 2, figsize=(12, 5))
    for system in SYSTEMS:
        done = sorted((r for r in rows if r["system"] == system and finished(r)), key=lambda r: r["slice_mib"])
        if not done:
            continue
        style = "-" if system.startswith("shardpiece") else "--"
        sizes = [r["slice_mib"] for r in done]
        axes[0].plot(sizes, [r["seconds"] for r in done], style, marker="o", label=system)
        axes[1].plot(sizes, [r["tree_mib"] for r in done], style, marker="o", label=system)
    for ax, label in zip(axes, ("wall seconds", "peak tree PSS (MiB)")):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("training text (MiB)")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpora", default=os.path.join(common.DEFAULT_CORPORA, "large"),
                        help="folder of build-large.sh's output (default %(default)s)")
    parser.add_argument("--slices", type=int, nargs="+", default=list(SLICES), help="MiB (default all)")
    parser.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=list(SYSTEMS))
    parser.add_argument("--vocab-size", type=int, default=32000)
    parser.add_argument("--max-table-entries", type=int, help="shardpiece's bound (default: its own default)")
    parser.add_argument("--limit-minutes", type=float, default=30.0)
    parser.add_argument("--limit-gib", type=float, default=16.0)
    parser.add_argument("--work", default=os.path.join(common.DEFAULT_WORK, "scaling"))
    parser.add_argument("--rerun", action="store_true", help="run again even where --work holds a result")
    parser.add_argument("--project-gib", type=float, default=1024.0, help="projection target (default 1 TiB)")
    parser.add_argument("--project-cores", type=int, default=64, help="executor cores of the projection")
    parser.add_argument("--report", action="store_true", help="only print and write what --work holds")
    args = parser.parse_args()
    os.makedirs(os.path.join(args.work, "results"), exist_ok=True)
    if not args.rerun:
        restored = restore_results(args)
        if restored:
            print(f"{restored} runs restored from benchmarks/results/scaling.json (--rerun measures them again)")
    if not args.report:
        lines = held_out_lines(args.corpora)
        for slice_mib in sorted(args.slices):
            for system in args.systems:
                path = result_path(args, system, slice_mib)
                if os.path.isfile(path) and not args.rerun:
                    continue
                earlier = [r for r in load_rows(args) if r["system"] == system and r["slice_mib"] < slice_mib]
                if any(not finished(r) for r in earlier):
                    continue  # stopped (or failed) on a smaller slice: a larger one will not do better
                row = run_one(system, slice_mib, args, lines)
                common.write_atomic(path, (json.dumps(row, indent=2) + "\n").encode())
    rows = load_rows(args)
    if rows:
        report(rows, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
