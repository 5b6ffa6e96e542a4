"""BytePiece training: ``shardpiece train`` (Spark local mode) vs bytepiece's own Trainer, same settings.

    .venv/bin/python benchmarks/train.py                     # en, zh, ja, both systems
    .venv/bin/python benchmarks/train.py --corpus zh --scaling   # zh, plus shardpiece on 1x, 2x, 4x zh.train
    .venv/bin/python benchmarks/train.py --corpus zh --skip-bytepiece

Settings for both: NFC, order 6, min_count 8, 32k vocabulary (``--vocab-size``), 2 cores (shardpiece
``--master local[2]``, bytepiece ``workers=2``). Training text: NAME.train.txt, capped at ``--train-bytes`` bytes at a
line boundary (default 14 MB: zh and ja whole, en's first 14 MB). Each run is a subprocess; its wall time includes
start-up (the Spark JVM for shardpiece), and its memory is sampled every 0.1 s over the whole process tree (the
Python driver, the JVM, Spark's Python workers; bytepiece's pool workers): the peak of the sum over the tree at one
sample, and the largest single process.

Then: bytes per token on NAME.test.txt (lines without their newline, each system encoding with its own model:
shardpiece's ``Tokenizer``, bytepiece's ``Tokenizer``), the share of lines that survive a round trip (compared
with the NFC form of the line), and the overlap of the two vocabularies (multi-byte pieces). ``--scaling`` writes
1x, 2x, 4x copies of zh.train (capped) into ``--work`` and trains shardpiece on each.
Results: tables on stdout and the run in ``benchmarks/results/train.json``, keyed by its arguments (``--work`` left
out): another run with the same arguments replaces it, the others stay.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import unicodedata

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))

from benchmarks import common, processes  # noqa: E402

SHARDPIECE = os.path.join(os.path.dirname(common.PYTHON), "shardpiece")


def shardpiece_command(inputs: list[str], output: str, vocab_size: int, master: str) -> list[str]:
    s = common.BYTEPIECE_SETTINGS
    command = [SHARDPIECE] if os.path.isfile(SHARDPIECE) else [common.PYTHON, "-m", "jobs.cli"]
    return command + ["train", "--algorithm", "bytepiece", "--input", *inputs, "--vocab-size", str(vocab_size),
                      "--output", output, "--order", str(s["order"]), "--min-count", str(s["min_count"]),
                      "--normalization", s["normalization"], "--master", master, "--holdout-fraction", "0",
                      "--no-resume"]  # time every stage: never load stages a previous run left in the work dir


def train_shardpiece_measured(inputs: list[str], output: str, vocab_size: int, master: str) -> processes.Measured:
    env = {"SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": common.PYTHON, "PYSPARK_DRIVER_PYTHON": common.PYTHON}
    measured = processes.run_measured(shardpiece_command(inputs, output, vocab_size, master), env=env,
                                   cwd=common.REPO, log_path=output + ".log")
    if measured.returncode != 0:
        raise RuntimeError(f"shardpiece train failed ({measured.returncode}); log {output}.log:\n"
                           f"{measured.output_tail}")
    manifest_path = output + ".manifest.json"
    if os.path.isfile(manifest_path):
        with open(manifest_path, encoding="utf-8") as handle:
            manifest = json.load(handle)
        measured.extra["stages"] = {s["name"]: s["seconds"] for s in manifest.get("stages", [])}
        measured.extra["seconds_in_job"] = manifest.get("seconds_total")
    return measured


def shardpiece_pieces(path: str) -> set[bytes]:
    from tokenizer import Tokenizer
    from tokenizer.model import PieceType

    model = Tokenizer.load(path).model
    return {p for p, t in zip(model.pieces, model.types.tolist()) if t == PieceType.NORMAL and len(p) > 1}


def bytepiece_pieces(path: str) -> set[bytes]:
    with open(path, encoding="utf-8") as handle:
        obj = json.load(handle)
    return {piece for piece in (base64.b64decode(k) for k in obj) if len(piece) > 1}


def evaluate(lines: list[str], shardpiece_model: str | None, bytepiece_model: str | None) -> dict:
    """Bytes/token and round-trip share of each system on ``lines`` (UTF-8 bytes of the original lines)."""
    out = {}
    nbytes = sum(len(line.encode("utf-8")) for line in lines)
    nfc = [unicodedata.normalize("NFC", line) for line in lines]
    if shardpiece_model:
        from tokenizer import Tokenizer

        tok = Tokenizer.load(shardpiece_model)
        ids = tok.encode_batch(lines, num_threads=1)
        tokens = sum(len(x) for x in ids)
        lossless = sum(tok.decode(x) == n for x, n in zip(ids, nfc))
        out["shardpiece"] = {"vocab_size": tok.vocab_size, "tokens": tokens, "bytes_per_token": nbytes / tokens,
                             "round_trip_nfc": lossless / len(lines)}
    if bytepiece_model:
        from bytepiece import Tokenizer as BytePieceTokenizer

        bp = BytePieceTokenizer(bytepiece_model)
        ids = [bp.encode(line) for line in lines]
        tokens = sum(len(x) for x in ids)
        lossless = sum(bp.decode(x) == n for x, n in zip(ids, nfc))
        out["bytepiece"] = {"vocab_size": bp.vocab_size, "tokens": tokens, "bytes_per_token": nbytes / tokens,
                            "round_trip_nfc": lossless / len(lines)}
    return out


def overlap(ours: set[bytes], theirs: set[bytes]) -> dict:
    both = len(ours & theirs)
    return {"shardpiece_pieces": len(ours), "bytepiece_pieces": len(theirs), "common": both,
            "share_of_bytepiece": both / max(1, len(theirs)), "share_of_shardpiece": both / max(1, len(ours)),
            "jaccard": both / max(1, len(ours | theirs)),
            "examples_only_shardpiece": [p.decode("utf-8", "replace") for p in sorted(ours - theirs)[:10]],
            "examples_only_bytepiece": [p.decode("utf-8", "replace") for p in sorted(theirs - ours)[:10]]}


def run_corpus(name: str, args) -> dict:
    work = args.work
    os.makedirs(work, exist_ok=True)
    train_path, train_bytes = common.capped_train_file(args.corpora, name, work, args.train_bytes)
    record: dict = {"corpus": name, "train_path": train_path, "train_bytes": train_bytes}
    print(f"\n[{name}] training text {train_bytes:,} bytes; {common.load_text()}", flush=True)

    sp_model = None
    if not args.skip_shardpiece:
        sp_model = os.path.join(work, f"shardpiece-{name}-{train_bytes}b-o6-m8-v{args.vocab_size}.model")
        run = train_shardpiece_measured([train_path], sp_model, args.vocab_size, args.master)
        record["shardpiece"] = run.to_dict()
        print(f"[{name}] shardpiece: {run.seconds:.1f} s (CPU {run.cpu_seconds:.1f} s), "
              f"peak {run.memory.peak_total_mib:.0f} MiB RSS / {run.memory.peak_total_pss_mib:.0f} MiB PSS (tree), "
              f"{run.memory.peak_single_mib:.0f} MiB ({run.memory.peak_single_name}); "
              f"stages {run.extra.get('stages')}", flush=True)
    bp_model = None
    if not args.skip_bytepiece:
        bp_model = common.bytepiece_model_path(work, name, train_bytes, args.vocab_size)
        run = common.train_bytepiece_measured(train_path, bp_model, args.workers, args.vocab_size,
                                              log_path=bp_model + ".log")
        record["bytepiece"] = run.to_dict()
        print(f"[{name}] bytepiece: {run.seconds:.1f} s (CPU {run.cpu_seconds:.1f} s), "
              f"peak {run.memory.peak_total_mib:.0f} MiB RSS / {run.memory.peak_total_pss_mib:.0f} MiB PSS (tree), "
              f"{run.memory.peak_single_mib:.0f} MiB ({run.memory.peak_single_name})", flush=True)
    elif os.path.isfile(common.bytepiece_model_path(work, name, train_bytes, args.vocab_size)):
        bp_model = common.bytepiece_model_path(work, name, train_bytes, args.vocab_size)  # cached: quality only

    lines = common.read_lines(common.corpus_path(args.corpora, name, "test"))
    record["test_lines"] = len(lines)
    record["evaluation"] = evaluate(lines, sp_model, bp_model)
    if sp_model and bp_model:
        record["overlap"] = overlap(shardpiece_pieces(sp_model), bytepiece_pieces(bp_model))
    return record


def run_scaling(args, reuse: dict | None = None) -> dict:
    """``reuse``: this invocation's zh record; its shardpiece run (the same bytes) stands for the 1x run."""
    name = "zh"
    train_path, train_bytes = common.capped_train_file(args.corpora, name, args.work, args.train_bytes)
    with open(train_path, "rb") as handle:
        data = handle.read()
    if not data.endswith(b"\n"):
        data += b"\n"
    runs = []
    for copies in args.scaling_copies:
        if copies == 1 and reuse and reuse.get("shardpiece") and reuse["train_bytes"] == len(data):
            runs.append({"copies": 1, "bytes": len(data), "reused_from_corpus_run": True, **reuse["shardpiece"]})
            continue
        path = os.path.join(args.work, f"{name}.train.{train_bytes}b.x{copies}.txt")
        if not os.path.isfile(path) or os.path.getsize(path) != len(data) * copies:
            common.write_atomic(path, data * copies)
        model = os.path.join(args.work, f"shardpiece-{name}-x{copies}-v{args.vocab_size}.model")
        run = train_shardpiece_measured([path], model, args.vocab_size, args.master)
        print(f"[scaling] {copies}x zh ({len(data) * copies:,} bytes): {run.seconds:.1f} s, peak "
              f"{run.memory.peak_total_mib:.0f} MiB (tree); {common.load_text()}", flush=True)
        runs.append({"copies": copies, "bytes": len(data) * copies, **run.to_dict()})
    base = runs[0]["seconds"]
    for r in runs:
        r["time_ratio"] = round(r["seconds"] / base, 3)
        if r.get("cpu_seconds") and runs[0].get("cpu_seconds"):
            r["cpu_ratio"] = round(r["cpu_seconds"] / runs[0]["cpu_seconds"], 3)
    return {"corpus": name, "runs": runs}


