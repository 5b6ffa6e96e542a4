"""BPE side by side on one corpus: training (shardpiece's Spark job vs Hugging Face tokenizers vs sentencepiece
BPE), bytes per token of each model on the test lines, and one-thread encoding speed (shardpiece vs tiktoken vs
Hugging Face tokenizers on the same merges).

    .venv/bin/python benchmarks/bpe.py                                  # en, first 13 MB of en.train.txt
    .venv/bin/python benchmarks/bpe.py --corpus en --train-bytes 500000 # a quick check

1. Training, each in its own subprocess, one after the other, with wall time, CPU seconds and peak memory of the
   process tree and the load average before each, all at ``--vocab-size`` (default 32000):
   - ``shardpiece train --algorithm bpe --pretokenizer byte_level --pattern gpt2 --master local[2]
     --holdout-fraction 0`` (Spark start-up, reading and the manifest's evaluation included) — ``shardpiece``;
   - the same with ``--master none --threads 2`` (no Spark) — ``shardpiece-local``; its model must be the same bytes;
   - ``shardpiece-parquet`` and ``shardpiece-parquet-spark-reader`` (only with ``--systems``): the Spark job on
     the same lines as one Parquet file (a ``text`` column), read in the tasks by pyarrow, and with ``--reader
     spark``; ``shardpiece-spark-reader`` (only with ``--systems``): the text file through Spark's reader and the
     job's reduce; all three models must be the same bytes as ``shardpiece``'s;
   - both again with ``--pretokenizer sentencepiece`` (SentencePiece's BPE rules and defaults: ▁ words, scripts,
     character coverage 0.9995, 16-character pieces) — ``shardpiece-sp`` and ``shardpiece-sp-local``, the
     comparison that matches sentencepiece's run below;
   - tokenizers' ``BpeTrainer`` with the ByteLevel pre-tokenizer (GPT-2 regex, no prefix space), the 256-byte
     initial alphabet, the same three special tokens and min_frequency 2, ``RAYON_NUM_THREADS=2``;
   - sentencepiece BPE, lossless settings: identity normalizer, byte_fallback, remove_extra_whitespaces=false,
     add_dummy_prefix=false, allow_whitespace_only_pieces=true, num_threads=2.
   ``--systems`` picks a subset. The shardpiece manifests give the stage times (counting MB/s).
2. Bytes per token on ``NAME.test400k.txt`` with each system's own model (shardpiece's via ``Tokenizer.load``).
3. One-thread encoding of the test lines: shardpiece on its own model (``encode_batch`` of a pyarrow array), tiktoken
   on the merges of the tokenizers-trained model (ranks: the 256 bytes, then the merges in order; GPT-2 ``pat_str``;
   per-line ``encode_ordinary`` and ``encode_ordinary_batch(num_threads=1)``, the faster one counts),
   shardpiece loading that same tokenizer.json, and tokenizers' ``encode_batch``; shardpiece's ids on the
   tokenizer.json must equal tokenizers' on every line.

Prints tables and writes the run into ``benchmarks/results/bpe.json``, keyed by its arguments (``--work`` left
out): another run with the same arguments replaces it, the others stay.
"""

from __future__ import annotations

import os
import sys

# one thread for tokenizers' encode_batch in this process (the training subprocesses set their own)
os.environ["RAYON_NUM_THREADS"] = "1"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import argparse  # noqa: E402
import json  # noqa: E402

from benchmarks import common, peers, processes  # noqa: E402

GPT2_PAT_STR = r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
SPARK_ENV = {"SPARK_LOCAL_IP": "127.0.0.1"}
SHARDPIECE_SYSTEMS = ("shardpiece", "shardpiece-local", "shardpiece-sp", "shardpiece-sp-local",
                      "shardpiece-parquet", "shardpiece-parquet-spark-reader", "shardpiece-spark-reader")
ALL_SYSTEMS = SHARDPIECE_SYSTEMS + ("tokenizers", "sentencepiece")


