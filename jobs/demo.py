"""``shardpiece demo`` (what ``make demo`` runs): train on the shipped sample corpus with ``configs/demo.yaml``,
print the summary, then encode and decode a few lines and show that they round-trip byte for byte.

    shardpiece demo [--output DIR] [--master URL] [--partitions N]
"""

from __future__ import annotations

import argparse
import os
import sys

from tokenizer.errors import ConfigError

SAMPLE_LINES = [
    "Spark counts the byte n-grams of every shard, then the driver prunes them.",
    "分片统计词频，再在驱动端剪枝：文本→编号→文本，一个字节也不丢。",
    "日本語のテキストもバイト単位で扱うので、未知語はありません。",
    "    def tokenize(self, text):  # indentation and\ttabs survive too",
]


def repository_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def demo_config_path() -> str:
    path = os.path.join(repository_root(), "configs", "demo.yaml")
    if not os.path.isfile(path):
        raise ConfigError(
            f"{path} is missing: the demo runs from a source checkout (git clone, then `make demo`); with an "
            "installed package use `shardpiece train --config FILE` instead"
        )
    return path


def show_round_trip(model_path: str, lines: list[str]) -> bool:
    from jobs.encode import escape_piece
    from tokenizer.core import Tokenizer

    tokenizer = Tokenizer.load(model_path)
    ok = True
    print(f"\nencode / decode with {model_path} (vocab size {tokenizer.vocab_size})")
    for line in lines:
        data = line.encode("utf-8")
        ids = tokenizer.encode(data)
        back = tokenizer.decode_bytes(ids)
        same = back == data
        ok &= same
        pieces = " ".join(escape_piece(tokenizer.id_to_piece(i)) for i in ids)
        print(f"\n  text    {line}")
        print(f"  pieces  {pieces}")
        print(f"  ids     {' '.join(map(str, ids))}")
        print(f"  decoded {back.decode('utf-8', errors='replace')}")
        print(f"  {len(data)} bytes -> {len(ids)} tokens ({len(data) / max(1, len(ids)):.2f} bytes/token); "
              f"round trip {'identical bytes' if same else 'DIFFERS'}")
    return ok


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "demo":
        argv = argv[1:]
    parser = argparse.ArgumentParser(prog="shardpiece demo", description=__doc__.split("\n\n")[0])
    parser.add_argument("--output", metavar="DIR", help="where the models go (default: out/demo)")
    parser.add_argument("--master", metavar="URL",
                        help="auto (the config's: this process for the small sample), none, or a Spark master "
                             "such as local[2]")
    parser.add_argument("--partitions", type=int, metavar="N", help="document partitions (Spark only)")
    args = parser.parse_args(argv)

    from jobs.exit_codes import run_command
    from jobs.train import build_parser, format_summary, resolve_options, run

    outcome = {}

    def body() -> int:
        argv = ["--config", demo_config_path()]
        for key in ("output", "master", "partitions"):
            if getattr(args, key) is not None:
                argv += [f"--{key}", str(getattr(args, key))]
        options, _ = resolve_options(build_parser().parse_args(argv))
        print(f"shardpiece demo: training on {', '.join(options['input'])} with {argv[1]}", flush=True)
        outcome["manifest"] = run(options, progress=lambda message: print(message, flush=True))
        return 0

    code = run_command("shardpiece demo", body)
    if code:
        return code
    manifest = outcome["manifest"]
    print(format_summary(manifest), flush=True)
    largest = max(manifest["models"], key=int)
    ok = show_round_trip(manifest["models"][largest]["path"], SAMPLE_LINES)
    print("\ndemo finished: every line round-tripped" if ok else "\ndemo finished: a line did NOT round-trip")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
