"""Encoding speed of shardpiece against the peer that serves the same model, for every model type and call path,
side by side in one run.

    .venv/bin/python benchmarks/encode.py                       # en, zh, ja; models cached in /tmp/shardpiece-bench
    .venv/bin/python benchmarks/encode.py --corpus zh --repeats 9
    .venv/bin/python benchmarks/encode.py --corpus zh --test-bytes 300000 --bytepiece-train-bytes 400000  # quick
    .venv/bin/python benchmarks/encode.py --corpus zh --lines-from train --test-bytes 8000000   # longer timings

For each corpus it trains (or reuses from ``--work``), at 32k: SentencePiece unigram models in two variants —
``identity`` (identity normalizer, byte_fallback, no whitespace rewriting: lossless) and ``nmt_nfkc``
(sentencepiece's defaults) — and a SentencePiece BPE model (``sp-bpe``, the lossless settings), each by
sentencepiece on NAME.train.txt (2 threads); a BytePiece model (order 6, min_count 8, NFC) by bytepiece on
NAME.train.txt's first ``--bytepiece-train-bytes`` bytes (2 workers); and a byte-level BPE model
(``byte-level-bpe``, GPT-2 pattern) by shardpiece's trainer on the first ``--sp-train-bytes``, whose merges also
make a tiktoken ``Encoding``. Then, on the lines of NAME.test400k.txt (or ``--lines-from``; each without its
newline), it times, interleaved, best of ``--repeats``, each timed call right after an untimed one of the same
system (``common.interleaved_best``'s ``warm_up``: every system timed in its steady state):

* shardpiece on each model (loaded with ``Tokenizer.load``): ``encode_batch(list, num_threads=1)``,
  ``encode_batch(pyarrow array, num_threads=1)``, ``encode`` per line, and both batch forms with 2 threads;
* sentencepiece (unigram and BPE models): ``encode`` per line, ``encode(list, num_threads=1)`` and ``num_threads=2``;
* tiktoken (byte-level BPE): ``encode_ordinary`` per line, ``encode_ordinary_batch(list, num_threads=1)`` and 2;
* bytepiece: ``Tokenizer.encode`` per line;

checks that shardpiece's ids equal the peer's on every line (tiktoken merges a pair whenever its concatenation is
a token, merge replay only listed pairs: its differing lines are counted, not a failure), and measures the one-off
Numba compile time in a fresh subprocess (cold: an empty ``NUMBA_CACHE_DIR``; warm: the on-disk cache filled).
MB/s = UTF-8 bytes of the lines / seconds (1 MB = 10**6 bytes). Results: a table on stdout and
``benchmarks/results/encode.json``.
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
                        input_sentence_size: int, model_type: str = "unigram") -> float:
    import sentencepiece as spm

    if os.path.isfile(prefix + ".model"):
        return 0.0
    started = time.perf_counter()
    tmp_prefix = f"{prefix}.tmp{os.getpid()}"
    spm.SentencePieceTrainer.train(
        input=train_path, model_prefix=tmp_prefix, model_type=model_type, vocab_size=vocab_size,
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


GPT2_PATTERN = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""


def train_byte_level_bpe(train_path: str, path: str, vocab_size: int, pattern: str = "gpt2") -> float:
    """Train (once) shardpiece's byte-level BPE (GPT-2 pattern, or ``pattern``) on the file; returns seconds (0 when
    cached)."""
    from tokenizer.trainers import bpe

    if os.path.isfile(path):
        return 0.0
    started = time.perf_counter()
    lines = common.read_lines(train_path)
    model = bpe.train_bpe_local(lines, bpe.BpeSettings(vocab_sizes=(vocab_size,), pattern=pattern))[vocab_size]
    model.save(path + f".tmp{os.getpid()}")
    os.replace(path + f".tmp{os.getpid()}", path)
    return time.perf_counter() - started


def tiktoken_encoding(tok, pat_str: str = GPT2_PATTERN):
    """``(tiktoken Encoding with the model's merges and the regex ``pat_str``, array mapping its ids to ours)``:
    single bytes take ranks 0-255, each merged piece 256 + its merge rank (tokenizer.kernels.bpe_ranked's order)."""
    import numpy as np
    import tiktoken

    model = tok.model
    left, right, merged = tok.compiled.byte_level.merges
    ranks = {bytes([b]): b for b in range(256)}
    for rank, piece in enumerate(merged.tolist()):
        ranks[model.pieces[piece]] = 256 + rank
    ours = np.zeros(len(ranks), np.int64)
    for piece, rank in ranks.items():
        ours[rank] = tok.piece_to_id(piece)
    return tiktoken.Encoding("shardpiece-byte-level", pat_str=pat_str, mergeable_ranks=ranks,
                             special_tokens={}), ours


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
    if not args.skip_bpe:
        prefix = os.path.join(work, f"sp-bpe-{name}-{sp_train_bytes}b-identity-{args.vocab_size}")
        seconds = train_sentencepiece(sp_train, prefix, "identity", args.vocab_size, 2, args.input_sentence_size,
                                      model_type="bpe")
        if seconds:
            print(f"[{name}] trained sentencepiece BPE in {seconds:.1f} s", flush=True)
        models["sp-bpe"] = prefix + ".model"
        path = os.path.join(work, f"byte-level-bpe-{name}-{sp_train_bytes}b-{args.vocab_size}.model")
        seconds = train_byte_level_bpe(sp_train, path, args.vocab_size)
        if seconds:
            print(f"[{name}] trained shardpiece byte-level BPE in {seconds:.1f} s", flush=True)
        models["byte-level-bpe"] = path
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
    lines = common.lines_within(lines, args.test_bytes)
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
        elif key == "byte-level-bpe":
            encoding, to_ours = tiktoken_encoding(tok)
            theirs = [to_ours[ids].tolist() for ids in encoding.encode_ordinary_batch(lines, num_threads=1)]
            peer = "tiktoken"
            systems[f"{peer} per-line"] = lambda e=encoding: [e.encode_ordinary(line) for line in lines]
            systems[f"{peer} batch 1t"] = lambda e=encoding: e.encode_ordinary_batch(lines, num_threads=1)
            systems[f"{peer} batch 2t"] = lambda e=encoding: e.encode_ordinary_batch(lines, num_threads=2)
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
    best = common.interleaved_best(systems, args.repeats, warm_up=True)
    record["load_before"], record["load_after"] = load_before, common.load_average()
    mbps = {k: nbytes / v / 1e6 for k, v in best.items()}
    record["seconds_best"] = {k: round(v, 5) for k, v in best.items()}
    record["mb_per_s"] = {k: round(v, 3) for k, v in mbps.items()}

    # ---- ratios against the targets
    ratios = {}
    for key in models:
        ours = f"shardpiece[{key}]"
        if key.startswith("sp-") or key == "byte-level-bpe":
            peer = f"sentencepiece[{key}]" if key.startswith("sp-") else "tiktoken"
            name_of_peer = peer.split("[")[0]
            # the peer's faster one-thread call (tiktoken's batch call costs more per line than a loop over lines)
            peer_1t = max(mbps[f"{peer} batch 1t"], mbps[f"{peer} per-line"])
            ratios[f"{key}: shardpiece batch 1t / {name_of_peer} 1t"] = common.ratio(mbps[f"{ours} batch 1t"], peer_1t)
            ratios[f"{key}: shardpiece arrow 1t / {name_of_peer} 1t"] = common.ratio(mbps[f"{ours} arrow 1t"], peer_1t)
            ratios[f"{key}: shardpiece per-line / {name_of_peer} per-line"] = common.ratio(
                mbps[f"{ours} per-line"], mbps[f"{peer} per-line"])
            ratios[f"{key}: {name_of_peer} batch 2t / 1t"] = common.ratio(mbps[f"{peer} batch 2t"],
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
    """The issue's targets, per corpus: one thread against the peer (arrow, list, per line), two threads against
    one, identical ids."""
    out = []

    def add(name, target, key, bound):
        value = r.get(key)
        if value is not None:
            out.append({"corpus": name, "target": target, "value": value, "met": value >= bound})

    for record in corpora:
        r = record["ratios"]
        name = record["corpus"]
        for key in ("sp-identity", "sp-nmt_nfkc", "sp-bpe"):
            add(name, f"{key}: arrow 1t >= 2x sentencepiece", f"{key}: shardpiece arrow 1t / sentencepiece 1t", 2)
            add(name, f"{key}: list 1t >= 1.7x sentencepiece", f"{key}: shardpiece batch 1t / sentencepiece 1t", 1.7)
            add(name, f"{key}: per line >= 1.2x sentencepiece", f"{key}: shardpiece per-line / sentencepiece per-line",
                1.2)
        add(name, "byte-level-bpe: arrow 1t >= 3x tiktoken", "byte-level-bpe: shardpiece arrow 1t / tiktoken 1t", 3)
        add(name, "byte-level-bpe: list 1t >= 3x tiktoken", "byte-level-bpe: shardpiece batch 1t / tiktoken 1t", 3)
        add(name, "bytepiece: list 1t >= 15x bytepiece", "bytepiece: shardpiece batch 1t / bytepiece", 15)
        for key in ("sp-identity", "sp-nmt_nfkc", "sp-bpe", "byte-level-bpe", "bytepiece"):
            add(name, f"{key}: arrow 2t >= 1.8x 1t", f"{key}: shardpiece arrow 2t / 1t", 1.8)
            add(name, f"{key}: list 2t >= 1.5x 1t", f"{key}: shardpiece batch 2t / 1t", 1.5)
        for key, check in record["checks"].items():
            if check["peer"] != "tiktoken":
                out.append({"corpus": name, "target": f"{key}: identical ids to {check['peer']}",
                            "value": check["id_mismatches"], "met": check["id_mismatches"] == 0})
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
    parser.add_argument("--skip-bpe", action="store_true", help="no BPE models (nor their training)")
    parser.add_argument("--test-bytes", type=int, default=0, help="use only the first N bytes of the test lines")
    parser.add_argument("--lines-from", choices=("test400k", "test", "train"), default="test400k",
                        help="which split's lines are encoded (default test400k; 'train' with --test-bytes gives a "
                             "longer run, steadier for the two-thread ratio)")
    parser.add_argument("--no-compile", dest="compile", action="store_false",
                        help="skip the Numba compile-time measurement")
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
    path = common.write_results("encode", results)
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
