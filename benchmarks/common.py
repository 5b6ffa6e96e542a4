"""Helpers shared by the benchmark scripts: corpus paths, timing, tables, JSON (measuring processes:
:mod:`benchmarks.processes`).

Nothing here is imported by the package; the scripts run from the repository root or from ``benchmarks/``::

    .venv/bin/python benchmarks/encode.py --corpus zh
    .venv/bin/python benchmarks/train.py --corpus zh --scaling

Corpora: ``--corpora DIR`` holds ``{en,zh,ja}.train.txt``, ``.test.txt`` and ``.test400k.txt`` (one document per
line, UTF-8), as built by the shared ``corpora/build.sh``; the default is ``$SHARDPIECE_CORPORA`` or
``/work/corpora``.
"""

from __future__ import annotations

import os
import sys


import json  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from typing import Any, Callable, Sequence  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from benchmarks.processes import Measured, load_average, run_measured  # noqa: E402
from tokenizer.files import write_atomic  # noqa: E402  (benchmark results are written as the project's files are)

DEFAULT_CORPORA = os.environ.get("SHARDPIECE_CORPORA", "/work/corpora")
DEFAULT_WORK = os.environ.get("SHARDPIECE_BENCH_WORK", "/tmp/shardpiece-bench")
RESULTS_DIR = os.path.join(REPO, "benchmarks", "results")
CORPORA = ("en", "zh", "ja")
# zh.train and ja.train whole, en.train's first 14 MB (the peer figures used 13 MB of en): BytePiece's own trainer
# needs minutes per 10 MB, so both scripts cap the training text at this many bytes, at a line boundary.
DEFAULT_TRAIN_BYTES = 14_000_000
BYTEPIECE_SETTINGS = {"order": 6, "min_count": 8, "vocab_size": 32000, "normalization": "nfc"}
PYTHON = sys.executable


# ---------------------------------------------------------------------------------------------------------- corpora
def corpus_path(corpora: str, name: str, split: str) -> str:
    """``corpora/NAME.SPLIT.txt`` (split: train, test or test400k); exits with a hint when it is missing."""
    path = os.path.join(corpora, f"{name}.{split}.txt")
    if not os.path.isfile(path):
        sys.exit(f"missing corpus file {path}: build the corpora (corpora/build.sh) or pass --corpora DIR")
    return path


def lines_within(lines: list[str], max_bytes: int | None) -> list[str]:
    """The first ``lines`` whose UTF-8 bytes, a newline each, fit in ``max_bytes`` (all of them for ``None`` or 0):
    ``lines_within(["ab", "c"], 3)`` -> ``["ab"]``."""
    if not max_bytes:
        return lines
    kept, size = [], 0
    for line in lines:
        size += len(line.encode("utf-8")) + 1
        if size > max_bytes:
            break
        kept.append(line)
    return kept


def read_lines(path: str) -> list[str]:
    """The file's lines without their ``\\n`` (a final newline does not add an empty line)."""
    with open(path, "rb") as handle:
        data = handle.read()
    if data.endswith(b"\n"):
        data = data[:-1]
    return data.decode("utf-8").split("\n") if data else []


def capped_train_file(corpora: str, name: str, work: str, max_bytes: int | None) -> tuple[str, int]:
    """``(path, bytes)`` of NAME.train.txt, or of its first ``max_bytes`` bytes cut at a line end (written once
    into ``work``) when the file is larger."""
    source = corpus_path(corpora, name, "train")
    size = os.path.getsize(source)
    if not max_bytes or size <= max_bytes:
        return source, size
    with open(source, "rb") as handle:
        head = handle.read(max_bytes)
    head = head[:head.rfind(b"\n") + 1]
    path = os.path.join(work, f"{name}.train.first{len(head)}.txt")
    if not os.path.isfile(path) or os.path.getsize(path) != len(head):
        os.makedirs(work, exist_ok=True)
        write_atomic(path, head)
    return path, len(head)


#: SentencePiece's lossless settings (bytes in = bytes out): the tokenize benchmarks' model.
LOSSLESS_SENTENCEPIECE = dict(normalization_rule_name="identity", byte_fallback=True, remove_extra_whitespaces=False,
                              add_dummy_prefix=False, allow_whitespace_only_pieces=True)


