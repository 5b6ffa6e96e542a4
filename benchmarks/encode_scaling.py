"""One- and two-thread ``encode_batch`` speed of the current encoder vs an older copy of it, in one process.

    .venv/bin/python benchmarks/encode_scaling.py --old /tmp/sp_old --corpus zh --repeats 5

``--old DIR`` names a directory holding an earlier ``tokenizer`` package renamed ``tokenizer_old`` (imports
rewritten), e.g. made with ``git archive REV tokenizer | tar -x -C DIR`` and a rename; without it only the
current code is timed. For each SentencePiece model given (default: the 32k unigram models cached in
/tmp/shardpiece-bench by benchmarks/encode.py) it times, interleaved and best of ``--repeats``:
``encode_batch(pyarrow array)`` with 1 and 2 threads, ``encode_batch(list)`` with 1 thread (split into pack /
kernel / unpack), and sentencepiece's ``encode(list, num_threads=1)`` and ``=2``. It checks the ids agree,
prints a table (wall MB/s, and MB per CPU-second of the whole process, which a loaded machine disturbs less)
with the machine's load average, and writes the run into ``benchmarks/results/encode-scaling.json`` under the
corpus's name (a later run on that corpus replaces it).
MB/s = UTF-8 bytes / seconds (1 MB = 10**6 bytes).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))

DEFAULT_MODELS = "/tmp/shardpiece-bench/sp-unigram-{corpus}-*-{variant}-32000.model"


def best_of(repeats, functions, cpu=None):
    """Run each function once per round, ``repeats`` rounds interleaved; returns the best wall seconds of each
    (and, into the list ``cpu`` if given, the best process CPU seconds: all threads, robust to a loaded machine)."""
    best = [float("inf")] * len(functions)
    best_cpu = [float("inf")] * len(functions)
    for _ in range(repeats):
        for i, function in enumerate(functions):
            began, began_cpu = time.perf_counter(), time.process_time()
            function()
            best[i] = min(best[i], time.perf_counter() - began)
            best_cpu[i] = min(best_cpu[i], time.process_time() - began_cpu)
    if cpu is not None:
        cpu[:] = best_cpu
    return best


def list_path_breakdown(tok, texts, repeats):
    """Seconds of the list path's parts on one thread: pack to Arrow buffers, kernel, results to Python lists."""
    import numpy as np

    core = sys.modules[type(tok).__module__]  # tokenizer.core, or the older copy's

    def pack():
        return core._pack_texts(texts, tok._to_bytes)

    data, offsets = pack()

    def kernel():
        return tok._encode_packed(data, offsets, core._ALL_VALID, 1, -1, -1)

    ids, out_offsets = kernel()
    unpack = getattr(core, "_split_ids", None)
    if unpack is None:
        def unpack_old():
            flat = ids.tolist()
            bounds = out_offsets.tolist()
            return [flat[a:b] for a, b in zip(bounds, bounds[1:])]
        unpack_fn = unpack_old
    else:
        def unpack_fn():
            return unpack(ids, out_offsets)
    assert np.asarray(out_offsets).shape[0] == len(texts) + 1
    return dict(zip(("pack", "kernel", "unpack"), best_of(repeats, [pack, kernel, unpack_fn])))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default="zh", help="NAME of /work/corpora/NAME.test400k.txt (default zh)")
    parser.add_argument("--corpora-dir", default="/work/corpora")
    parser.add_argument("--models", nargs="*", help="SentencePiece .model files (default: cached identity and "
                        "nmt_nfkc 32k unigram models of the corpus)")
    parser.add_argument("--old", help="directory with an older copy of the package named tokenizer_old")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)

    import glob

    import numpy as np
    import pyarrow as pa
    import sentencepiece as spm

    from tokenizer import Tokenizer

    implementations = [("new", Tokenizer)]
    if args.old:
        sys.path.insert(0, args.old)
        from tokenizer_old import Tokenizer as OldTokenizer

        implementations.insert(0, ("old", OldTokenizer))
    models = args.models or sorted(p for v in ("identity", "nmt_nfkc")
                                   for p in glob.glob(DEFAULT_MODELS.format(corpus=args.corpus, variant=v)))
    if not models:
        parser.error("no models found: pass --models, or run benchmarks/encode.py once to train them")
    path = os.path.join(args.corpora_dir, f"{args.corpus}.test400k.txt")
    with open(path, encoding="utf-8") as handle:
        texts = handle.read().split("\n")
    texts = [t for t in texts if t]
    mb = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    array = pa.array(texts, type=pa.string())
    rows = []
    for model_path in models:
        sp = spm.SentencePieceProcessor(model_file=model_path)
        toks = {name: cls.load(model_path) for name, cls in implementations}
        reference = sp.encode(texts, num_threads=1)
        for name, tok in toks.items():
            got = tok.encode_batch(texts, num_threads=1)
            assert got == reference, f"{name}: ids differ from sentencepiece on {model_path}"
            assert tok.encode_batch(array, num_threads=2).to_pylist() == reference
        functions, labels = [], []
        for name, tok in toks.items():
            for threads in (1, 2):
                functions.append(lambda tok=tok, threads=threads: tok.encode_batch(array, num_threads=threads))
                labels.append((name, f"arrow t{threads}"))
            functions.append(lambda tok=tok: tok.encode_batch(texts, num_threads=1))
            labels.append((name, "list t1"))
        for threads in (1, 2):
            functions.append(lambda threads=threads: sp.encode(texts, num_threads=threads))
            labels.append(("sentencepiece", f"list t{threads}"))
        load_before = os.getloadavg()[0]
        cpu_seconds = []
        seconds = best_of(args.repeats, functions, cpu_seconds)
        load_after = os.getloadavg()[0]
        speeds = {f"{n} {k}": mb / s for (n, k), s in zip(labels, seconds)}
        cpu_speeds = {f"{n} {k}": mb / s for (n, k), s in zip(labels, cpu_seconds)}
        breakdown = {name: list_path_breakdown(tok, texts, args.repeats) for name, tok in toks.items()}
        row = dict(model=os.path.basename(model_path), mb=mb, mb_per_s=speeds, mb_per_cpu_s=cpu_speeds,
                   list_breakdown_s=breakdown, load_avg=[load_before, load_after])
        for name in toks:
            row[f"{name} 2t/1t arrow"] = speeds[f"{name} arrow t2"] / speeds[f"{name} arrow t1"]
            row[f"{name} arrow t1 / sp t1"] = speeds[f"{name} arrow t1"] / speeds["sentencepiece list t1"]
            row[f"{name} list t1 / sp t1"] = speeds[f"{name} list t1"] / speeds["sentencepiece list t1"]
        row["sentencepiece 2t/1t"] = speeds["sentencepiece list t2"] / speeds["sentencepiece list t1"]
        rows.append(row)
        print(f"\n{row['model']}  ({mb:.2f} MB, load average {load_before:.2f} -> {load_after:.2f})")
        for key, value in speeds.items():
            print(f"  {key:<28} {value:8.2f} MB/s   {cpu_speeds[key]:8.2f} MB per CPU-s")
        for key, value in row.items():
            if "/" in key:
                print(f"  {key:<28} {value:8.2f}x")
        for name, parts in breakdown.items():
            print(f"  {name} list path, 1 thread:  " + "  ".join(f"{k} {v * 1e3:7.1f} ms" for k, v in parts.items()))
    from benchmarks import common

    output = common.write_results("encode-scaling", dict(corpus=args.corpus, repeats=args.repeats,
                                                         cpu_count=os.cpu_count(), old=args.old, rows=rows),
                                  key=args.corpus)
    print(f"\nwrote {output}")


if __name__ == "__main__":
    main()
