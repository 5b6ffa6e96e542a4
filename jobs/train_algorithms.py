"""What each algorithm adds to the one ``shardpiece train`` job (:mod:`jobs.train`): its settings, how it counts
and how it fits the counts to one model per vocab size. Everything else (options, session, input, held-out split,
work directory, writes, evaluation, manifest) is the job's, the same for all.

=========  ==========================================  =============================================================
algorithm  count (stage files)                         fit (stage files)
=========  ==========================================  =============================================================
bytepiece  byte n-grams, pruned (``ngrams``)           n-gram model, piece counts, pruning, EM (``ngram_model``,
                                                       ``pieces``, ``prune``, ``refine_em_SIZE``) -> ``models``
unigram    chunk table (``chunks``)                    seeds + EM + pruning per size, checkpointed after every
                                                       pruning round (``em_SIZE``) -> ``models``
bpe        chunk table (``chunks``)                    merges of the largest size (``merges``) -> ``models``
=========  ==========================================  =============================================================

Unigram and BPE count through one chunk-table monoid (:mod:`tokenizer.trainers.chunk_table`), reduced by Spark
(:mod:`pipelines.train.reduce`), by tasks that read local files themselves (:mod:`pipelines.train.direct_count`) or, for
BPE's ``--master none``, in this process; every way gives the same table, so the same model bytes. Several vocab
sizes always come from one count.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from tokenizer.errors import InputError
from tokenizer.trainers import table_bound

NO_TEXT = "the corpus has no text (every document is empty): check --input and --text-column"


@dataclass
class TrainInput:
    """What the job read, for an algorithm to count: Spark DataFrames of training and held-out documents
    (``text: binary``), or local file ``units`` the tasks read themselves, or ``local`` packed documents
    (``((data, offsets), (held-out data, offsets))``, no Spark)."""

    spark: Any
    options: dict
    work: Any  # pipelines.train.workdir.WorkDir
    log: Any  # pipelines.train.workdir.StageLog
    documents: Any = None
    held_out: Any = None
    units: list | None = None
    local: tuple | None = None

    @property
    def holdout(self) -> float:
        return float(self.options["holdout_fraction"])

    @property
    def limit(self) -> int | None:
        """The driver's memory bound in table entries (``None``: no bound)."""
        return int(self.options["max_table_entries"]) or None


@dataclass
class Trained:
    """An algorithm's result: ``models`` by vocab size, the corpus fingerprint and document count, facts for the
    manifest (``details``, ``model_details`` by size), and documents its count kept for the evaluation sample
    (``(held_out, training)``) when it read the input itself."""

    models: dict
    corpus_fingerprint: str
    documents: int
    details: dict = field(default_factory=dict)
    bounds: dict = field(default_factory=dict)  # table name -> what the memory bound did
    model_details: dict = field(default_factory=dict)
    evaluation_documents: tuple | None = None


def _model_stage_counts(models: dict) -> dict:
    return {"models": len(models)}


class Algorithm:
    """What every algorithm provides (defaults here): ``settings(options)`` (validated; raises
    :class:`~tokenizer.errors.ConfigError`), their dict for the manifest and the work-directory key, the Spark
    options of its session, a check of the read counts, and ``fit(source, settings, progress) ->`` :class:`Trained`.
    ``reads_files_in_tasks``: its count can read local files itself (``--reader auto``). ``short_vocabulary``: what
    to change when a model comes out with fewer pieces than asked (the summary says it)."""

    name = ""
    reads_files_in_tasks = True
    short_vocabulary = "train on more text"

    @staticmethod
    def settings_dict(settings) -> dict:
        return settings.to_dict()

    @staticmethod
    def session_options(master: str | None) -> dict:
        from pipelines.train.unigram import counting_session_options

        return counting_session_options(master)

    @staticmethod
    def check_read(read_stats, settings) -> None:
        """Raise :class:`InputError` when the read corpus cannot be trained with these settings."""


# ---------------------------------------------------------------------------------------------------- bytepiece
class BytePiece(Algorithm):
    name = "bytepiece"
    reads_files_in_tasks = False
    short_vocabulary = ("pieces rarer than --min-count and pieces the model never emits are dropped, as in "
                        "bytepiece: lower --min-count, or train on more text")

    @staticmethod
    def settings(options: dict):
        from tokenizer.trainers.bytepiece import TrainSettings

        return TrainSettings(
            vocab_sizes=tuple(int(v) for v in options["vocab_size"]), order=options["order"],
            min_count=options["min_count"], max_piece_length=options["max_piece_bytes"],
            normalization=options["normalization"], isolate_digits=options["isolate_digits"],
            ensure_unicode=options["ensure_unicode"], special_tokens=tuple(options["special_tokens"]),
            refine_em_rounds=options["refine_em_rounds"], refine_em_mode=options["refine_em_mode"]).validate()

    @staticmethod
    def check_read(read_stats, settings) -> None:
        if settings.normalization == "nfc" and read_stats.invalid_utf8_rows:
            raise InputError(
                f"{read_stats.invalid_utf8_rows} documents are not valid UTF-8, which NFC normalization cannot "
                "take: fix the input encoding, or train with --normalization identity (it keeps any bytes)")

    @staticmethod
    def fit(source: TrainInput, settings, progress: Callable[[str], None]) -> Trained:
        from pipelines.train.bytepiece import train_bytepiece

        result = train_bytepiece(source.documents, settings, progress=progress,
                                 provenance={"holdout_fraction": source.holdout} if source.holdout > 0 else None,
                                 workdir=source.work, threads=source.options.get("threads"), limit=source.limit)
        source.log.reports.extend(result.stages)
        return Trained(result.models, result.fingerprint, result.documents, bounds=result.bounds)


