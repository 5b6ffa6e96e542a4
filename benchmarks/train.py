"""Training, every algorithm against its peer in one run: ``shardpiece train`` and the trainer that builds the same
kind of model, each a subprocess measured alike, start-up included (the Spark JVM, if shardpiece starts one).

    export SPARK_LOCAL_IP=127.0.0.1
    .venv/bin/python benchmarks/train.py                     # en, zh, ja, kernel64: every algorithm and its peer
    .venv/bin/python benchmarks/train.py --corpus en zh ja kernel64 --small-slice   # and the 2 MB slice
    .venv/bin/python benchmarks/train.py --small-slice --skip-peers   # the 2 MB slice alone, shardpiece only
    .venv/bin/python benchmarks/train.py --corpus zh --algorithms bpe           # both BPE rows on zh
    .venv/bin/python benchmarks/train.py --corpus en --shardpiece-args "--master local[2]"   # force Spark
    .venv/bin/python benchmarks/train.py --corpus zh --algorithms bytepiece --shardpiece-args "--master local[2]" \\
        --scaling                                # the former benchmark: bytepiece alone, plus 1x, 2x, 4x zh.train

Algorithms (``--algorithms``, default all four; ``bpe`` names both BPE rows), at ``--vocab-size`` (default 32000),
what each side is given (the peers: ``benchmarks/peers.py``):

* ``bytepiece``: ``shardpiece train --algorithm bytepiece --order 6 --min-count 8 --normalization nfc
  --holdout-fraction 0`` against bytepiece's ``Trainer`` (order 6, min_count 8, NFC built in), 2 worker processes,
  on the non-empty lines. Nothing held out, so both learn from the same lines and their vocabularies compare
  (overlap of multi-byte pieces).
* ``unigram``: ``shardpiece train --algorithm unigram --byte-fallback --keep-extra-whitespaces --no-dummy-prefix
  --allow-whitespace-only-pieces`` (identity normalizer: its default) against sentencepiece's unigram trainer with
  the same lossless settings (``normalization_rule_name=identity, byte_fallback, remove_extra_whitespaces=false,
  add_dummy_prefix=false, allow_whitespace_only_pieces=true``), 2 threads, every sentence
  (``input_sentence_size=0``), its defaults otherwise.
* ``bpe-sentencepiece``: ``shardpiece train --algorithm bpe --pretokenizer sentencepiece`` (SentencePiece's BPE rules
  with exactly those lossless settings, fixed) against sentencepiece's BPE trainer, the same settings, 2 threads.
* ``bpe-byte-level``: ``shardpiece train --algorithm bpe`` (its default pre-tokenizer: byte_level, GPT-2 regex)
  against tokenizers' ``BpeTrainer``: ByteLevel pre-tokenizer (GPT-2 regex, no prefix space), the 256-byte initial
  alphabet, ``<pad> <s> </s>``, min_frequency 2, ``RAYON_NUM_THREADS=2``.

Every shardpiece run also gets ``--no-resume`` (every stage computed, none loaded from an earlier run's work
directory), then ``--shardpiece-args`` (split like a shell line, appended last so they win; one flag alone as
``--shardpiece-args=--quiet``); nothing else: its defaults choose the engine (no ``--master``), threads and the
evaluation its wall time includes (the unigram and BPE rows hold out the default share of documents, 0.001, so they
learn from slightly fewer lines than their peer). It runs
as ``python -m jobs.cli`` from this checkout, with ``PYTHONPATH`` on it (Spark's Python workers import its code),
``SPARK_LOCAL_IP=127.0.0.1`` and ``PYSPARK_PYTHON`` this Python. The engine column is what its manifest (beside the
model) reports: ``engine``, else ``spark_master``. ``--peer-threads`` (default 2): the peers' workers or threads.

Corpora (``--corpora DIR``, default /work/corpora; ``--corpus``, default en zh ja kernel64 unless only
``--small-slice`` is given):

* en, zh, ja: NAME.train.txt, its first ``--train-bytes`` (default 14 MB; 0: whole) cut at a line end into
  ``--work`` (zh and ja whole); test text NAME.test.txt.
* kernel64: kernel-64m.txt whole (64 MiB); test text kernel.test.txt (held out of the kernel slices by
  build-large.sh). Without it, the last 1 MB of kernel-64m.txt (from a line start) is the test text and the rest,
  cut into ``--work``, the training text; the table header says which.
* ``--small-slice``: the 2 MB slice too (after the ``--corpus`` ones; alone when no ``--corpus`` is given),
  en.train.txt's first 2,000,000 bytes cut at a line end into ``--work``; test text en.test.txt.

Each run is a subprocess (``processes.run_measured``): wall seconds, CPU seconds of the process tree, and its memory
sampled every 0.1 s: peak RSS sum over the tree (the table; PSS and per process in the JSON). The first shardpiece
runs after a checkout or a code change also compile its Numba kernels into the on-disk cache: warm it first (e.g.
``--small-slice --skip-peers`` at a small ``--vocab-size``, which writes its own results key) before measuring.

Bytes per token: the test text's lines without their newline, each encoded on its own by the system's own model, one
thread: UTF-8 bytes / tokens; round trip: the share of lines that decode back to the line (bytepiece: to its NFC
form).

Targets (shardpiece's wall time): <= 1.0x the peer's for bytepiece, unigram and bpe-byte-level;
bpe-sentencepiece <= 1.5x on en, zh, ja and <= 1.0x on kernel64; on the 2 MB slice every shardpiece run <= 5 s.
``--skip-peers``/``--skip-shardpiece``: one side only (a peer model an earlier run left in ``--work`` is still
evaluated, untimed); ``--limit-minutes``: kill a run that takes longer; ``--peer-limit-minutes``: stop a peer
after that long (bytepiece's trainer takes many times shardpiece's time): its wall time is then a lower bound,
shown ``> N (stopped)``, and the ratio an upper bound, ``< x``; ``--scaling``: also shardpiece bytepiece on
1x, 2x, 4x copies of zh.train (capped) written into ``--work``.

Results: a table per corpus on stdout as it finishes, and the run in ``benchmarks/results/train.json``, keyed by its
arguments (``--work`` left out; written after each corpus): another run with the same arguments replaces it.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shlex
import sys
import unicodedata
from typing import NamedTuple

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks import common, peers, processes  # noqa: E402

SLICE, SLICE_BYTES, SLICE_SECONDS = "en-2MB", 2_000_000, 5.0
CORPORA = ("en", "zh", "ja", "kernel64")
KERNEL_TAIL_BYTES = 1_000_000


class Algorithm(NamedTuple):
    label: str
    flags: list[str]   # shardpiece train's, beside --input, --vocab-size, --output, --no-resume
    peer: str          # peers.codec's system name
    peer_file: str     # the peer's model file name


BP = common.BYTEPIECE_SETTINGS
ALGORITHMS = {
    "bytepiece": Algorithm("bytepiece", ["--algorithm", "bytepiece", "--order", str(BP["order"]), "--min-count",
                                         str(BP["min_count"]), "--normalization", BP["normalization"],
                                         "--holdout-fraction", "0"], "bytepiece", "bytepiece.json"),
    "unigram": Algorithm("unigram", ["--algorithm", "unigram",
                                     *(f for flags in peers.LOSSLESS_UNIGRAM_FLAGS.values() for f in flags)],
                         "sentencepiece", "sentencepiece-unigram.model"),
    "bpe-sentencepiece": Algorithm("bpe (sentencepiece)", ["--algorithm", "bpe", "--pretokenizer", "sentencepiece"],
                                   "sentencepiece", "sentencepiece-bpe.model"),
    "bpe-byte-level": Algorithm("bpe (byte_level)", ["--algorithm", "bpe"], "tokenizers", "tokenizers-bpe.json"),
}


class Corpus(NamedTuple):
    name: str
    train_path: str
    train_bytes: int
    test_path: str
    test_text: str  # how the test text was chosen


def corpus_files(name: str, args) -> Corpus:
    if name == SLICE:
        path, size = common.capped_train_file(args.corpora, "en", args.work, SLICE_BYTES)
        return Corpus(name, path, size, common.corpus_path(args.corpora, "en", "test"), "en.test.txt")
    if name != "kernel64":
        path, size = common.capped_train_file(args.corpora, name, args.work, args.train_bytes)
        return Corpus(name, path, size, common.corpus_path(args.corpora, name, "test"), f"{name}.test.txt")
    source, test = os.path.join(args.corpora, "kernel-64m.txt"), os.path.join(args.corpora, "kernel.test.txt")
    if not os.path.isfile(source):
        sys.exit(f"missing corpus file {source}: build the kernel corpora (corpora/build-large.sh) or pass --corpora")
    if os.path.isfile(test):
        return Corpus(name, source, os.path.getsize(source), test, "kernel.test.txt")
    with open(source, "rb") as handle:
        data = handle.read()
    cut = data.rfind(b"\n", 0, len(data) - KERNEL_TAIL_BYTES) + 1
    train = os.path.join(args.work, f"kernel-64m.first{cut}.txt")
    test = os.path.join(args.work, f"kernel-64m.after{cut}.txt")
    for path, part in ((train, data[:cut]), (test, data[cut:])):
        if not os.path.isfile(path) or os.path.getsize(path) != len(part):
            common.write_atomic(path, part)
    return Corpus(name, train, cut, test, f"kernel-64m.txt's last {len(data) - cut:,} bytes (no kernel.test.txt), "
                                          "left out of training")


# ------------------------------------------------------------------------------------------------------ training
def shardpiece_command(algorithm: str, inputs: list[str], output: str, args) -> list[str]:
    return [common.PYTHON, "-m", "jobs.cli", "train", *ALGORITHMS[algorithm].flags, "--input", *inputs,
            "--vocab-size", str(args.vocab_size), "--output", output,
            "--no-resume", *shlex.split(args.shardpiece_args)]  # every stage timed: none loaded from a work dir


def train_shardpiece(algorithm: str, inputs: list[str], output: str, args) -> processes.Measured:
    """``shardpiece train`` of this checkout, measured; ``extra``: the manifest's engine, stage and job seconds."""
    env = {"SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": common.PYTHON, "PYSPARK_DRIVER_PYTHON": common.PYTHON,
           "PYTHONPATH": os.pathsep.join(filter(None, [common.REPO, os.environ.get("PYTHONPATH")]))}
    os.makedirs(os.path.dirname(output), exist_ok=True)
    measured = processes.run_measured(shardpiece_command(algorithm, inputs, output, args), env=env, cwd=common.REPO,
                                      log_path=output + ".log", max_seconds=limit_seconds(args))
    manifest_path = output + ".manifest.json"
    if measured.returncode == 0 and os.path.isfile(manifest_path):
        with open(manifest_path, encoding="utf-8") as handle:
            manifest = json.load(handle)
        measured.extra["engine"] = manifest.get("engine") or manifest.get("spark_master")
        measured.extra["stages"] = {s["name"]: s["seconds"] for s in manifest.get("stages", [])}
        measured.extra["seconds_in_job"] = manifest.get("seconds_total")
    return measured