def lossless_sentencepiece_model(args) -> str:
    """Path of a SentencePiece unigram model with :data:`LOSSLESS_SENTENCEPIECE` settings, ``args.vocab_size``
    pieces, trained (once, kept in ``args.work``) on the first ``args.sp_train_bytes`` of ``args.corpus``'s
    train split."""
    import sentencepiece as spm

    train_path, train_bytes = capped_train_file(args.corpora, args.corpus, args.work, args.sp_train_bytes)
    prefix = os.path.join(args.work, f"sp-unigram-{args.corpus}-{train_bytes}b-identity-{args.vocab_size}")
    if not os.path.isfile(prefix + ".model"):
        os.makedirs(args.work, exist_ok=True)
        tmp = f"{prefix}.tmp{os.getpid()}"
        spm.SentencePieceTrainer.train(input=train_path, model_prefix=tmp, model_type="unigram",
                                       vocab_size=args.vocab_size, num_threads=2, input_sentence_size=1_000_000,
                                       shuffle_input_sentence=True, minloglevel=2, **LOSSLESS_SENTENCEPIECE)
        os.replace(tmp + ".model", prefix + ".model")
        os.replace(tmp + ".vocab", prefix + ".vocab")
    return prefix + ".model"




# ---------------------------------------------------------------------------------------------------------- timing
def best_time(function: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """``(best seconds, last result)`` over ``repeats`` calls."""
    best, result = float("inf"), None
    for _ in range(repeats):
        started = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - started)
    return best, result


def interleaved_best(systems: dict[str, Callable[[], Any]], repeats: int, warm_up: bool = False,
                     clock: Callable[[], float] = time.perf_counter) -> dict[str, float]:
    """Best seconds of each system, timing them in turn (a, b, c, a, b, c, ...) so that load changes on a shared
    machine hit all of them alike. ``clock``: wall time, or ``time.process_time`` (CPU seconds of this process:
    for one-thread systems on a loaded machine, where other processes' turns on the cores would count as theirs).

    Each call starts from the same state of the garbage collector (a full collection, not timed: otherwise the
    objects that the systems before it left set off collections inside it, of a cost that depends on the order),
    and its timing ends with a collection of the youngest generation while its result is still alive: the
    collection that a result of new Python containers (lists of ids) sets off in a program that keeps it. A system
    that builds its lists with the collector running pays it during the call; one that pauses it would otherwise
    leave it unpaid when its result is dropped at once.

    ``warm_up``: each timed call follows an untimed call of the same system, made after the full collection (a
    collection between them would walk every object of the process and evict what that call left in the caches),
    so every system is timed in its steady state, its tables in the caches; the untimed call's result is freed at
    once, so each repeat's timed call starts from the same collector state. Without, a system's caches hold what the
    system before it (and the collection) left: a system that follows one of its own kind (the same model) runs
    warmer, the first of a group runs cold, and the order of the systems decides which."""
    import gc

    best = {name: float("inf") for name in systems}
    for _ in range(repeats):
        for name, function in systems.items():
            gc.collect()
            if warm_up:
                function()
            started = clock()
            result = function()
            gc.collect(0)
            best[name] = min(best[name], clock() - started)
            del result
    return best


def load_text() -> str:
    load = load_average()
    return f"load {load['load1']:.2f} {load['load5']:.2f} {load['load15']:.2f} on {os.cpu_count()} cores"


