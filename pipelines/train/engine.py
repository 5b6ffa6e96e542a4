"""What an engine does for training: the few operations every algorithm's stages are written against, so no
algorithm knows which engine runs it.

=====================  ============================================================================================
operation              meaning
=====================  ============================================================================================
``read(direct, log)``  read the input once (the ``read`` stage's counts, the reader's name, the input format)
``count(counter, ..)`` every training document counted by ``counter`` (:data:`pipelines.train.tables.Counter`),
                       the tables reduced exactly (:func:`pipelines.train.tables.reduce_table`: merge, expand, cut
                       by ``keep``, set aside), the memory bound applied -> :class:`~pipelines.train.tables.Reduced`
``map_aside(r, f)``    ``f(tables, threads)`` over what a count set aside -> one result per part (summable)
``map_documents(f)``   ``f(batches, threads)`` over the training documents -> one result per part (summable)
``share(value)``       a value every part reads (``.value``; ``.unpersist()`` when done): a Spark broadcast
``estep_runner(t)``    where unigram's E-steps over a chunk table run (``None``: this process's threads)
``evaluation_sample``  the documents bytes per token is measured on
=====================  ============================================================================================

Engines: this process (:mod:`pipelines.inprocess.engine`: threads, no JVM, local files), Spark
(:mod:`pipelines.spark.train_engine`) and Apache Beam (:mod:`pipelines.beam.train_engine`). All call the same
counters, reduce and fits, so a corpus gives the same model bytes on any (``tests/pipelines/test_engines.py``).
:func:`choose_engine` decides which one a run gets.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Iterator

#: ``--master auto`` trains local inputs up to this many MiB in this process (``--in-process-max-mib``): the largest
#: slice of ``benchmarks/engines.py`` where it holds no more memory than Spark (faster at every slice; above it the
#: documents and the one table it holds outgrow Spark's spilling reduce: BENCHMARKS.md, engines.py)
IN_PROCESS_MAX_MIB = 256
#: what the ``read`` stage reports of :class:`pipelines.read.readers.ReadStats`
READ_COUNTS = ("files", "empty_files", "rows", "documents", "document_bytes", "null_rows", "empty_rows",
               "malformed_rows", "invalid_utf8_rows")


@dataclass
class Shared:
    """A value every part of a stage reads, held by this process (the in-process engine's ``share``)."""

    value: Any

    def unpersist(self) -> None:
        self.value = None


@dataclass(frozen=True)
class Choice:
    """The engine a run gets (``in-process``, ``spark`` or ``beam``) and why, as the summary and the manifest say it."""

    engine: str
    reason: str


def choose_engine(options: dict, local_bytes: Callable[[list[str]], int | None]) -> Choice:
    """``--engine beam`` runs on Apache Beam (:mod:`pipelines.beam`); else ``--master``: ``none`` runs in this
    process, a Spark master URL on Spark, ``auto`` (the default) in this process when every input is local and
    they hold at most ``in_process_max_mib`` MiB, and Spark's reader, partitioning or E-steps were not asked for.
    ``local_bytes(inputs)`` is the inputs' total size, ``None`` when one is not a local file the in-process reader
    opens.

    >>> choose_engine({"master": "auto", "input": ["a.txt"], "in_process_max_mib": 256}, lambda i: 2 << 20).engine
    'in-process'
    """
    if options.get("engine") == "beam":
        return Choice("beam", f"--engine beam, runner {options.get('runner') or 'DirectRunner'}")
    master = (options.get("master") or "auto").strip()
    if master.lower() == "none":
        return Choice("in-process", "--master none")
    if master.lower() != "auto":
        return Choice("spark", f"--master {master}")
    if options.get("partitions"):
        return Choice("spark", "--partitions needs Spark")
    if options.get("reader") == "spark":
        return Choice("spark", "--reader spark")
    if options.get("estep") == "spark":
        return Choice("spark", "--estep spark")
    size = local_bytes(list(options["input"]))
    if size is None:
        return Choice("spark", "an input is not a local file the in-process reader opens")
    limit = int(options.get("in_process_max_mib") or IN_PROCESS_MAX_MIB)
    if size > limit << 20:
        return Choice("spark", f"local input of {size / 2**20:,.1f} MiB, above --in-process-max-mib {limit}")
    return Choice("in-process", f"local input of {size / 2**20:,.1f} MiB, at most --in-process-max-mib {limit}")


def empty_corpus_error(inputs: list[str]) -> Exception:
    """The error for inputs whose every file is empty (0 bytes): nothing to train on (every engine's)."""
    from tokenizer.errors import InputError

    return InputError(f"the corpus has no text (every file of --input {' '.join(inputs)} is empty, 0 bytes): check "
                      "--input and --text-column")


def default_threads(options: dict) -> int:
    """Threads of the in-process engine: ``--threads``, else every core of this machine."""
    return max(1, int(options.get("threads") or os.cpu_count() or 1))


def slices(tables: Iterator[tuple], kind: str, entries: int) -> Iterator[tuple]:
    """Each table of ``tables`` cut into parts of at most ``entries`` entries (work for one thread at a time)."""
    from pipelines.train.tables import size, slice_rows

    for table in tables:
        for first in range(0, size(kind, table), entries):
            yield slice_rows(kind, table, first, min(first + entries, size(kind, table)))
