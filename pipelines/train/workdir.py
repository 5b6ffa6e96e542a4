"""Stage outputs of a training run, persisted so that a killed or repeated run resumes instead of starting over.

A :class:`WorkDir` is one directory per run key, ``ROOT/KEY/``, where the key is a hash of everything that decides
the result (the training settings, how the input is read, and the input's content fingerprint)::

    ROOT/3f9c0e1a2b4d5e6f/
        key.json                 what the key was computed from (for people; never read back)
        read.npz                 the read counts (Spark's reader)
      bytepiece:
        ngrams.npz               the reduced n-gram table (pruned to min_count, as the driver holds it)
        ngram_model.npz          the n-gram language model
        candidates.npz           the pruning candidates' counts (the rare pieces re-segmented onto them)
        prune.npz                the pruned vocabulary of every requested size
        refine_em_SIZE.npz       the EM-refined pieces of one size (only with refine_em_rounds)
      unigram and bpe:
        chunks.npz               the reduced chunk table (and the documents kept for evaluation)
        em_SIZE.npz              unigram: the EM loop's state after its latest pruning round (a checkpoint)
        merges.npz               bpe: the merges of the largest size
      every algorithm:
        models.npz               the model files' bytes

A stage's file appears, whole, only after the stage finished: it is written under a temporary name, flushed to
disk, then renamed (the rename is the completion marker). A rerun with the same key loads every finished stage and
computes only the rest; since each stage is a deterministic function of the previous ones, the model bytes are the
same as those of an uninterrupted run. A stage file that cannot be read (a disk error, a half-copied directory) is
computed again, never trusted. Files are ``.npz`` archives without pickles (``allow_pickle=False``): plain arrays
plus one JSON header.

Testing aid: ``SHARDPIECE_FAIL_AFTER_STAGE=NAME[,NAME...]`` makes :meth:`WorkDir.run` raise :class:`InjectedFault`
right after stage NAME was computed and saved (a checkpointed stage: after its first save), which is what a job
killed at that point leaves behind.

Example::

    work = WorkDir("/tmp/work", {"settings": {...}, "input": "sha256:..."})
    table, resumed = work.run("ngrams", lambda: reduce_ngrams(engine, settings), NGRAM_TABLE)
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from tokenizer.files import write_atomic
from tokenizer.memory import release_freed_memory, resident_peak_bytes
from tokenizer.packed import pack, unpack

FAULT_ENV = "SHARDPIECE_FAIL_AFTER_STAGE"
_FORMAT = 1


class InjectedFault(RuntimeError):
    """Raised by :meth:`WorkDir.run` after a stage named in ``$SHARDPIECE_FAIL_AFTER_STAGE`` (tests only)."""


def run_key(material: dict) -> str:
    """16 hex digits of SHA-256 over the canonical JSON of ``material``: ``run_key({"a": 1}) == run_key({"a": 1})``."""
    blob = json.dumps(material, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


# ------------------------------------------------------------------------------------------------ codecs
@dataclass(frozen=True)
class StageCodec:
    """How a stage's value is stored: ``encode(value) -> (arrays, meta)`` (named numpy arrays and a JSON-able
    dict) and ``decode(arrays, meta) -> value``. Each algorithm declares the codecs of its own stages beside them
    (:mod:`pipelines.train.bytepiece`, :mod:`pipelines.train.algorithms`); the ones every algorithm uses are here.
    ``name`` is written in the stage file's header and checked when it is loaded."""

    name: str
    encode: Callable[[Any], tuple[dict[str, np.ndarray], dict]]
    decode: Callable[[dict[str, np.ndarray], dict], Any]


def packed_arrays(pieces, counts, prefix: str = "") -> dict[str, np.ndarray]:
    """``{PREFIXdata, PREFIXoffsets, PREFIXcounts}``: byte strings packed (:func:`tokenizer.packed.pack`) and
    their int64 counts. ``packed_arrays([b"ab"], [3])["offsets"].tolist()`` -> ``[0, 2]``."""
    data, offsets = pack(pieces, writable=True)
    return {f"{prefix}data": data, f"{prefix}offsets": offsets, f"{prefix}counts": np.asarray(counts, np.int64)}


def _decode_models(arrays: dict, meta: dict) -> dict:
    from tokenizer.model import Model

    return {size: Model.from_bytes(arrays[str(size)].tobytes(), source=f"stage file, model {size}")
            for size in meta["sizes"]}


