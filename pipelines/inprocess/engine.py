"""Training in this process: the engine of :mod:`pipelines.train.engine` with no JVM, for local corpora that fit
in memory (``--master auto`` picks it for inputs up to ``--in-process-max-mib``).

The documents are read once by pyarrow (:mod:`pipelines.inprocess.read`: the documents, held-out split and read
counts Spark's readers give) and kept as Arrow arrays. A count runs the algorithm's counter over all of them on
this process's threads (the counters cut the documents into ~2 MB shards and count ``threads`` shards at once),
then the same reduce a Spark task applies to one bucket (:func:`pipelines.train.tables.reduce_table`) over the one
table, and the same memory bound (:func:`pipelines.train.tables.bounded_table`). What a count sets aside stays
here for ``map_aside``. The model bytes equal Spark's (``tests/pipelines/test_engines.py``).

Example::

    engine = InProcessEngine({"input": ["corpus.txt"], "holdout_fraction": 0.001, ...}, "--master none")
    engine.read(direct=True, log=log)
    reduced = engine.count(counter, "bytes")
"""

from __future__ import annotations

import time
from typing import Any, Callable, Iterator

from pipelines.train.engine import READ_COUNTS, Shared, default_threads
from pipelines.train.tables import Counter, KeyGroups, Reduced, bounded_table, reduce_table


class InProcessEngine:
    """Training's engine on this process's threads (see the module docstring)."""

    name = "in-process"

    def __init__(self, options: dict, reason: str, progress: Callable[[str], None] = lambda message: None):
        self.options, self.reason = options, reason
        self.threads = default_threads(options)
        self.corpus = None

    def fingerprint(self, inputs: list[str], hash_cache: str) -> dict:
        from pipelines.manifest import input_fingerprint

        return input_fingerprint(None, inputs, hash_cache=hash_cache)

    def label(self, stage: str) -> None:
        """Stages need no label here (Spark names its jobs after them)."""

    def read(self, direct: bool, log, table=None) -> tuple[dict, str, str | None]:
        """Read every document into memory: ``(read counts, "pyarrow in this process", input format)``, bad rows
        as ``--on-bad-row`` says (:mod:`pipelines.train.bad_rows`); ``table``: a
        :class:`~pipelines.train.table_input.TableInput` to read instead of the input files. The counts are
        computed again on a resumed run (reading is what gives the documents)."""
        from pipelines.inprocess.read import read_local_corpus, read_table_corpus
        from pipelines.train.bad_rows import TrainBadRows

        options = self.options
        started = time.perf_counter()
        if table is not None:
            self.corpus = read_table_corpus(table, float(options["holdout_fraction"]), TrainBadRows.of(options))
            table.check_selected(self.corpus.stats.documents)
        else:
            self.corpus = read_local_corpus(options["input"], options.get("input_format"), options["text_column"],
                                            float(options["holdout_fraction"]), TrainBadRows.of(options))
        counts = self.corpus.stats.to_dict()
        log.add("read", started, **{k: counts[k] for k in READ_COUNTS}, held_out_documents=len(self.corpus.held_out))
        return counts, "pyarrow in this process", self.corpus.input_format

    def count(self, counter: Counter, kind: str, *, keep: Callable | None = None, groups: KeyGroups | None = None,
              limit: int | None = None, set_aside: bool = False, keep_documents: int = 0) -> Reduced:
        """See :mod:`pipelines.train.engine`; a set-aside table is kept in ``reduced.aside``."""
        table, stats = counter(self.corpus.batches(), self.threads)
        kept, aside, distinct, _ = reduce_table(kind, [table], keep, set_aside, groups)
        del table
        kept, bound = bounded_table(kind, kept, limit)
        reduced = Reduced(kept, {**stats, "distinct_keys": distinct}, bound, aside=aside)
        if keep_documents:
            reduced.held_out, reduced.training = self.evaluation_sample(keep_documents)
        return reduced

    def release(self, reduced: Reduced) -> None:
        reduced.aside = None

    def map_aside(self, reduced: Reduced, kind: str, function: Callable[[Iterator, int], Any]) -> list:
        return [function(iter([reduced.aside] if reduced.aside is not None else []), self.threads)]

    def map_documents(self, function: Callable[[Iterator, int], Any]) -> list:
        return [function(self.corpus.batches(), self.threads)]

    def share(self, value: Any) -> Shared:
        return Shared(value)

    def estep_runner(self, table, estep: str):
        """Unigram's E-steps run on this process's threads: ``(None, "driver")`` (``--estep spark`` chooses the
        Spark engine, :func:`pipelines.train.engine.choose_engine`)."""
        return None, "driver"

    def driver_threads(self) -> int:
        return self.threads

    def evaluation_sample(self, limit: int) -> tuple[list[bytes], list[bytes]]:
        """``(held-out, training)`` documents, at most ``limit`` each: the first held-out ones, or the first training
        ones when nothing is held out (in input order)."""
        if self.corpus is None:
            return [], []
        if self.corpus.held_out:
            return list(self.corpus.held_out[:limit]), []
        training: list[bytes] = []
        for array in self.corpus.training:
            if len(training) >= limit:
                break
            training.extend(array.slice(0, limit - len(training)).to_pylist())
        return [], training

    def describe(self) -> dict:
        from pipelines.manifest import versions

        return {"engine": self.name, "engine_reason": self.reason, "spark_version": None, "spark_master": "none",
                "default_parallelism": None, "threads": self.threads, "spark_log": None, "versions": versions(None)}

    def close(self) -> None:
        self.corpus = None