def parquet_copy(train_path: str, work: str) -> str:
    """The training lines as one Parquet file with a ``text`` column (row groups of 65,536 lines), written once."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = os.path.join(work, "train.parquet")
    if not os.path.exists(path):
        with open(train_path, "rb") as handle:
            lines = handle.read().split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()
        pq.write_table(pa.table({"text": pa.array(lines, pa.binary()).cast(pa.string())}), path + ".tmp",
                       row_group_size=65_536)
        os.replace(path + ".tmp", path)
    return path


def train_all(train_path: str, train_bytes: int, args: argparse.Namespace) -> tuple[dict, dict]:
    """Train the three models (each in a measured subprocess); returns ``(paths, measured dicts)``."""
    work = os.path.join(args.work, f"bpe-{args.corpus}-{train_bytes}b-v{args.vocab_size}")
    os.makedirs(work, exist_ok=True)
    paths = {name: os.path.join(work, f"{name}.model") for name in SHARDPIECE_SYSTEMS}
    paths.update({"tokenizers": os.path.join(work, "tokenizers.json"),
                  "sentencepiece": os.path.join(work, "sentencepiece.model")})

    def shardpiece(name: str, pretokenizer: str, master: str, *extra: str) -> tuple[list[str], dict]:
        parquet = name.startswith("shardpiece-parquet") and name in args.systems
        source = parquet_copy(train_path, work) if parquet else train_path
        command = [common.PYTHON, "-m", "jobs.cli", "train", "--algorithm", "bpe", "--input", source,
                   "--vocab-size", str(args.vocab_size), "--output", paths[name], "--pretokenizer", pretokenizer,
                   "--master", master, "--holdout-fraction", "0", "--no-resume", *extra]  # time every stage
        if pretokenizer == "byte_level":
            command += ["--pattern", "gpt2"]
        if master == "none":
            command += ["--threads", str(args.threads)]
        return command, SPARK_ENV

    commands = {
        "shardpiece": shardpiece("shardpiece", "byte_level", args.master),
        "shardpiece-local": shardpiece("shardpiece-local", "byte_level", "none"),
        "shardpiece-sp": shardpiece("shardpiece-sp", "sentencepiece", args.master),
        "shardpiece-sp-local": shardpiece("shardpiece-sp-local", "sentencepiece", "none"),
        "shardpiece-parquet": shardpiece("shardpiece-parquet", "byte_level", args.master),
        "shardpiece-parquet-spark-reader": shardpiece("shardpiece-parquet-spark-reader", "byte_level", args.master,
                                                      "--reader", "spark"),
        "shardpiece-spark-reader": shardpiece("shardpiece-spark-reader", "byte_level", args.master, "--reader",
                                              "spark"),
        "tokenizers": peers.tokenizers_command(train_path, paths["tokenizers"], args.vocab_size, threads=2),
        "sentencepiece": peers.sentencepiece_command(train_path, paths["sentencepiece"],
                                                     peers.sentencepiece_settings("bpe", args.vocab_size, 2)),
    }
    measured = {}
    for name, (command, env) in commands.items():
        if name not in args.systems:
            continue
        print(f"training {name} ({common.load_text()}) ...", flush=True)
        run = processes.run_measured(command, env=env, cwd=common.REPO, log_path=os.path.join(work, f"{name}.log"))
        if run.returncode != 0:
            sys.exit(f"{name} training failed ({run.returncode}):\n{run.output_tail}")
        print(f"  {run.seconds:.1f} s wall, {run.cpu_seconds:.1f} s CPU, peak {run.memory.peak_total_mib:.0f} MiB",
              flush=True)
        measured[name] = run.to_dict()
        if name in SHARDPIECE_SYSTEMS:
            with open(paths[name] + ".manifest.json", encoding="utf-8") as handle:
                stages = {stage["name"]: stage for stage in json.load(handle)["stages"]}
            measured[name]["stages"] = stages
            chunks = stages["chunks"]["seconds"]
            measured[name]["count_mb_per_s"] = round(train_bytes / 1e6 / chunks, 2) if chunks else None
    return paths, measured


def tiktoken_from_tokenizer_json(path: str):
    """A ``tiktoken.Encoding`` with the tokenizers model's merges: rank 0-255 the single bytes, then each merge's
    result in merge order (a result already ranked keeps its first rank); GPT-2 ``pat_str``."""
    import tiktoken

    from tokenizer.interop.huggingface import decode_piece

    with open(path, encoding="utf-8") as handle:
        model = json.load(handle)["model"]
    ranks: dict[bytes, int] = {bytes([b]): b for b in range(256)}
    for merge in model["merges"]:
        left, right = merge.split(" ") if isinstance(merge, str) else merge
        ranks.setdefault(decode_piece(left) + decode_piece(right), len(ranks))
    return tiktoken.Encoding(name="tokenizers-bpe", pat_str=GPT2_PAT_STR, mergeable_ranks=ranks, special_tokens={})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default="en", choices=common.CORPORA)
    parser.add_argument("--corpora", default=common.DEFAULT_CORPORA,
                        help=f"directory of NAME.train/.test400k.txt (default {common.DEFAULT_CORPORA})")
    parser.add_argument("--train-bytes", type=int, default=13_000_000,
                        help="train on the first N bytes of NAME.train.txt, cut at a line end (default %(default)s)")
    parser.add_argument("--work", default=common.DEFAULT_WORK, help="models and logs (default %(default)s)")
    parser.add_argument("--vocab-size", type=int, default=32000)
    parser.add_argument("--master", default="local[2]", help="shardpiece's Spark master (default %(default)s)")
    parser.add_argument("--threads", type=int, default=2, help="shardpiece --master none threads (default 2)")
    parser.add_argument("--systems", nargs="+", choices=ALL_SYSTEMS,
                        default=[n for n in ALL_SYSTEMS if "reader" not in n and "parquet" not in n],
                        help="which trainers to run (default: all but the Parquet-input and Spark-reader ones)")
    parser.add_argument("--no-encode", dest="encode", action="store_false", help="skip the encoding comparison")
    parser.add_argument("--repeats", type=int, default=5, help="encode timings per system; the best counts")
    args = parser.parse_args(argv)

    import pyarrow as pa
    import sentencepiece as spm
    from tokenizers import Tokenizer as HfTokenizer

    from tokenizer import Tokenizer

    print(f"# bpe benchmark; {common.load_text()}", flush=True)
    train_path, train_bytes = common.capped_train_file(args.corpora, args.corpus, args.work, args.train_bytes)
    lines = common.read_lines(common.corpus_path(args.corpora, args.corpus, "test400k"))
    nbytes = sum(len(line.encode("utf-8")) for line in lines)
    results: dict = {"command": " ".join([os.path.relpath(sys.argv[0], common.REPO)] + sys.argv[1:]),
                     "settings": vars(args), "corpus": args.corpus, "train_path": train_path,
                     "train_bytes": train_bytes, "test_lines": len(lines), "test_bytes": nbytes}

    # ---- 1. training
    paths, trained = train_all(train_path, train_bytes, args)
    results["training"] = trained

    # ---- 2. bytes per token, each with its own model
    encoders = {}
    for name in trained:
        if name in SHARDPIECE_SYSTEMS:
            tok = Tokenizer.load(paths[name])
            tok.encode_batch(lines[:50], num_threads=1)  # compile / load the Numba cache
            encoders[name] = lambda tok=tok: tok.encode_batch(lines, num_threads=1)
    if "tokenizers" in trained:
        hf = HfTokenizer.from_file(paths["tokenizers"])
        encoders["tokenizers"] = lambda: [e.ids for e in hf.encode_batch(lines, add_special_tokens=False)]
    if "sentencepiece" in trained:
        sp = spm.SentencePieceProcessor(model_file=paths["sentencepiece"])
        encoders["sentencepiece"] = lambda: sp.encode(lines, num_threads=1)
    ids = {name: encode() for name, encode in encoders.items()}
    tokens = {name: sum(map(len, v)) for name, v in ids.items()}
    bytes_per_token = {k: round(nbytes / max(1, v), 4) for k, v in tokens.items()}
    check: dict = {"lines": len(lines)}
    for name in SHARDPIECE_SYSTEMS:
        if name in trained:
            tok = Tokenizer.load(paths[name])
            check[f"{name}_vocab_size"] = tok.vocab_size
            check[f"{name}_lossless_lines"] = sum(tok.decode(x) == line for x, line in zip(ids[name], lines))
    for spark_name, local_name in (("shardpiece", "shardpiece-local"), ("shardpiece-sp", "shardpiece-sp-local"),
                                   ("shardpiece", "shardpiece-parquet"),
                                   ("shardpiece", "shardpiece-parquet-spark-reader"),
                                   ("shardpiece", "shardpiece-spark-reader")):
        if spark_name in trained and local_name in trained:
            with open(paths[spark_name], "rb") as a, open(paths[local_name], "rb") as b:
                check[f"{local_name}_model_bytes_equal_{spark_name}"] = a.read() == b.read()
    if "tokenizers" in trained:
        check["tokenizers_vocab_size"] = hf.get_vocab_size()
    if "sentencepiece" in trained:
        check["sentencepiece_vocab_size"] = sp.get_piece_size()
    results["tokens"], results["bytes_per_token"], results["checks"] = tokens, bytes_per_token, check
    t = trained
    targets = []
    if "sentencepiece" in trained:
        for name in ("shardpiece-sp", "shardpiece-sp-local", "shardpiece", "shardpiece-local"):
            if name in bytes_per_token:
                targets.append({"target": f"{name} bytes/token >= sentencepiece BPE's",
                                "value": f"{bytes_per_token[name]} vs {bytes_per_token['sentencepiece']} "
                                         f"({common.ratio(bytes_per_token[name], bytes_per_token['sentencepiece']) - 1:+.2%})",
                                "met": bytes_per_token[name] >= bytes_per_token["sentencepiece"]})
    if "tokenizers" in trained:
        for name in ("shardpiece", "shardpiece-local"):
            if name in trained:
                targets.append({"target": f"{name} training wall time <= tokenizers' (same corpus, GPT-2 regex)",
                                "value": f"{t[name]['seconds']} s vs {t['tokenizers']['seconds']} s",
                                "met": t[name]["seconds"] <= t["tokenizers"]["seconds"]})

    # ---- 3. one-thread encoding speed
    if args.encode and "tokenizers" in trained and ({"shardpiece", "shardpiece-local"} & set(trained)):
        own = Tokenizer.load(paths["shardpiece-local" if "shardpiece-local" in trained else "shardpiece"])
        ours_on_hf = Tokenizer.load(paths["tokenizers"])
        tik = tiktoken_from_tokenizer_json(paths["tokenizers"])
        arrow = pa.array(lines, type=pa.string())
        own.encode_batch(lines[:50], num_threads=1)
        ours_on_hf.encode_batch(lines[:50], num_threads=1)
        ours_on_hf_ids = ours_on_hf.encode_batch(arrow, num_threads=1).to_pylist()
        mismatched = [i for i, (a, b) in enumerate(zip(ours_on_hf_ids, ids["tokenizers"])) if a != b]
        check["id_mismatches_shardpiece_on_tokenizers_json_vs_tokenizers"] = len(mismatched)
        check["tiktoken_tokens"] = sum(map(len, tik.encode_ordinary_batch(lines, num_threads=1)))
        systems = {
            "shardpiece (own model, arrow, 1t)": lambda: own.encode_batch(arrow, num_threads=1),
            "shardpiece (tokenizers.json, arrow, 1t)": lambda: ours_on_hf.encode_batch(arrow, num_threads=1),
            "tiktoken (tokenizers' merges, per-line encode_ordinary)": lambda: [tik.encode_ordinary(x) for x in lines],
            "tiktoken (tokenizers' merges, encode_ordinary_batch 1t)": lambda: tik.encode_ordinary_batch(
                lines, num_threads=1),
            "tokenizers encode_batch (RAYON_NUM_THREADS=1)": lambda: hf.encode_batch(lines, add_special_tokens=False),
        }
        load_before = common.load_average()
        best = common.interleaved_best(systems, args.repeats)
        results["encode_load_before"], results["encode_load_after"] = load_before, common.load_average()
        mbps = {k: nbytes / v / 1e6 for k, v in best.items()}
        results["encode_seconds_best"] = {k: round(v, 5) for k, v in best.items()}
        results["encode_mb_per_s"] = {k: round(v, 3) for k, v in mbps.items()}
        names = list(systems)
        tiktoken_best = max(mbps[names[2]], mbps[names[3]])  # tiktoken's faster one-thread path
        ratios = {
            "shardpiece on tokenizers.json / tiktoken (its faster path)": common.ratio(mbps[names[1]], tiktoken_best),
            "shardpiece on tokenizers.json / tokenizers": common.ratio(mbps[names[1]], mbps[names[4]]),
            "shardpiece own model / tiktoken (its faster path)": common.ratio(mbps[names[0]], tiktoken_best),
        }
        results["encode_ratios"] = {k: round(v, 3) for k, v in ratios.items()}
        targets += [
            {"target": "shardpiece encoding an imported byte-level BPE >= tiktoken's speed",
             "value": round(ratios["shardpiece on tokenizers.json / tiktoken (its faster path)"], 3),
             "met": ratios["shardpiece on tokenizers.json / tiktoken (its faster path)"] >= 1.0},
            {"target": "shardpiece's ids on tokenizers.json == tokenizers' on every line",
             "value": f"{len(lines) - len(mismatched)}/{len(lines)}", "met": not mismatched},
        ]
    results["targets"] = targets

    print(f"\n## {args.corpus}: train {train_bytes:,} bytes; test {len(lines):,} lines, {nbytes:,} bytes; "
          f"{common.load_text()}\n")
    print(common.markdown_table(
        ["system", "load before", "train wall s", "train CPU s", "peak MiB (tree)", "count MB/s", "merges s",
         "vocab", "test tokens", "bytes/token"],
        [(k, t[k]["load_before"]["load1"] if "load_before" in t[k] else "", t[k]["seconds"], t[k]["cpu_seconds"],
          t[k]["memory"]["peak_total_mib"], t[k].get("count_mb_per_s", ""),
          t[k]["stages"]["merges"]["seconds"] if "stages" in t[k] else "",
          check.get(f"{k}_vocab_size", ""), tokens[k], bytes_per_token[k]) for k in t]))
    print()
    if "encode_mb_per_s" in results:
        print(common.markdown_table(["encode, one thread", "MB/s", "best s"],
                                    [(k, mbps[k], best[k]) for k in systems]))
        print()
        print(common.markdown_table(["ratio", "value"], list(ratios.items())))
        print()
    print(common.markdown_table(["check", "value"], list(check.items())))
    print()
    print(common.markdown_table(["target", "value", "met"],
                                [(x["target"], x["value"], "yes" if x["met"] else "NO") for x in targets]))
    path = common.write_results("bpe", results, key=common.run_key(argv))
    print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