def train_peer(algorithm: str, train_path: str, model: str, args) -> processes.Measured:
    limits = [seconds for seconds in (limit_seconds(args), args.peer_limit_minutes * 60) if seconds]
    kwargs = {"max_seconds": min(limits) if limits else None}
    if algorithm == "bytepiece":
        return peers.train_bytepiece(train_path, model, args.vocab_size, workers=args.peer_threads, **kwargs)
    if algorithm == "bpe-byte-level":
        return peers.train_tokenizers_bpe(train_path, model, args.vocab_size, threads=args.peer_threads, **kwargs)
    model_type = "unigram" if algorithm == "unigram" else "bpe"
    return peers.train_sentencepiece(train_path, model, args.vocab_size, model_type=model_type,
                                     threads=args.peer_threads, **kwargs)


def peer_settings(args) -> dict:
    """What each peer is given, for the results."""
    v, n = args.vocab_size, args.peer_threads
    return {"bytepiece": {**common.BYTEPIECE_SETTINGS, "vocab_size": v, "workers": n},
            "unigram": peers.sentencepiece_settings("unigram", v, n),
            "bpe-sentencepiece": peers.sentencepiece_settings("bpe", v, n),
            "bpe-byte-level": {"trainer": "tokenizers BpeTrainer", "pre_tokenizer": "ByteLevel(add_prefix_space=False)",
                               "initial_alphabet": "ByteLevel.alphabet()", "special_tokens": list(peers.SPECIAL_TOKENS),
                               "min_frequency": 2, "vocab_size": v, "RAYON_NUM_THREADS": n}}