# ---------------------------------------------------------------------------------------------------- chunk tables
def count_chunk_table(source: TrainInput, counter, count_local: Callable | None) -> Any:
    """The ``chunks`` stage of unigram and BPE: the chunk table of whichever input the job read (see
    :class:`TrainInput`), counted by ``counter`` (:data:`pipelines.train.reduce.Counter`) in Spark tasks, or by
    ``count_local`` in this process (``--master none``); resumed from the work directory when a run before finished
    it. The table keeps the first documents for the evaluation sample, whichever way it was counted."""
    from pipelines.train import direct_count
    from pipelines.train import reduce

    limit, keep = source.limit, int(source.options["eval_documents"])

    def compute():
        if source.units is not None:
            return direct_count.count_chunks_direct(source.spark, source.units, counter, source.holdout,
                                                    keep_documents=keep, limit=limit,
                                                    text_column=source.options["text_column"])
        if source.local is not None:
            return count_local()
        from jobs.training import evaluation_sample

        table = reduce.count_chunk_table(source.documents, counter, limit=limit)
        texts, kind = evaluation_sample(source.documents, source.held_out, keep)  # kept with the table: a
        if kind.startswith("held-out"):                                            # resumed run has them too
            table.held_out = texts
        else:
            table.training = texts
        return table

    def counts(table) -> dict:
        return {"documents": int(table.stats.get("documents", 0)), "distinct_chunks": len(table.chunks),
                "chunks": int(table.counts.sum()), "chunk_bytes": table.chunk_bytes,
                **{k: v for k, v in table.stats.items() if k != "documents"},
                "dropped_by_bound": int(table.bound.get("dropped_entries", 0))}

    table = source.log.run("chunks", compute, "chunk_table", counts)
    if not table.chunks:
        raise InputError(NO_TEXT)
    return table


def evaluation_of(table) -> tuple | None:
    return (table.held_out, table.training) if table.held_out or table.training else None


def local_table(source: TrainInput, count: Callable) -> Any:
    """The chunk table of ``--master none``'s packed documents, with the first ones kept for evaluation, cut to
    the memory bound as the Spark reduce cuts it."""
    from jobs.training import first_documents
    from pipelines.train import reduce
    from tokenizer.trainers import chunk_table as T

    import numpy as np

    (data, offsets), (held_data, held_offsets) = source.local
    keep = int(source.options["eval_documents"])
    stats = {"documents": int(np.count_nonzero(np.diff(offsets)))}
    table, bound = reduce.bounded_table("bytes", count(data, offsets), source.limit)
    return T.finish(table, stats, first_documents(held_data, held_offsets, keep), first_documents(data, offsets, keep),
                    bound)


