"""Worst cases of the encoder: one long repetitive line of 1 MB and of 10 MB, for every model type, side by side
with the peer that serves the same model.

    .venv/bin/python benchmarks/encode_worst_case.py [--vocab-size 8000] [--repeats 3] [--peers]

Models are trained on the shipped sample corpus (``data/sample``, no download) with the single-node trainers:
SentencePiece-style unigram, BytePiece, SentencePiece-style BPE and byte-level BPE. Lines: runs of one character
(``a``), of a two-character pattern (``ab``), of one CJK character (``中``), of spaces, random bytes, an invalid
UTF-8 pattern, and ordinary text (the sample corpus's lines joined by spaces). For each model and line it prints
ms per MB at 1 MB and at 10 MB (best of ``--repeats`` each), the ratio ``time(10 MB) / (10 x time(1 MB))``
(1.0 = linear; the target is at most 1.5) and the memory one more 10 MB call adds to the process's peak, per input
byte (its list of ids, the id buffer and the work arrays it takes anew: a thread keeps arrays up to 64 MB). Each
model's lines run in a child process of their own. With ``--peers``, the same lines through sentencepiece (the
unigram and SentencePiece-style BPE models exported with ``shardpiece export --to sentencepiece``) and Hugging Face
tokenizers (the byte-level BPE model exported ``--to huggingface``), each in its own child process killed after
``--peer-timeout`` seconds (a peer that takes longer is marked so). Writes
``benchmarks/results/encode-worst-case.json``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

MB = 1 << 20
LINES = {
    "a run": lambda n: b"a" * n,
    "ab run": lambda n: b"ab" * (n // 2),
    "中 run": lambda n: "中".encode() * (n // 3),
    "spaces": lambda n: b" " * n,
    "random bytes": lambda n: random.Random(7).randbytes(n),
    "invalid UTF-8": lambda n: b"\xff\xfe\xc3" * (n // 3),
}


def language_lines(count: int | None = None) -> list[list[bytes]]:
    """The first ``count`` (all: ``None``) non-empty lines of each of the en, zh and ja samples."""
    found = []
    for name in ("en", "zh", "ja"):
        with gzip.open(os.path.join(common.REPO, "data", "sample", f"{name}.txt.gz"), "rb") as handle:
            found.append([line for line in handle.read().split(b"\n") if line][:count])
    return found


def sample_lines() -> list[bytes]:
    """Every non-empty line of the en, zh and ja samples, in that order."""
    return [line for lines in language_lines() for line in lines]


def ordinary(lines: list[bytes]):
    text = b" ".join(lines)
    return lambda n: (text * (n // len(text) + 1))[:n]


def train_models(work: str, vocab_size: int, lines: list[bytes]) -> dict[str, str]:
    """Paths of the four models (trained once, kept in ``work``)."""
    from tokenizer.trainers import bpe, bytepiece, unigram

    paths = {}
    makers = {
        "unigram": lambda: unigram.train_unigram_local(lines, unigram.UnigramSettings(vocab_size=vocab_size)),
        "bytepiece": lambda: bytepiece.train_bytepiece_local(
            lines, bytepiece.TrainSettings(vocab_sizes=(vocab_size,), min_count=4))[vocab_size],
        "bpe (sentencepiece)": lambda: bpe.train_bpe_local(
            lines, bpe.BpeSettings(vocab_sizes=(vocab_size,), pretokenizer="sentencepiece"))[vocab_size],
        "bpe (byte_level)": lambda: bpe.train_bpe_local(lines, bpe.BpeSettings(vocab_sizes=(vocab_size,)))[vocab_size],
    }
    os.makedirs(work, exist_ok=True)
    for name, make in makers.items():
        path = os.path.join(work, f"worst-{name.split()[0]}-{name.split()[-1].strip('()')}-{vocab_size}.model")
        if not os.path.exists(path):
            make().save(path)
        paths[name] = path
    return paths


def export_peers(paths: dict[str, str], work: str) -> dict[str, tuple[str, str]]:
    """``{model name: (peer, exported path)}``."""
    from jobs.export import main as export

    peers = {}
    for name, kind in (("unigram", "sentencepiece"), ("bpe (sentencepiece)", "sentencepiece"),
                       ("bpe (byte_level)", "huggingface")):
        out = paths[name] + (".sp.model" if kind == "sentencepiece" else ".hf/")
        if export(["export", "--model", paths[name], "--to", kind, out]) == 0:
            peers[name] = (kind, out if kind == "sentencepiece" else os.path.join(out, "tokenizer.json"))
    return peers


PEER_SCRIPT = """
import sys, time
kind, path, line, size, repeats = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
sys.path.insert(0, sys.argv[6])
import encode_worst_case as w
text = (w.LINES.get(line) or w.ordinary(w.sample_lines()))(size).decode("utf-8", "replace")
if kind == "sentencepiece":
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=path)
    run = lambda: sp.encode(text)
else:
    from tokenizers import Tokenizer
    tk = Tokenizer.from_file(path)
    run = lambda: tk.encode(text, add_special_tokens=False)