#: a JSON-able value (read counts)
JSON = StageCodec("json", lambda value: ({}, {"value": value}), lambda arrays, meta: meta["value"])
#: ``(pieces list[bytes], counts int64)``
PIECES = StageCodec("pieces", lambda value: (packed_arrays(*value), {}),
                    lambda arrays, meta: (unpack(arrays["data"], arrays["offsets"]), arrays["counts"]))
#: ``{vocab size: Model}``, each as its file's bytes
MODELS = StageCodec(
    "models", lambda value: ({str(size): np.frombuffer(model.to_bytes(), dtype=np.uint8)
                              for size, model in value.items()}, {"sizes": sorted(int(s) for s in value)}),
    _decode_models)


# ------------------------------------------------------------------------------------------------ the work dir
class WorkDir:
    """The stage files of one run key under ``root`` (see the module docstring).

    ``resume=False`` ignores finished stages (each is computed and saved again). ``progress`` receives a line for
    every stage loaded instead of computed, and for every unreadable stage file.
    """

    def __init__(self, root: str, material: dict, *, resume: bool = True,
                 progress: Callable[[str], None] = lambda message: None):
        self.root = os.path.abspath(root)
        self.material = {"format": _FORMAT, **material}
        self.key = run_key(self.material)
        self.path = os.path.join(self.root, self.key)
        self.resume = resume
        self.progress = progress
        self.resumed: list[str] = []
        self.computed: list[str] = []
        key_file = os.path.join(self.path, "key.json")
        if not os.path.exists(key_file):
            write_atomic(key_file, (json.dumps(self.material, indent=2, sort_keys=True, default=str) + "\n")
                              .encode(), what="work directory key")

    def stage_file(self, name: str) -> str:
        return os.path.join(self.path, f"{name}.npz")

    def finished(self) -> list[str]:
        """Names of the stages whose files exist, sorted."""
        return sorted(f[:-4] for f in os.listdir(self.path) if f.endswith(".npz") and not f.startswith("."))

    def load(self, name: str, codec: StageCodec) -> Any:
        """The saved value of a finished stage; raises ``FileNotFoundError`` or ``ValueError`` when unusable."""
        with np.load(self.stage_file(name), allow_pickle=False) as archive:
            arrays = {k: archive[k] for k in archive.files}
        header = json.loads(arrays.pop("__header__").tobytes().decode())
        if header.get("kind") != codec.name or header.get("key") != self.key:
            raise ValueError(f"stage file holds {header.get('kind')!r} of key {header.get('key')!r}")
        return codec.decode(arrays, header["meta"])

    def save(self, name: str, codec: StageCodec, value: Any) -> None:
        arrays, meta = codec.encode(value)
        header = json.dumps({"kind": codec.name, "key": self.key, "stage": name, "meta": meta}, sort_keys=True)
        arrays = {k: np.ascontiguousarray(v) for k, v in arrays.items()}
        write_atomic(self.stage_file(name), lambda handle: np.savez(
            handle, __header__=np.frombuffer(header.encode(), dtype=np.uint8), **arrays), what=f"stage file ({name})")

    def finished_value(self, name: str, codec: StageCodec) -> tuple[Any, bool]:
        """``(value, True)`` of a stage finished before (when resuming), else ``(None, False)``; a damaged stage
        file is reported and ignored, never trusted."""
        if self.resume and os.path.exists(self.stage_file(name)):
            try:
                value = self.load(name, codec)
            except Exception as exc:
                self.progress(f"[resume] stage file {self.stage_file(name)} is unreadable ({exc!r}); recomputing")
            else:
                self.resumed.append(name)
                self.progress(f"[resume] {name}: loaded from {self.stage_file(name)}")
                return value, True
        return None, False

    def finish(self, name: str, codec: StageCodec, value: Any) -> None:
        """Save a computed stage (or a newer checkpoint of it); then the fault-injection hook (module docstring)."""
        self.save(name, codec, value)
        if name not in self.computed:
            self.computed.append(name)
        faults = [s.strip() for s in os.environ.get(FAULT_ENV, "").split(",") if s.strip()]
        if name in faults:
            raise InjectedFault(f"injected fault after stage {name!r} ({FAULT_ENV}={os.environ[FAULT_ENV]})")

    def run(self, name: str, compute: Callable[[], Any], codec: StageCodec) -> tuple[Any, bool]:
        """``(value, resumed)``: the stage's saved value when it finished before, else ``compute()`` saved."""
        value, resumed = self.finished_value(name, codec)
        if resumed:
            return value, True
        value = compute()
        self.finish(name, codec, value)
        return value, False

    def checkpoints(self, name: str, codec: StageCodec) -> "StageCheckpoints":
        """A stage saved again each time it moves on (the unigram EM loop after each pruning round)."""
        return StageCheckpoints(self, name, codec)

    def describe(self) -> dict:
        return {"path": self.path, "key": self.key, "resumed_stages": list(self.resumed),
                "computed_stages": list(self.computed)}