def limit_seconds(args) -> float | None:
    return args.limit_minutes * 60 if args.limit_minutes else None


def measure(label: str, system: str, train, model: str, lines: list[str], expected: list[str] | None) -> dict:
    """Run ``train()`` (a measured subprocess writing ``model``) and evaluate the model on ``lines``."""
    print(f"[{label}] training {system} ({common.load_text()}) ...", flush=True)
    run = train()
    out = {"system": system, "model": model, **run.to_dict()}
    if run.returncode != 0:
        out["failed"] = True
        stopped = f", stopped by {run.stopped_by}" if run.stopped_by else ""
        print(f"[{label}] {system} FAILED ({run.returncode}{stopped}); log {model}.log:\n{run.output_tail}", flush=True)
        return out
    out["evaluation"] = peers.evaluate(system, model, lines, expected)
    print(f"[{label}] {system}: {run.seconds:.1f} s (CPU {run.cpu_seconds:.1f} s), peak "
          f"{run.memory.peak_total_mib:.0f} MiB (tree), {out['evaluation']['bytes_per_token']:.4f} bytes/token"
          + (f", engine {run.extra['engine']}" if run.extra.get("engine") else ""), flush=True)
    return out


def target(algorithm: str, corpus: str, row: dict) -> dict:
    """The row's target, its value and whether it is met (``met`` None: not measured)."""
    ours, theirs = row.get("shardpiece"), row.get("peer")
    ok = ours is not None and not ours.get("failed")
    stopped = theirs is not None and theirs.get("stopped_by") == "time"  # the peer ran past --peer-limit-minutes
    timed = theirs is not None and (not theirs.get("failed") or stopped) and theirs.get("seconds")  # not cached
    ratio = ours["seconds"] / theirs["seconds"] if ok and timed else None  # an upper bound when it was stopped
    if corpus == SLICE:
        text, limit, value = f"<= {SLICE_SECONDS:g} s", SLICE_SECONDS, ours["seconds"] if ok else None
    else:
        limit = 1.5 if algorithm == "bpe-sentencepiece" and corpus != "kernel64" else 1.0
        text, value = f"<= {limit:.1f}x", ratio
    return {"corpus": corpus, "algorithm": algorithm, "target": text, "wall_ratio": ratio,
            "peer_stopped": bool(stopped),
            "value": None if value is None else round(value, 3), "met": None if value is None else value <= limit}