best = min((lambda t: (run(), time.perf_counter() - t)[1])(time.perf_counter()) for _ in range(repeats))
print(best)
"""


def peer_seconds(kind: str, path: str, line: str, size: int, repeats: int, timeout: float) -> float | None:
    """Best seconds of the peer on the line, in a child process; ``None`` past ``timeout``."""
    try:
        done = subprocess.run([sys.executable, "-c", PEER_SCRIPT, kind, path, line, str(size), str(repeats),
                               os.path.dirname(os.path.abspath(__file__))], capture_output=True, text=True,
                              timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return None
    return float(done.stdout.strip().splitlines()[-1])


def peak_growth(call) -> float:
    """Bytes by which ``call()`` raised this process's peak resident memory above its resident memory before it
    (the ids, their list and the work arrays the call took fresh; nan where /proc cannot tell)."""
    from tokenizer.memory import resident_peak_bytes

    resident_peak_bytes(reset=True)
    before = resident_peak_bytes()
    call()
    after = resident_peak_bytes()
    return float("nan") if before is None or after is None else float(after - before)


def table_rows(results: list[dict], lines: list[str], peer_timeout: float) -> list[list[str]]:
    """Per model, a row per measure (ms/MB at 1 and 10 MB, their ratio, memory per byte, and the peer's ms/MB when
    it ran), a column per line; a refused line's cells say so."""
    rows = []
    for model in dict.fromkeys(entry["model"] for entry in results):
        by_line = {entry["line"]: entry for entry in results if entry["model"] == model}
        peer = next((entry["peer"] for entry in by_line.values() if "peer" in entry), None)

        def cells(measure):
            return [measure(by_line[line]) if by_line[line]["error"] is None else "refused" for line in lines]

        rows.append([model, "ms/MB at 1 / 10 MB", *cells(lambda e: f"{1000 * e['seconds'][1]:.1f} / "
                                                                  f"{1000 * e['seconds'][10] / 10:.1f}")])
        rows.append(["", "10 MB / (10 x 1 MB)", *cells(lambda e: f"{e['ratio']:.2f}")])
        rows.append(["", "memory / byte at 10 MB", *cells(lambda e: f"{e['peak_bytes_per_byte']:.1f}")])
        if peer is not None:
            rows.append(["", f"{peer} ms/MB at 1 / 10 MB", *cells(lambda e: " / ".join(
                f"{1000 * s / size:.0f}" if s else f">{peer_timeout:.0f}s"
                for s, size in ((e["peer_seconds"][1], 1), (e["peer_seconds"][10], 10))))])
    return rows


def measure_model(path: str, repeats: int) -> list[dict]:
    """Every line through the model at ``path`` (in this process): per line the best seconds at 1 and 10 MB, their
    ratio and the memory per byte of one more 10 MB call, or the error that refused it."""
    from tokenizer import Tokenizer

    tok = Tokenizer.load(path)
    tok.encode("warm up the kernels")
    entries = []
    for line, make in {**LINES, "ordinary text": ordinary(sample_lines())}.items():
        texts = {size: make(size * MB) for size in (1, 10)}
        seconds, error = {}, None
        for size, text in texts.items():
            try:
                seconds[size], _ = common.best_time(lambda: tok.encode(text), repeats)
            except Exception as exc:  # noqa: BLE001 - a refused line is a result too
                error = f"{type(exc).__name__}: {exc}"[:120]
                break
        entry = {"line": line, "seconds": seconds, "error": error}
        if error is None:
            entry["ratio"] = seconds[10] / (10 * seconds[1])
            entry["peak_bytes_per_byte"] = peak_growth(lambda: tok.encode(texts[10])) / (10 * MB)
        entries.append(entry)
    return entries


def measured_in_child(path: str, repeats: int) -> list[dict]:
    """:func:`measure_model` in a child process of its own (as each peer runs), so that no model's runs leave the
    process in a state (its heap, its kept arrays) that the next model's runs pay for."""
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--measure-model", path, "--repeats",
                           str(repeats)], capture_output=True, text=True, check=True)
    entries = json.loads(done.stdout.strip().splitlines()[-1])
    for entry in entries:
        entry["seconds"] = {int(size): value for size, value in entry["seconds"].items()}
    return entries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--work", default=common.DEFAULT_WORK)
    parser.add_argument("--peers", action="store_true", help="also time sentencepiece and tokenizers")
    parser.add_argument("--peer-timeout", type=float, default=120.0)
    parser.add_argument("--measure-model", help=argparse.SUPPRESS)  # (the child of measured_in_child)
    args = parser.parse_args()
    if args.measure_model:
        print(json.dumps(measure_model(args.measure_model, args.repeats)))
        return

    lines = sample_lines()
    makers = {**LINES, "ordinary text": ordinary(lines)}
    paths = train_models(args.work, args.vocab_size, lines)
    peers = export_peers(paths, args.work) if args.peers else {}
    results = []
    for name, path in paths.items():
        for entry in measured_in_child(path, args.repeats):
            entry = {"model": name, **entry}
            peer = peers.get(name)
            if peer is not None and entry["error"] is None:
                entry["peer"] = peer[0]
                entry["peer_seconds"] = {
                    size: peer_seconds(peer[0], peer[1], entry["line"], size * MB, args.repeats, args.peer_timeout)
                    for size in (1, 10)}
            results.append(entry)
            print(entry, flush=True)
    print(common.markdown_table(["model", "measure", *makers], table_rows(results, list(makers), args.peer_timeout)))
    path = common.write_results("encode-worst-case", {
        "command": " ".join([os.path.relpath(sys.argv[0], common.REPO)] + sys.argv[1:]),
        "vocab_size": args.vocab_size, "repeats": args.repeats, "load_average": common.load_average(),
        "results": results})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