def report(results: dict) -> None:
    rows = []
    for record in results["corpora"]:
        for system in ("shardpiece", "bytepiece"):
            run = record.get(system)
            ev = record["evaluation"].get(system)
            if not run and not ev:
                continue
            rows.append((record["corpus"], system,
                         run["seconds"] if run else float("nan"),
                         run.get("cpu_seconds", float("nan")) if run else float("nan"),
                         run["memory"]["peak_total_mib"] if run else float("nan"),
                         run["memory"].get("peak_total_pss_mib", float("nan")) if run else float("nan"),
                         run["memory"]["peak_single_mib"] if run else float("nan"),
                         f"{run['load_before']['load1']:.1f} / {run['load_after']['load1']:.1f}" if run else "—",
                         ev["vocab_size"] if ev else "—",
                         ev["bytes_per_token"] if ev else float("nan"),
                         ev["round_trip_nfc"] if ev else float("nan")))
    print("\n## training\n")
    print(common.markdown_table(["corpus", "system", "wall s", "CPU s (tree)", "peak MiB RSS (tree)",
                                 "peak MiB PSS (tree)", "peak MiB (largest process)", "load1 before/after", "vocab",
                                 "bytes/token (test)", "round trip (NFC)"], rows))
    rows = []
    for record in results["corpora"]:
        if "overlap" in record:
            o = record["overlap"]
            rows.append((record["corpus"], o["shardpiece_pieces"], o["bytepiece_pieces"], o["common"],
                         o["share_of_bytepiece"], o["share_of_shardpiece"], o["jaccard"]))
    if rows:
        print("\n## vocabulary overlap (multi-byte pieces)\n")
        print(common.markdown_table(["corpus", "shardpiece", "bytepiece", "common", "of bytepiece's",
                                     "of shardpiece's", "jaccard"], rows))
    rows = [(record["corpus"], system, label, peak["rss_mib"], peak["pss_mib"])
            for record in results["corpora"] for system in ("shardpiece", "bytepiece") if record.get(system)
            for label, peak in sorted(record[system]["memory"].get("peak_by_process", {}).items(),
                                      key=lambda item: -item[1]["rss_mib"]) if peak["rss_mib"] >= 5]
    if rows:
        print("\n## peak memory per process (each at its own peak; processes under 5 MiB left out)\n")
        print(common.markdown_table(["corpus", "system", "process", "peak RSS MiB", "peak PSS MiB"], rows))
    stages = [(r["corpus"], json.dumps(r["shardpiece"]["extra"].get("stages")))
              for r in results["corpora"] if r.get("shardpiece")]
    if stages:
        print("\n## shardpiece stage seconds (from the run manifest)\n")
        print(common.markdown_table(["corpus", "stages"], stages))
    if results.get("scaling"):
        print("\n## scaling (shardpiece, zh.train copies)\n")
        print(common.markdown_table(
            ["copies", "MB", "wall s", "x of 1x", "CPU s (tree)", "peak MiB (tree)", "peak MiB (largest)",
             "load1 before/after"],
            [(r["copies"], r["bytes"] / 1e6, r["seconds"], r["time_ratio"], r.get("cpu_seconds", float("nan")),
              r["memory"]["peak_total_mib"],
              r["memory"]["peak_single_mib"], f"{r['load_before']['load1']:.1f} / {r['load_after']['load1']:.1f}")
             for r in results["scaling"]["runs"]]))
    print("\n## targets\n")
    print(common.markdown_table(["target", "value", "met"],
                                [(t["target"], t["value"], "yes" if t["met"] else "NO") for t in results["targets"]]))