def run_corpus(corpus: Corpus, args) -> dict:
    lines = common.read_lines(corpus.test_path)
    nbytes = sum(len(line.encode("utf-8")) for line in lines)
    record = {"corpus": corpus.name, "train_path": corpus.train_path, "train_bytes": corpus.train_bytes,
              "test_path": corpus.test_path, "test_text": corpus.test_text, "test_lines": len(lines),
              "test_bytes": nbytes, "runs": {}}
    print(f"\n[{corpus.name}] training text {corpus.train_bytes:,} bytes; test text {corpus.test_text} "
          f"({len(lines):,} lines); {common.load_text()}", flush=True)
    directory = os.path.join(args.work, "train", f"{corpus.name}-{corpus.train_bytes}b-v{args.vocab_size}")
    for algorithm in args.algorithms:
        spec, label = ALGORITHMS[algorithm], f"{corpus.name} {algorithm}"
        expected = [unicodedata.normalize("NFC", line) for line in lines] if algorithm == "bytepiece" else None
        ours, theirs = os.path.join(directory, f"shardpiece-{algorithm}.model"), os.path.join(directory, spec.peer_file)
        row: dict = {}
        if not args.skip_shardpiece:
            row["shardpiece"] = measure(label, "shardpiece", lambda: train_shardpiece(
                algorithm, [corpus.train_path], ours, args), ours, lines, expected)
        if not args.skip_peers:
            row["peer"] = measure(label, spec.peer, lambda: train_peer(algorithm, corpus.train_path, theirs, args),
                                  theirs, lines, expected)
        elif os.path.isfile(theirs):  # an earlier run's model: evaluated, not timed
            row["peer"] = {"system": spec.peer, "model": theirs, "cached": True,
                           "evaluation": peers.evaluate(spec.peer, theirs, lines, expected)}
        if algorithm == "bytepiece" and all(r and "evaluation" in r for r in (row.get("shardpiece"), row.get("peer"))):
            row["overlap"] = overlap(shardpiece_pieces(ours), bytepiece_pieces(theirs))
        row["target"] = target(algorithm, corpus.name, row)
        record["runs"][algorithm] = row
    return record