# ---------------------------------------------------------------------------------------------------------- output
def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub markdown table; floats are printed with 2 decimals (3 below 1)."""

    def cell(value: Any) -> str:
        if isinstance(value, float):
            if value != value:
                return "—"
            return f"{value:.3f}" if abs(value) < 1 else f"{value:.2f}"
        return str(value)

    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def git_revision() -> dict[str, Any]:
    """``{"git_commit": short hash, "git_dirty_files": n}`` of the checkout the benchmark runs from (``{}`` without
    git): which code a result measured."""
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True,
                                check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return {}
    return {"git_commit": commit, "git_dirty_files": len(dirty.splitlines())}


def machine_info() -> dict[str, Any]:
    import numba
    import numpy

    info: dict[str, Any] = {
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "numba": numba.__version__,
        "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    try:
        import psutil

        info["memory_gib"] = round(psutil.virtual_memory().total / 2**30, 1)
    except ImportError:
        pass
    info.update(git_revision())
    for module in ("sentencepiece", "pyspark"):
        try:
            info[module] = __import__(module).__version__
        except (ImportError, AttributeError):
            pass
    try:
        from importlib.metadata import version

        info["bytepiece"] = version("bytepiece")
    except Exception:  # noqa: BLE001 - informational only
        pass
    return info


def results_name(script: str) -> str:
    """The results file stem of a benchmark script: its file name without ``.py``, ``_`` as ``-``
    (``benchmarks/tokenize_job.py`` -> ``tokenize-job``, written to ``benchmarks/results/tokenize-job.json``)."""
    return os.path.splitext(os.path.basename(script))[0].replace("_", "-")


def command_line(argv: Sequence[str] | None = None) -> str:
    """The running script's command line, the script's path relative to the repository."""
    argv = list(sys.argv if argv is None else argv)
    script = os.path.relpath(os.path.abspath(argv[0]), REPO) if argv and argv[0].endswith(".py") else argv[0]
    return " ".join([script, *argv[1:]])


def run_key(argv: Sequence[str] | None = None, drop: Sequence[str] = ("--work",)) -> str:
    """A key naming a run by its arguments: the command-line arguments (``sys.argv[1:]`` by default) without the
    options in ``drop`` and their values (where a run keeps its scratch files, not what it measures);
    ``"defaults"`` when nothing is left."""
    args = list(sys.argv[1:] if argv is None else argv)
    kept: list[str] = []
    skipping = False
    for arg in args:
        option = arg.split("=", 1)[0]
        if arg.startswith("--"):
            skipping = option in drop
            if skipping:
                continue
        elif skipping:
            continue
        kept.append(arg)
    return " ".join(kept) or "defaults"


def write_results(name: str, payload: dict[str, Any], results_dir: str = RESULTS_DIR, *,
                  key: str | None = None) -> str:
    """Write one run's ``payload`` (plus ``machine`` info and, unless the payload has one, the ``command``) to
    ``results_dir/NAME.json``, the benchmark's one results file; returns the path.

    Without ``key`` the run is the whole file (``machine`` at its top). With ``key`` (a run per corpus or variant:
    :func:`run_key`, or a corpus name) the file is ``{"runs": {KEY: run, ...}}``: the run replaces that key's
    entry and keeps the others, read and written under an exclusive lock on ``results_dir`` and replaced
    atomically, so runs of the same benchmark finishing together both land. A file in the other form is replaced
    (git keeps it)."""
    import fcntl

    os.makedirs(results_dir, exist_ok=True)
    path = os.path.join(results_dir, f"{name}.json")
    run = {"machine": machine_info(), **payload}
    run.setdefault("command", command_line())
    lock = os.open(results_dir, os.O_RDONLY)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if key is None:
            body: dict[str, Any] = run
        else:
            body = {}
            if os.path.isfile(path):
                with open(path, encoding="utf-8") as handle:
                    body = json.load(handle)
                if not isinstance(body, dict) or "machine" in body or not isinstance(body.get("runs"), dict):
                    print(f"{path} holds no keyed runs: replacing it", file=sys.stderr)
                    body = {}
            runs = body.setdefault("runs", {})
            runs[key] = run
            body["runs"] = dict(sorted(runs.items()))
        write_atomic(path, (json.dumps(body, indent=2, ensure_ascii=False) + "\n").encode())
    finally:
        os.close(lock)  # releases the lock
    return path


# ---------------------------------------------------------------------------------------------------------- bytepiece
BYTEPIECE_TRAIN_SCRIPT = r"""
import json, sys, time
from bytepiece import Trainer
path, out, order, min_count, vocab, workers = sys.argv[1:7]
with open(path, "rb") as handle:
    data = handle.read()
lines = [line for line in data.decode("utf-8").split("\n") if line]
trainer = Trainer(order=int(order), max_vocab_size=int(vocab), min_count=int(min_count))
trainer.train(lines, workers=int(workers), batch_size=1000)   # a list: BytePiece reads its input twice
trainer.save(out + ".tmp")
import os
os.replace(out + ".tmp", out)
"""


def bytepiece_model_path(work: str, name: str, train_bytes: int, vocab_size: int) -> str:
    s = BYTEPIECE_SETTINGS
    return os.path.join(work, f"bytepiece-{name}-{train_bytes}b-o{s['order']}-m{s['min_count']}-v{vocab_size}.json")


def bytepiece_command(train_path: str, out: str, vocab_size: int, workers: int = 2) -> tuple[list[str], dict]:
    """The subprocess (command, extra environment) that trains BytePiece (:data:`BYTEPIECE_SETTINGS`,
    ``vocab_size``; NFC is built in) on ``train_path``'s non-empty lines with ``workers`` processes, writing its JSON
    to ``out``."""
    s = BYTEPIECE_SETTINGS
    return ([PYTHON, "-c", BYTEPIECE_TRAIN_SCRIPT, train_path, out, str(s["order"]), str(s["min_count"]),
             str(vocab_size), str(workers)], {"TQDM_DISABLE": "1"})


def train_bytepiece_measured(train_path: str, out: str, workers: int, vocab_size: int,
                             log_path: str | None = None) -> Measured:
    """:func:`bytepiece_command`, measured; raises when it fails."""
    command, env = bytepiece_command(train_path, out, vocab_size, workers)
    measured = run_measured(command, log_path=log_path, env=env)
    if measured.returncode != 0:
        raise RuntimeError(f"bytepiece training failed ({measured.returncode}):\n{measured.output_tail}")
    return measured


def ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")