# ---------------------------------------------------------------------------------------------------- unigram
class Unigram(Algorithm):
    name = "unigram"
    short_vocabulary = "the corpus has fewer candidate pieces: train on more text (or raise --max-piece-chars)"

    @staticmethod
    def settings(options: dict) -> dict:
        """``{vocab size: UnigramSettings}`` (SentencePiece's settings are one size each)."""
        from tokenizer.trainers.unigram import UnigramSettings

        extra: dict[str, Any] = {}
        if options.get("normalizer_model"):
            from tokenizer.interop.sentencepiece import load_sentencepiece

            reference = load_sentencepiece(options["normalizer_model"])
            spec = reference.pretokenizer
            extra = {"charsmap": reference.charsmap,
                     "normalizer_name": reference.provenance.get("sentencepiece_normalizer", "custom"),
                     "add_dummy_prefix": spec.get("add_dummy_prefix", True),
                     "remove_extra_whitespaces": spec.get("remove_extra_whitespaces", True)}
        length = options.get("max_piece_chars", options.get("max_piece_bytes"))
        common = dict(
            variant=options["unigram_variant"], character_coverage=options["character_coverage"],
            seed_sentencepiece_size=options["seed_sentencepiece_size"],
            shrinking_factor=options["shrinking_factor"], num_sub_iterations=options["num_sub_iterations"],
            max_sentencepiece_length=length, max_sentence_length=options["max_sentence_length"],
            byte_fallback=options["byte_fallback"], split_digits=options["isolate_digits"],
            split_by_whitespace=options["split_by_whitespace"], split_by_number=options["split_by_number"],
            split_by_unicode_script=options["split_by_unicode_script"],
            treat_whitespace_as_suffix=options["treat_whitespace_as_suffix"],
            allow_whitespace_only_pieces=options["allow_whitespace_only_pieces"],
            add_dummy_prefix=options["add_dummy_prefix"],
            remove_extra_whitespaces=options["remove_extra_whitespaces"], pad_id=options["pad_id"],
            user_defined_symbols=tuple(options["user_defined_symbols"]),
            control_symbols=tuple(options["special_tokens"]))
        common.update(extra)
        return {int(size): UnigramSettings(vocab_size=int(size), **common).validate()
                for size in options["vocab_size"]}

    @staticmethod
    def settings_dict(settings: dict) -> dict:
        first = dict(next(iter(settings.values())).to_dict())
        first.pop("vocab_size")
        return {"vocab_sizes": sorted(settings), **first}

    @staticmethod
    def fit(source: TrainInput, settings: dict, progress: Callable[[str], None]) -> Trained:
        from pipelines.train import unigram as pu
        from tokenizer.trainers import unigram as ug
        from tokenizer.trainers.bpe import bpe_table_fingerprint

        options, sizes = source.options, sorted(settings)
        first = settings[sizes[0]]  # the chunks do not depend on the vocab size
        frames = []

        table = count_chunk_table(source, pu.counter(first), None)
        mode = pu.estep_mode(options["estep"], table)
        threads = options.get("threads") or (pu.driver_threads(source.spark.sparkContext.master))

        def build_models() -> dict:
            runner = None
            if mode == "spark":
                frames.append(pu.table_frame(source.spark, table, options.get("partitions")))
                runner = pu.spark_runner(frames[0])
            else:
                progress(f"[em] E-steps on the driver with {threads} thread{'s' if threads != 1 else ''}")
            models = {}
            for size in sizes:
                started = time.perf_counter()
                report = ug.TrainReport()
                models[size] = ug.train_from_chunks(
                    table.chunks, table.counts, settings[size], runner=runner,
                    provenance={"vocab_size_requested": size, "holdout_fraction": source.holdout,
                                **table_bound.provenance({"chunks": table.bound})},
                    progress=progress, report=report, threads=threads,
                    checkpoints=source.work.checkpoints(f"em_{size}", "em_state"))
                source.log.add(f"em_{size}", started, em_rounds=report.em_rounds,
                               pieces=models[size].vocab_size)
            return models

        try:
            models = source.log.run("models", build_models, "models", _model_stage_counts)
        finally:
            for frame in frames:
                frame.unpersist()
        return Trained(models, bpe_table_fingerprint(table.chunks, table.counts),
                       int(table.stats.get("documents", 0)),
                       details={"estep": mode, "distinct_chunks": len(table.chunks),
                                "sentences": int(table.counts.sum()),
                                "skipped_sentences": int(table.stats.get("skipped_sentences", 0))},
                       bounds={"chunks": table.bound}, evaluation_documents=evaluation_of(table))


# ---------------------------------------------------------------------------------------------------- bpe
class Bpe(Algorithm):
    name = "bpe"
    short_vocabulary = "merging stopped at a pair rarer than --min-count: lower --min-count, or train on more text"

    @staticmethod
    def settings(options: dict):
        from tokenizer.trainers.bpe import BpeSettings

        length = options.get("max_piece_chars", options.get("max_piece_bytes"))
        return BpeSettings(vocab_sizes=tuple(int(v) for v in options["vocab_size"]),
                           pretokenizer=options["pretokenizer"], pattern=options["pattern"],
                           min_count=options.get("min_count"), max_piece_length=length,
                           special_tokens=tuple(options["special_tokens"]),
                           character_coverage=options.get("character_coverage", 0.9995)).validate()

    @staticmethod
    def fit(source: TrainInput, settings, progress: Callable[[str], None]) -> Trained:
        import os

        from tokenizer.trainers import bpe

        options = source.options
        progress(f"[chunks] pre-tokenizing ({settings.pretokenizer}) and counting chunks")

        def count_local():
            threads = options.get("threads") or os.cpu_count() or 1
            return local_table(source, lambda data, offsets: bpe.count_chunks_threaded(data, offsets, settings,
                                                                                         threads))

        from pipelines.train.bpe import counter

        table = count_chunk_table(source, counter(settings), count_local)
        fingerprint = bpe.bpe_table_fingerprint(table.chunks, table.counts)
        merges = source.log.run("merges", lambda: bpe.learn_bpe(table.chunks, table.counts, settings), "merges",
                                lambda value: {"merges": len(value.left)})
        provenance = {"chunk_table_fingerprint": fingerprint, "holdout_fraction": source.holdout,
                      **table_bound.provenance({"chunks": table.bound})}
        models = source.log.run("models", lambda: bpe.build_models(merges, settings, provenance), "models",
                                _model_stage_counts)
        return Trained(models, fingerprint, int(table.stats.get("documents", 0)),
                       details={"distinct_chunks": len(table.chunks), "chunks": int(table.counts.sum())},
                       bounds={"chunks": table.bound}, evaluation_documents=evaluation_of(table))


ALGORITHMS = {"bytepiece": BytePiece, "unigram": Unigram, "bpe": Bpe}