# ------------------------------------------------------------------------------------------------------ bytepiece
def shardpiece_pieces(path: str) -> set[bytes]:
    from tokenizer import Tokenizer
    from tokenizer.model import PieceType

    model = Tokenizer.load(path).model
    return {p for p, t in zip(model.pieces, model.types.tolist()) if t == PieceType.NORMAL and len(p) > 1}


def bytepiece_pieces(path: str) -> set[bytes]:
    with open(path, encoding="utf-8") as handle:
        obj = json.load(handle)
    return {piece for piece in (base64.b64decode(k) for k in obj) if len(piece) > 1}


def overlap(ours: set[bytes], theirs: set[bytes]) -> dict:
    both = len(ours & theirs)
    return {"shardpiece_pieces": len(ours), "bytepiece_pieces": len(theirs), "common": both,
            "share_of_bytepiece": both / max(1, len(theirs)), "share_of_shardpiece": both / max(1, len(ours)),
            "jaccard": both / max(1, len(ours | theirs)),
            "examples_only_shardpiece": [p.decode("utf-8", "replace") for p in sorted(ours - theirs)[:10]],
            "examples_only_bytepiece": [p.decode("utf-8", "replace") for p in sorted(theirs - ours)[:10]]}


def run_scaling(args, reuse: dict | None = None) -> dict:
    """shardpiece bytepiece on 1x, 2x, 4x copies of zh.train (capped); ``reuse``: this invocation's zh record,
    whose shardpiece bytepiece run (the same bytes) stands for the 1x run."""
    train_path, train_bytes = common.capped_train_file(args.corpora, "zh", args.work, args.train_bytes)
    with open(train_path, "rb") as handle:
        data = handle.read()
    if not data.endswith(b"\n"):
        data += b"\n"
    reused = ((reuse or {}).get("runs", {}).get("bytepiece") or {}).get("shardpiece")
    runs = []
    for copies in args.scaling_copies:
        if copies == 1 and reused and not reused.get("failed") and reuse["train_bytes"] == len(data):
            runs.append({"copies": 1, "bytes": len(data), "reused_from_corpus_run": True, **reused})
            continue
        path = os.path.join(args.work, f"zh.train.{train_bytes}b.x{copies}.txt")
        if not os.path.isfile(path) or os.path.getsize(path) != len(data) * copies:
            common.write_atomic(path, data * copies)
        model = os.path.join(args.work, "train", f"scaling-zh-x{copies}-v{args.vocab_size}", "shardpiece.model")
        run = train_shardpiece("bytepiece", [path], model, args)
        if run.returncode != 0:
            sys.exit(f"shardpiece failed on {copies}x zh ({run.returncode}); log {model}.log:\n{run.output_tail}")
        print(f"[scaling] {copies}x zh ({len(data) * copies:,} bytes): {run.seconds:.1f} s, peak "
              f"{run.memory.peak_total_mib:.0f} MiB (tree); {common.load_text()}", flush=True)
        runs.append({"copies": copies, "bytes": len(data) * copies, **run.to_dict()})
    for r in runs:
        r["time_ratio"] = round(r["seconds"] / runs[0]["seconds"], 3)
        if r.get("cpu_seconds") and runs[0].get("cpu_seconds"):
            r["cpu_ratio"] = round(r["cpu_seconds"] / runs[0]["cpu_seconds"], 3)
    by_copies = {r["copies"]: r for r in runs}
    targets = []
    if 1 in by_copies and 4 in by_copies:
        for key, what in (("seconds", "time"), ("cpu_seconds", "CPU seconds")):
            if by_copies[4].get(key) and by_copies[1].get(key):
                value = by_copies[4][key] / by_copies[1][key]
                targets.append({"target": f"zh 4x corpus: {what} grows <= 4.4x", "value": round(value, 3),
                                "met": value <= 4.4})
    return {"corpus": "zh", "runs": runs, "targets": targets}