def targets(results: dict) -> list[dict]:
    out = []
    for record in results["corpora"]:
        name = record["corpus"]
        ours, theirs = record.get("shardpiece"), record.get("bytepiece")
        if ours and theirs:
            value = ours["seconds"] / theirs["seconds"]
            out.append({"target": f"{name}: wall time <= 0.5x bytepiece's", "value": round(value, 3),
                        "met": value <= 0.5})
            if ours.get("cpu_seconds") and theirs.get("cpu_seconds"):
                value = ours["cpu_seconds"] / theirs["cpu_seconds"]
                out.append({"target": f"{name}: (CPU seconds, load-independent) <= 0.5x bytepiece's",
                            "value": round(value, 3), "met": value <= 0.5})
            a, b = ours["memory"]["peak_total_mib"], theirs["memory"]["peak_total_mib"]
            out.append({"target": f"{name}: peak memory (tree RSS) below bytepiece's",
                        "value": f"{a:.0f} vs {b:.0f} MiB", "met": a < b})
            a, b = ours["memory"].get("peak_total_pss_mib"), theirs["memory"].get("peak_total_pss_mib")
            if a and b:
                out.append({"target": f"{name}: peak memory (tree PSS) below bytepiece's",
                            "value": f"{a:.0f} vs {b:.0f} MiB", "met": a < b})
            a, b = ours["memory"]["peak_single_mib"], theirs["memory"]["peak_single_mib"]
            out.append({"target": f"{name}: peak memory (largest process) below bytepiece's",
                        "value": f"{a:.0f} vs {b:.0f} MiB", "met": a < b})
        if "overlap" in record:
            o = record["overlap"]
            value = min(o["share_of_bytepiece"], o["share_of_shardpiece"])
            out.append({"target": f"{name}: vocab overlap >= 98%", "value": round(value, 4), "met": value >= 0.98})
        ev = record["evaluation"]
        if "shardpiece" in ev and "bytepiece" in ev:
            a, b = ev["shardpiece"]["bytes_per_token"], ev["bytepiece"]["bytes_per_token"]
            out.append({"target": f"{name}: bytes/token >= bytepiece's", "value": f"{a:.4f} vs {b:.4f}",
                        "met": a >= b})
    if results.get("scaling"):
        runs = {r["copies"]: r for r in results["scaling"]["runs"]}
        if 1 in runs and 4 in runs:
            value = runs[4]["seconds"] / runs[1]["seconds"]
            out.append({"target": "zh 4x corpus: time grows <= 4.4x", "value": round(value, 3), "met": value <= 4.4})
            if runs[4].get("cpu_seconds") and runs[1].get("cpu_seconds"):
                value = runs[4]["cpu_seconds"] / runs[1]["cpu_seconds"]
                out.append({"target": "zh 4x corpus: CPU seconds grow <= 4.4x", "value": round(value, 3),
                            "met": value <= 4.4})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", nargs="*", default=list(common.CORPORA), choices=common.CORPORA,
                        help="corpora to train on (none: only --scaling)")
    parser.add_argument("--corpora", default=common.DEFAULT_CORPORA,
                        help=f"directory of NAME.train/.test.txt (default {common.DEFAULT_CORPORA})")
    parser.add_argument("--work", default=common.DEFAULT_WORK, help="models and corpus copies (default %(default)s)")
    parser.add_argument("--train-bytes", type=int, default=common.DEFAULT_TRAIN_BYTES,
                        help="cap on the training text per corpus (default %(default)s; 0: whole file)")
    parser.add_argument("--vocab-size", type=int, default=common.BYTEPIECE_SETTINGS["vocab_size"])
    parser.add_argument("--master", default="local[2]", help="shardpiece's Spark master (default %(default)s)")
    parser.add_argument("--workers", type=int, default=2, help="bytepiece's worker processes (default 2)")
    parser.add_argument("--skip-bytepiece", action="store_true",
                        help="do not train bytepiece (a cached model in --work is still used for quality)")
    parser.add_argument("--skip-shardpiece", action="store_true")
    parser.add_argument("--scaling", action="store_true", help="also train shardpiece on 1x, 2x, 4x zh.train")
    parser.add_argument("--scaling-copies", type=int, nargs="+", default=[1, 2, 4])
    args = parser.parse_args(argv)

    results: dict = {"command": " ".join([os.path.relpath(sys.argv[0], common.REPO)] + sys.argv[1:]),
                     "settings": {**common.BYTEPIECE_SETTINGS, "vocab_size": args.vocab_size,
                                  "master": args.master, "bytepiece_workers": args.workers,
                                  "train_bytes": args.train_bytes}}
    print(f"# train benchmark; {common.load_text()}", flush=True)
    results["corpora"] = [run_corpus(name, args) for name in args.corpus]
    if args.scaling:
        zh = [r for r in results["corpora"] if r["corpus"] == "zh"]
        results["scaling"] = run_scaling(args, zh[0] if zh else None)
    results["targets"] = targets(results)
    report(results)
    path = common.write_results("train", results, key=common.run_key(argv))
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
