"""What one small call costs: ``encode`` of one line and ``encode_batch`` of a few lines, on models of 8,000,
32,000 and 256,000 pieces, side by side with sentencepiece on the same models.

    .venv/bin/python benchmarks/encode_call_cost.py [--repeats 7]

A SentencePiece-style unigram model is trained on the shipped sample corpus (``data/sample``, no download; kept in
``--work``), then grown to 32,000 and 256,000 pieces by pieces of random letters scored below every other piece
(they seldom win, so the lines' ids hardly change: only the vocabulary grows); each model is exported to
sentencepiece and the two tools' ids are compared on every line. Lines: 64 of the sample corpus (en, zh and ja in
turn), each cut to its first 100 characters. Calls, one thread: ``encode`` of a line; ``encode_batch`` of a list
of 1, 16 (at most ``FEW_TEXTS``: encoded text by text) and 64 lines (the batch path) and of a pyarrow array of 64;
sentencepiece's ``encode`` of a line and of lists of 1, 16 and 64 (``num_threads=1``: its default starts threads
for a list, which costs it more). Microseconds per call, best of ``--repeats`` rounds (each enough calls for about
50 ms), the systems interleaved. Writes ``benchmarks/results/encode-call-cost.json``.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from encode_worst_case import language_lines, sample_lines  # noqa: E402

SIZES = (8000, 32000, 256000)
CALLS = ("encode", "list 1", "list 16", "list 64", "arrow 64")


def grown(model, size: int, seed: int = 7):
    """``model`` with pieces of 8 to 12 random letters added (as NORMAL pieces, each scored below every other
    piece) up to ``size`` pieces."""
    import numpy as np

    from tokenizer.model import Model, PieceType

    rng = random.Random(seed)
    taken, added = set(model.pieces), []
    while model.vocab_size + len(added) < size:
        piece = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(8, 12))).encode()
        if piece not in taken:
            taken.add(piece)
            added.append(piece)
    floor = float(model.scores.min()) - 10.0
    return Model(model.pieces + added, np.concatenate([model.scores, floor - np.arange(len(added)) * 1e-3]),
                 np.concatenate([model.types, np.full(len(added), PieceType.NORMAL, np.int8)]),
                 algorithm=model.algorithm, normalizer=model.normalizer, charsmap=model.charsmap,
                 pretokenizer=model.pretokenizer, unk_id=model.unk_id, bos_id=model.bos_id, eos_id=model.eos_id,
                 pad_id=model.pad_id, byte_fallback=model.byte_fallback, provenance=model.provenance)


def models(work: str, corpus: list[bytes]) -> dict[int, tuple[str, str]]:
    """``{pieces: (shardpiece model path, sentencepiece model path)}``, made once and kept in ``work``."""
    from tokenizer.interop.sentencepiece_export import save_sentencepiece
    from tokenizer.trainers import unigram

    os.makedirs(work, exist_ok=True)
    paths, base = {}, None
    for size in SIZES:
        path = os.path.join(work, f"call-cost-unigram-{size}.model")
        if not os.path.exists(path) or not os.path.exists(path + ".sp.model"):
            if base is None:
                base = unigram.train_unigram_local(corpus, unigram.UnigramSettings(vocab_size=SIZES[0]))
            model = base if size == SIZES[0] else grown(base, size)
            save_sentencepiece(model, path + ".sp.model")
            model.save(path)
        paths[size] = (path, path + ".sp.model")
    return paths


def calls(tok, sp, pa, lines: list[str]) -> dict[str, dict]:
    """``{system: {call: (function doing one round, calls per round)}}``: a round goes over all the lines."""
    array = pa.array(lines)
    sixteens = [lines[k:k + 16] for k in range(0, len(lines), 16)]
    ours = {
        "encode": (lambda: [tok.encode(line) for line in lines], len(lines)),
        "list 1": (lambda: [tok.encode_batch([line], num_threads=1) for line in lines], len(lines)),
        "list 16": (lambda: [tok.encode_batch(chunk, num_threads=1) for chunk in sixteens], len(sixteens)),
        "list 64": (lambda: tok.encode_batch(lines, num_threads=1), 1),
        "arrow 64": (lambda: tok.encode_batch(array, num_threads=1), 1),
    }
    peer = {
        "encode": (lambda: [sp.encode(line) for line in lines], len(lines)),
        "list 1": (lambda: [sp.encode([line], num_threads=1) for line in lines], len(lines)),
        "list 16": (lambda: [sp.encode(chunk, num_threads=1) for chunk in sixteens], len(sixteens)),
        "list 64": (lambda: sp.encode(lines, num_threads=1), 1),
    }
    return {"shardpiece": ours, "sentencepiece": peer}


def microseconds_per_call(systems: dict[str, dict], repeats: int) -> dict[str, dict[str, float]]:
    """Best microseconds per call of each system's calls, timed in turn (a, b, c, a, b, c, ...)."""
    rounds = {}
    for name, system in systems.items():
        for call, (run, _) in system.items():
            run()
            started = time.perf_counter()
            run()
            rounds[name, call] = max(1, int(0.05 / max(time.perf_counter() - started, 1e-6)))
    best = {(name, call): float("inf") for name, call in rounds}
    for _ in range(repeats):
        for (name, call), count in rounds.items():
            run, per_round = systems[name][call]
            started = time.perf_counter()
            for _ in range(count):
                run()
            best[name, call] = min(best[name, call], (time.perf_counter() - started) / (count * per_round))
    return {name: {call: 1e6 * best[name, call] for call in system} for name, system in systems.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--work", default=common.DEFAULT_WORK)
    args = parser.parse_args()

    import pyarrow as pa
    import sentencepiece as spm

    from tokenizer import Tokenizer

    corpus = sample_lines()
    lines = [text.decode("utf-8", "replace")[:100] for triple in zip(*language_lines(22)) for text in triple][:64]
    rows, results = [], []
    for size, (path, sp_path) in models(args.work, corpus).items():
        tok, sp = Tokenizer.load(path), spm.SentencePieceProcessor(model_file=sp_path)
        differing = sum(tok.encode(line) != sp.encode(line) for line in lines)
        measured = microseconds_per_call(calls(tok, sp, pa, lines), args.repeats)
        results.append({"pieces": size, "microseconds_per_call": measured, "differing_lines": differing})
        ours, peer = measured["shardpiece"], measured["sentencepiece"]
        shared = [call for call in CALLS if call in peer]
        rows.append([f"{size:,}", " / ".join(f"{ours[c]:.2f}" for c in CALLS),
                     " / ".join(f"{peer[c]:.2f}" for c in shared),
                     " / ".join(f"{peer[c] / ours[c]:.2f}" for c in shared), differing])
        print(rows[-1], flush=True)
    print(f"us per call, one thread, {len(lines)} lines of at most 100 characters; {common.load_text()}")
    print(common.markdown_table(["pieces", f"shardpiece: {' / '.join(CALLS)}",
                                 f"sentencepiece: {' / '.join(CALLS[:4])}", "sentencepiece / shardpiece",
                                 "differing lines"], rows))
    path = common.write_results("encode-call-cost", {
        "repeats": args.repeats, "lines": len(lines), "load_average": common.load_average(), "results": results})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