# ------------------------------------------------------------------------------------------------------ report
def engine(row: dict, args) -> str:
    if row.get("system") == "shardpiece":
        return str(row.get("extra", {}).get("engine") or "—")
    return f"{args.peer_threads} {'workers' if row.get('system') == 'bytepiece' else 'threads'}"


def report_corpus(record: dict, args) -> None:
    nan, rows = float("nan"), []
    for algorithm, row in record["runs"].items():
        t = row["target"]
        for side in ("shardpiece", "peer"):
            run = row.get(side)
            if not run:
                continue
            ev, timed = run.get("evaluation") or {}, "seconds" in run
            mine = side == "shardpiece"
            met = "—" if t["met"] is None else ("met" if t["met"] else "NOT met")
            rows.append((ALGORITHMS[algorithm].label, run["system"],
                         (f"> {run['seconds']:.0f} (stopped)" if run.get("stopped_by") == "time" else
                          f"failed ({run['returncode']})" if run.get("failed") else run["seconds"]) if timed else
                         "cached", run["cpu_seconds"] if timed else nan,
                         round(run["memory"]["peak_total_mib"]) if timed else nan,
                         ((f"< {t['wall_ratio']:.3f}" if t.get("peer_stopped") else t["wall_ratio"])
                          if t["wall_ratio"] is not None else nan) if mine else "",
                         t["target"] if mine else "", met if mine else "",
                         f"{ev['bytes_per_token']:.4f}" if ev else "—", f"{ev['round_trip']:.2%}" if ev else "—",
                         ev.get("vocab_size", "—"),
                         engine(run, args)))
    print(f"\n## {record['corpus']}: training text {record['train_bytes']:,} bytes ({record['train_path']}); "
          f"bytes/token on {record['test_text']}\n")
    print(common.markdown_table(["algorithm", "system", "wall s", "CPU s (tree)", "peak MiB (tree)",
                                 "shardpiece/peer wall", "target", "met", "bytes/token", "round trip", "vocab",
                                 "engine"], rows))
    for row in record["runs"].values():
        if "overlap" in row:
            o = row["overlap"]
            print(f"\nbytepiece vocabulary overlap (multi-byte pieces): {o['common']:,} in common of shardpiece's "
                  f"{o['shardpiece_pieces']:,} and bytepiece's {o['bytepiece_pieces']:,} (jaccard {o['jaccard']:.4f})")
    print(f"\n{common.load_text()}", flush=True)


