"""Encoding speed of shardpiece vs sentencepiece vs bytepiece on the same models, side by side in one run.

    .venv/bin/python benchmarks/encode.py                       # en, zh, ja; models cached in /tmp/shardpiece-bench
    .venv/bin/python benchmarks/encode.py --corpus zh --repeats 9
    .venv/bin/python benchmarks/encode.py --corpus zh --test-bytes 300000 --bytepiece-train-bytes 400000  # quick
    .venv/bin/python benchmarks/encode.py --corpus zh --lines-from train --test-bytes 8000000   # longer timings

For each corpus it trains (or reuses from ``--work``) a SentencePiece unigram model at 32k in two variants —
``identity`` (identity normalizer, byte_fallback, no whitespace rewriting: lossless) and ``nmt_nfkc``
(sentencepiece's defaults) — on NAME.train.txt (2 threads), and a BytePiece model (order 6, min_count 8, 32k, NFC)
on NAME.train.txt's first ``--bytepiece-train-bytes`` bytes (2 workers). Then, on the lines of
NAME.test400k.txt (or ``--lines-from``; each without its newline), it times, interleaved, best of ``--repeats``:

* shardpiece on each model (loaded with ``Tokenizer.load``): ``encode_batch(list, num_threads=1)``,
  ``encode_batch(pyarrow array, num_threads=1)``, ``encode`` per line, and both batch forms with 2 threads;
* sentencepiece: ``encode`` per line, ``encode(list, num_threads=1)`` and ``num_threads=2``;
* bytepiece: ``Tokenizer.encode`` per line;

checks that shardpiece's ids equal the peer's on every line, and measures the one-off Numba compile time in a
fresh subprocess (cold: an empty ``NUMBA_CACHE_DIR``; warm: the on-disk cache filled). MB/s = UTF-8 bytes of
the lines / seconds (1 MB = 10**6 bytes). Results: a table on stdout and ``benchmarks/results/encode.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

# Run as a script, sys.path[0] is benchmarks/: put the repository root there too, for ``benchmarks.common``.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))

from benchmarks import common  # noqa: E402

SP_VARIANTS = {
    # The lossless settings of the peer measurements: bytes in = bytes out.
    "identity": dict(common.LOSSLESS_SENTENCEPIECE),
    # sentencepiece's defaults (nmt_nfkc, dummy prefix, whitespace collapsing, no byte fallback).
    "nmt_nfkc": dict(),
}


def train_sentencepiece(train_path: str, prefix: str, variant: str, vocab_size: int, threads: int,
                        input_sentence_size: int) -> float:
    import sentencepiece as spm

    if os.path.isfile(prefix + ".model"):
        return 0.0
    started = time.perf_counter()
    tmp_prefix = f"{prefix}.tmp{os.getpid()}"
    spm.SentencePieceTrainer.train(
        input=train_path, model_prefix=tmp_prefix, model_type="unigram", vocab_size=vocab_size,
        num_threads=threads, input_sentence_size=input_sentence_size, shuffle_input_sentence=True,
        minloglevel=2, **SP_VARIANTS[variant])
    os.replace(tmp_prefix + ".model", prefix + ".model")
    os.replace(tmp_prefix + ".vocab", prefix + ".vocab")
    return time.perf_counter() - started


COMPILE_SCRIPT = r"""
import json, sys, time
t0 = time.perf_counter()
from tokenizer import Tokenizer
t1 = time.perf_counter()
tok = Tokenizer.load(sys.argv[1])
t2 = time.perf_counter()
tok.compiled
t3 = time.perf_counter()
tok.encode("warm up, 暖机 ウォームアップ")
t4 = time.perf_counter()
tok.encode_batch(["warm up", "暖机"], num_threads=1)
t5 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1, "build_arrays_s": t3 - t2, "first_encode_s": t4 - t3,
                  "first_batch_s": t5 - t4, "total_s": t5 - t0}))