class StageCheckpoints:
    """``load()`` / ``save(value)`` of one checkpointed stage (see :meth:`WorkDir.checkpoints`): ``load`` gives the
    last saved value once (``None`` when there is none or when not resuming), ``save`` replaces it atomically."""

    def __init__(self, work: WorkDir, name: str, codec: StageCodec):
        self.work, self.name, self.codec = work, name, codec
        self._loaded = False

    def load(self) -> Any:
        if self._loaded:
            return self._last
        self._loaded = True
        self._last, _ = self.work.finished_value(self.name, self.codec)
        return self._last

    def save(self, value: Any) -> None:
        self._loaded, self._last = True, value
        self.work.finish(self.name, self.codec, value)


class NoWorkDir:
    """Stands in for :class:`WorkDir` when nothing is persisted: every stage is computed."""

    resumed: list[str] = []

    def run(self, name: str, compute: Callable[[], Any], codec: StageCodec) -> tuple[Any, bool]:
        return compute(), False


@dataclass
class StageReport:
    """One stage of a training run in the manifest: its seconds, counts, whether it was resumed, and the driver
    process's peak resident memory during it (MiB; ``None`` where the system does not say)."""

    name: str
    seconds: float
    counts: dict = field(default_factory=dict)
    resumed: bool = False  # loaded from the work directory instead of computed
    driver_peak_mib: float | None = None
    ended: float = field(default=0.0, compare=False)  # ``time.perf_counter()`` when it ended (not in the manifest)

    def to_dict(self) -> dict:
        return {"name": self.name, "seconds": round(self.seconds, 3), "counts": self.counts, "resumed": self.resumed,
                "driver_peak_mib": self.driver_peak_mib}


class StageLog:
    """The stages of a run as they finish: one :class:`StageReport` each and one progress line
    (``[name] 1.2 s: documents 12, chunks 40``); :meth:`run` also persists the stage in a work directory."""

    def __init__(self, work: "WorkDir | NoWorkDir | None" = None,
                 progress: Callable[[str], None] = lambda message: None):
        self.work = work if work is not None else NoWorkDir()
        self.progress = progress
        self.reports: list[StageReport] = []

    def add(self, name: str, started: float, resumed: bool = False, **counts) -> None:
        """Record stage ``name`` that began at ``started`` (``time.perf_counter()``) and ends now. Its driver peak is
        the process's peak resident memory since the stage before it was recorded (or since the process started),
        or that of a stage that ran inside it if higher. What the stage freed goes back to the system
        (:func:`tokenizer.memory.release_freed_memory`) before the next stage's peak starts."""
        peak = resident_peak_bytes()
        ended = time.perf_counter()
        if peak is not None:  # stages that ran inside this one (ended after it began) had their peaks reset
            peak = max([peak / 2**20] + [r.driver_peak_mib or 0.0 for r in self.reports if r.ended > started])
        report = StageReport(name, ended - started, counts, resumed, None if peak is None else round(peak, 1), ended)
        release_freed_memory()
        resident_peak_bytes(reset=True)
        self.reports.append(report)
        shown = ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in counts.items())
        self.progress(f"[{name}] {report.seconds:.1f} s" + (" (resumed)" if resumed else "")
                      + (f": {shown}" if shown else ""))

    def run(self, name: str, compute: Callable[[], Any], codec: StageCodec,
            counts: Callable[[Any], dict] = lambda value: {}) -> Any:
        """The stage's value: loaded from the work directory, or computed and saved; recorded with ``counts``."""
        started = time.perf_counter()
        value, resumed = self.work.run(name, compute, codec)
        self.add(name, started, resumed, **counts(value))
        return value