def report_scaling(scaling: dict) -> None:
    print("\n## scaling (shardpiece bytepiece, zh.train copies)\n")
    print(common.markdown_table(
        ["copies", "MB", "wall s", "x of 1x", "CPU s (tree)", "peak MiB (tree)", "load1 before/after"],
        [(r["copies"], r["bytes"] / 1e6, r["seconds"], r["time_ratio"], r.get("cpu_seconds", float("nan")),
          r["memory"]["peak_total_mib"], f"{r['load_before']['load1']:.1f} / {r['load_after']['load1']:.1f}")
         for r in scaling["runs"]]))
    if scaling["targets"]:
        print()
        print(common.markdown_table(["target", "value", "met"], [(t["target"], t["value"], "met" if t["met"] else
                                                                  "NOT met") for t in scaling["targets"]]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", nargs="*", choices=CORPORA,
                        help="corpora to train on (default: all, or none with --small-slice; none: only "
                             "--small-slice / --scaling)")
    parser.add_argument("--corpora", default=common.DEFAULT_CORPORA,
                        help=f"directory of NAME.train/.test.txt and kernel-64m.txt (default {common.DEFAULT_CORPORA})")
    parser.add_argument("--small-slice", action="store_true",
                        help=f"also train every algorithm on en.train.txt's first {SLICE_BYTES:,} bytes")
    parser.add_argument("--algorithms", nargs="+", default=list(ALGORITHMS), choices=[*ALGORITHMS, "bpe"],
                        help="which algorithms (default all; bpe: both BPE rows)")
    parser.add_argument("--work", default=common.DEFAULT_WORK, help="models and corpus copies (default %(default)s)")
    parser.add_argument("--train-bytes", type=int, default=common.DEFAULT_TRAIN_BYTES,
                        help="cap on en/zh/ja's training text (default %(default)s; 0: whole file)")
    parser.add_argument("--vocab-size", type=int, default=common.BYTEPIECE_SETTINGS["vocab_size"])
    parser.add_argument("--shardpiece-args", default="",
                        help="more shardpiece train flags, appended last (e.g. \"--master local[2]\")")
    parser.add_argument("--peer-threads", "--workers", type=int, default=2,
                        help="the peers' threads (sentencepiece, tokenizers) or worker processes (bytepiece)")
    parser.add_argument("--skip-peers", "--skip-bytepiece", action="store_true",
                        help="do not train the peers (a model an earlier run left in --work is still evaluated)")
    parser.add_argument("--skip-shardpiece", action="store_true")
    parser.add_argument("--limit-minutes", type=float, default=0, help="kill a training run that takes longer")
    parser.add_argument("--peer-limit-minutes", type=float, default=0,
                        help="stop a peer's training after this long: its time is then a lower bound, the ratio an "
                             "upper bound (met when shardpiece finished sooner)")
    parser.add_argument("--scaling", action="store_true", help="also train shardpiece bytepiece on 1x, 2x, 4x zh")
    parser.add_argument("--scaling-copies", type=int, nargs="+", default=[1, 2, 4])
    args = parser.parse_args(argv)
    if args.corpus is None:
        args.corpus = [] if args.small_slice else list(CORPORA)
    args.algorithms = [a for a in ALGORITHMS if a in args.algorithms or (a.startswith("bpe-") and
                                                                       "bpe" in args.algorithms)]
    os.makedirs(args.work, exist_ok=True)

    results: dict = {"settings": {"vocab_size": args.vocab_size, "train_bytes": args.train_bytes,
                                  "algorithms": args.algorithms, "shardpiece_args": args.shardpiece_args,
                                  "shardpiece_flags": {a: ALGORITHMS[a].flags + ["--no-resume"]
                                                       for a in args.algorithms},
                                  "peers": {a: peer_settings(args)[a] for a in args.algorithms}},
                     "corpora": [], "targets": []}
    key = common.run_key(argv)
    print(f"# train benchmark; {common.load_text()}", flush=True)
    for name in list(args.corpus) + ([SLICE] if args.small_slice else []):
        record = run_corpus(corpus_files(name, args), args)
        results["corpora"].append(record)
        results["targets"] += [row["target"] for row in record["runs"].values()]
        report_corpus(record, args)
        path = common.write_results("train", results, key=key)
    if args.scaling:
        zh = [r for r in results["corpora"] if r["corpus"] == "zh"]
        results["scaling"] = run_scaling(args, zh[0] if zh else None)
        report_scaling(results["scaling"])
    if results["corpora"] or args.scaling:
        path = common.write_results("train", results, key=key)
        print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