"""


def measure_compile(model_path: str) -> dict:
    """First-use costs in a fresh interpreter: cold (empty Numba cache dir) then warm (the cache just filled)."""
    cache = tempfile.mkdtemp(prefix="shardpiece-numba-")
    out = {}
    try:
        for label in ("cold", "warm"):
            env = dict(os.environ, NUMBA_CACHE_DIR=cache)
            done = subprocess.run([common.PYTHON, "-c", COMPILE_SCRIPT, model_path], env=env, cwd=common.REPO,
                                  capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"compile measurement failed:\n{done.stderr[-3000:]}")
            out[label] = {k: round(v, 3) for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return out


def count_mismatches(ours: list[list[int]], theirs: list[list[int]]) -> tuple[int, int | None]:
    """(number of lines whose ids differ, index of the first one or None)."""
    bad = [i for i, (a, b) in enumerate(zip(ours, theirs)) if list(a) != list(b)]
    bad += list(range(min(len(ours), len(theirs)), max(len(ours), len(theirs))))
    return len(bad), (bad[0] if bad else None)


def bench_corpus(name: str, args, results: dict) -> dict:
    import pyarrow as pa
    import sentencepiece as spm
    from bytepiece import Tokenizer as BytePieceTokenizer

    from tokenizer import Tokenizer

    work = args.work
    os.makedirs(work, exist_ok=True)
    record: dict = {"corpus": name}

    # ---- models
    sp_train, sp_train_bytes = common.capped_train_file(args.corpora, name, work, args.sp_train_bytes)
    models = {}
    for variant in args.sp_variants:
        prefix = os.path.join(work, f"sp-unigram-{name}-{sp_train_bytes}b-{variant}-{args.vocab_size}")
        seconds = train_sentencepiece(sp_train, prefix, variant, args.vocab_size, 2, args.input_sentence_size)
        if seconds:
            print(f"[{name}] trained sentencepiece unigram ({variant}) in {seconds:.1f} s", flush=True)
        models[f"sp-{variant}"] = prefix + ".model"
    bp_train_bytes = 0
    if not args.skip_bytepiece:
        bp_train, bp_train_bytes = common.capped_train_file(args.corpora, name, work, args.bytepiece_train_bytes)
        bp_path = common.bytepiece_model_path(work, name, bp_train_bytes, args.vocab_size)
        if not os.path.isfile(bp_path):
            print(f"[{name}] training bytepiece on {bp_train_bytes:,} bytes (2 workers) ...", flush=True)
            run = common.train_bytepiece_measured(bp_train, bp_path, 2, args.vocab_size, log_path=bp_path + ".log")
            print(f"[{name}]   {run.seconds:.1f} s", flush=True)
        models["bytepiece"] = bp_path
    record["models"] = {k: {"path": v} for k, v in models.items()}
    record["sentencepiece_train_bytes"] = sp_train_bytes
    record["bytepiece_train_bytes"] = bp_train_bytes

    # ---- test lines
    lines = common.read_lines(common.corpus_path(args.corpora, name, args.lines_from))
    if args.test_bytes:
        kept, size = [], 0
        for line in lines:
            size += len(line.encode("utf-8")) + 1
            if size > args.test_bytes:
                break
            kept.append(line)
        lines = kept
    nbytes = sum(len(line.encode("utf-8")) for line in lines)
    arrow = pa.array(lines, type=pa.string())
    record["test_lines"] = len(lines)
    record["test_bytes"] = nbytes
    record["lines_from"] = args.lines_from

    systems = {}
    checks = {}
    model_rows = []
    for key, path in models.items():
        tok = Tokenizer.load(path)
        tok.encode_batch(lines[:50], num_threads=1)  # compile / load the Numba cache, build arrays
        tok.encode_batch(lines[:50], num_threads=2)
        ours = tok.encode_batch(lines, num_threads=1)
        ours_arrow = tok.encode_batch(arrow, num_threads=1).to_pylist()
        ours_line = [tok.encode(line) for line in lines]
        ours_2t = tok.encode_batch(lines, num_threads=2)
        check = {
            "lines": len(lines),
            "tokens": sum(len(x) for x in ours),
            "batch_vs_per_line_mismatches": count_mismatches(ours, ours_line)[0],
            "batch_vs_arrow_mismatches": count_mismatches(ours, ours_arrow)[0],
            "one_vs_two_threads_mismatches": count_mismatches(ours, ours_2t)[0],
        }
        label = f"shardpiece[{key}]"
        systems[f"{label} batch 1t"] = lambda tok=tok: tok.encode_batch(lines, num_threads=1)
        systems[f"{label} arrow 1t"] = lambda tok=tok: tok.encode_batch(arrow, num_threads=1)
        systems[f"{label} per-line"] = lambda tok=tok: [tok.encode(line) for line in lines]
        systems[f"{label} batch 2t"] = lambda tok=tok: tok.encode_batch(lines, num_threads=2)
        systems[f"{label} arrow 2t"] = lambda tok=tok: tok.encode_batch(arrow, num_threads=2)
        if key.startswith("sp-"):
            sp = spm.SentencePieceProcessor(model_file=path)
            theirs = sp.encode(lines)
            peer = f"sentencepiece[{key}]"
            systems[f"{peer} per-line"] = lambda sp=sp: [sp.encode(line) for line in lines]
            systems[f"{peer} batch 1t"] = lambda sp=sp: sp.encode(lines, num_threads=1)
            systems[f"{peer} batch 2t"] = lambda sp=sp: sp.encode(lines, num_threads=2)
            check["peer_tokens"] = sum(len(x) for x in theirs)
        else:
            bp = BytePieceTokenizer(path)
            theirs = [bp.encode(line) for line in lines]
            peer = "bytepiece"
            systems[f"{peer} per-line"] = lambda bp=bp: [bp.encode(line) for line in lines]
            check["peer_tokens"] = sum(len(x) for x in theirs)
        mismatches, first = count_mismatches(ours, theirs)
        check["peer"] = peer
        check["id_mismatches"] = mismatches
        if first is not None:
            check["first_mismatch"] = {"line": first, "text": lines[first][:200], "ours": ours[first][:40],
                                       "theirs": list(theirs[first])[:40]}
        check["bytes_per_token"] = round(nbytes / max(1, check["tokens"]), 4)
        checks[key] = check
        model_rows.append((key, tok.vocab_size, check["tokens"], check["bytes_per_token"], peer, mismatches,
                           check["batch_vs_per_line_mismatches"] + check["batch_vs_arrow_mismatches"]
                           + check["one_vs_two_threads_mismatches"]))
    record["checks"] = checks

    load_before = common.load_average()
    best = common.interleaved_best(systems, args.repeats)
    record["load_before"], record["load_after"] = load_before, common.load_average()
    mbps = {k: nbytes / v / 1e6 for k, v in best.items()}
    record["seconds_best"] = {k: round(v, 5) for k, v in best.items()}
    record["mb_per_s"] = {k: round(v, 3) for k, v in mbps.items()}

    # ---- ratios against the targets
    ratios = {}
    for key in models:
        ours = f"shardpiece[{key}]"
        if key.startswith("sp-"):
            peer = f"sentencepiece[{key}]"
            ratios[f"{key}: shardpiece batch 1t / sentencepiece batch 1t"] = common.ratio(
                mbps[f"{ours} batch 1t"], mbps[f"{peer} batch 1t"])
            ratios[f"{key}: shardpiece arrow 1t / sentencepiece batch 1t"] = common.ratio(
                mbps[f"{ours} arrow 1t"], mbps[f"{peer} batch 1t"])
            ratios[f"{key}: shardpiece per-line / sentencepiece per-line"] = common.ratio(
                mbps[f"{ours} per-line"], mbps[f"{peer} per-line"])
            ratios[f"{key}: sentencepiece batch 2t / 1t"] = common.ratio(mbps[f"{peer} batch 2t"],
                                                                         mbps[f"{peer} batch 1t"])
        else:
            ratios[f"{key}: shardpiece batch 1t / bytepiece"] = common.ratio(mbps[f"{ours} batch 1t"],
                                                                            mbps["bytepiece per-line"])
            ratios[f"{key}: shardpiece per-line / bytepiece"] = common.ratio(mbps[f"{ours} per-line"],
                                                                            mbps["bytepiece per-line"])
        ratios[f"{key}: shardpiece batch 2t / 1t"] = common.ratio(mbps[f"{ours} batch 2t"], mbps[f"{ours} batch 1t"])
        ratios[f"{key}: shardpiece arrow 2t / 1t"] = common.ratio(mbps[f"{ours} arrow 2t"], mbps[f"{ours} arrow 1t"])
    record["ratios"] = {k: round(v, 3) for k, v in ratios.items()}

    if args.compile and not results.get("compile"):
        results["compile"] = {key: measure_compile(path) for key, path in models.items()}
        results["compile_corpus"] = name

    print(f"\n## {name}: {len(lines):,} lines, {nbytes:,} bytes; {common.load_text()}\n")
    print(common.markdown_table(["system", "MB/s", "best s"],
                                [(k, mbps[k], best[k]) for k in systems]))
    print()
    print(common.markdown_table(["ratio", "value"], list(ratios.items())))
    print()
    print(common.markdown_table(["model", "vocab", "tokens", "bytes/token", "peer", "id mismatches vs peer",
                                 "internal mismatches"], model_rows))
    sys.stdout.flush()
    return record


def targets(corpora: list[dict]) -> list[dict]:
    out = []
    for record in corpora:
        r = record["ratios"]
        name = record["corpus"]
        for key in ("sp-identity", "sp-nmt_nfkc"):
            k = f"{key}: shardpiece batch 1t / sentencepiece batch 1t"
            if k in r:
                out.append({"corpus": name, "target": f"one-thread >= 1.5x sentencepiece ({key}, batch)",
                            "value": r[k], "met": r[k] >= 1.5})
        k = "bytepiece: shardpiece batch 1t / bytepiece"
        if k in r:
            out.append({"corpus": name, "target": "one-thread >= 3x bytepiece", "value": r[k], "met": r[k] >= 3})
        for key in ("sp-identity", "sp-nmt_nfkc", "bytepiece"):
            k = f"{key}: shardpiece batch 2t / 1t"
            if k in r:
                out.append({"corpus": name, "target": f"parallel >= 1.8x one thread ({key}, list)", "value": r[k],
                            "met": r[k] >= 1.8})
            k = f"{key}: shardpiece arrow 2t / 1t"
            if k in r:
                out.append({"corpus": name, "target": f"parallel >= 1.8x one thread ({key}, arrow)", "value": r[k],
                            "met": r[k] >= 1.8})
        for key, check in record["checks"].items():
            out.append({"corpus": name, "target": f"identical ids to {check['peer']}", "value": check["id_mismatches"],
                        "met": check["id_mismatches"] == 0})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", nargs="+", default=list(common.CORPORA), choices=common.CORPORA)
    parser.add_argument("--corpora", default=common.DEFAULT_CORPORA,
                        help=f"directory of NAME.train/.test400k.txt (default {common.DEFAULT_CORPORA})")
    parser.add_argument("--work", default=common.DEFAULT_WORK, help="model cache (default %(default)s)")
    parser.add_argument("--vocab-size", type=int, default=32000, help="of every model (default %(default)s)")
    parser.add_argument("--repeats", type=int, default=7, help="timings per system; the best counts")
    parser.add_argument("--sp-variants", nargs="+", default=list(SP_VARIANTS), choices=list(SP_VARIANTS))
    parser.add_argument("--sp-train-bytes", type=int, default=common.DEFAULT_TRAIN_BYTES,
                        help="train sentencepiece on this many bytes of NAME.train.txt (default %(default)s)")
    parser.add_argument("--input-sentence-size", type=int, default=1_000_000,
                        help="sentencepiece's input_sentence_size (lines sampled)")
    parser.add_argument("--bytepiece-train-bytes", type=int, default=common.DEFAULT_TRAIN_BYTES,
                        help="train bytepiece on this many bytes of NAME.train.txt (default %(default)s)")
    parser.add_argument("--skip-bytepiece", action="store_true", help="no bytepiece model (nor its training)")
    parser.add_argument("--test-bytes", type=int, default=0, help="use only the first N bytes of the test lines")
    parser.add_argument("--lines-from", choices=("test400k", "test", "train"), default="test400k",
                        help="which split's lines are encoded (default test400k; 'train' with --test-bytes gives a "
                             "longer run, steadier for the two-thread ratio)")
    parser.add_argument("--no-compile", dest="compile", action="store_false",
                        help="skip the Numba compile-time measurement")
    parser.add_argument("--output", default="encode", help="results/NAME.json (default %(default)s)")
    args = parser.parse_args(argv)

    results: dict = {"command": " ".join([os.path.relpath(sys.argv[0], common.REPO)] + sys.argv[1:]),
                     "settings": {k: v for k, v in vars(args).items()}}
    print(f"# encode benchmark; {common.load_text()}", flush=True)
    corpora = [bench_corpus(name, args, results) for name in args.corpus]
    results["corpora"] = corpora
    results["targets"] = targets(corpora)
    if results.get("compile"):
        print(f"\n## Numba first use in a fresh process (models of {results['compile_corpus']})\n")
        rows = []
        for key, info in results["compile"].items():
            for label in ("cold", "warm"):
                c = info[label]
                rows.append((key, label, c["import_s"], c["load_s"], c["build_arrays_s"], c["first_encode_s"],
                             c["first_batch_s"], c["total_s"]))
        print(common.markdown_table(["model", "numba cache", "import s", "load s", "build arrays s",
                                     "first encode s", "first batch s", "total s"], rows))
    print("\n## targets\n")
    print(common.markdown_table(["corpus", "target", "value", "met"],
                                [(t["corpus"], t["target"], t["value"], "yes" if t["met"] else "NO")
                                 for t in results["targets"]]))
    path = common.write_results(args.output, results)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
