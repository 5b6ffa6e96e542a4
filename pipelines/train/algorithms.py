"""What each algorithm adds to the one training skeleton (:mod:`pipelines.train.skeleton`): its settings, how it
counts and how it fits the counts to one model per vocab size, on whichever engine runs it
(:mod:`pipelines.train.engine`). Everything else (options, engine, input, held-out split, work directory, writes,
evaluation, manifest) is the skeleton's, the same for all.

=========  ==========================================  =============================================================
algorithm  count (stage files)                         fit (stage files)
=========  ==========================================  =============================================================
bytepiece  byte n-grams, pruned (``ngrams``)           n-gram model, piece counts, pruning, EM (``ngram_model``,
                                                       ``candidates``, ``prune``, ``refine_em_SIZE``) -> ``models``
unigram    chunk table (``chunks``)                    seeds + EM + pruning per size, checkpointed after every
                                                       pruning round (``em_SIZE``) -> ``models``
bpe        chunk table (``chunks``)                    merges of the largest size (``merges``) -> ``models``
=========  ==========================================  =============================================================

Unigram and BPE count through one chunk-table monoid (:mod:`tokenizer.trainers.chunk_table`) with the engine's
``count``; every engine gives the same table, so the same model bytes. Several vocab sizes always come from one
count.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from pipelines.train.workdir import MODELS, StageCodec
from tokenizer.errors import InputError
from tokenizer.packed import PackedBytes, pack, unpack
from tokenizer.trainers import table_bound

NO_TEXT = "the corpus has no text (every document is empty): check --input and --text-column"


@dataclass
class Source:
    """What an algorithm's fit works with: the ``engine`` that read the input (:mod:`pipelines.train.engine`), the
    resolved options, the work directory and the run's stage log."""

    engine: Any
    options: dict
    work: Any  # pipelines.train.workdir.WorkDir
    log: Any  # pipelines.train.workdir.StageLog

    @property
    def holdout(self) -> float:
        return float(self.options["holdout_fraction"])

    @property
    def limit(self) -> tuple[int | None, int | None] | None:
        """The driver's memory bound: ``(table entries, key bytes)``, either None when unbounded (``None``: no
        bound; :func:`tokenizer.trainers.table_bound.limits`)."""
        bound = (int(self.options["max_table_entries"]) or None, int(self.options.get("max_table_bytes") or 0) or None)
        return None if bound == (None, None) else bound


@dataclass
class Trained:
    """An algorithm's result: ``models`` by vocab size, the corpus fingerprint and document count, facts for the
    manifest (``details``, ``model_details`` by size), and documents its count kept for the evaluation sample
    (``(held_out, training)``) and what reading found (``read_counts``: ``invalid_utf8_rows``) when it read the
    input itself."""

    models: dict
    corpus_fingerprint: str
    documents: int
    details: dict = field(default_factory=dict)
    bounds: dict = field(default_factory=dict)  # table name -> what the memory bound did
    model_details: dict = field(default_factory=dict)
    evaluation_documents: tuple | None = None
    read_counts: dict = field(default_factory=dict)  # what a count that read the files itself found (null, bad rows)


def _model_stage_counts(models: dict) -> dict:
    return {"models": len(models)}


class Algorithm:
    """What every algorithm provides (defaults here): ``settings(options)`` (validated; raises
    :class:`~tokenizer.errors.ConfigError`), their dict for the manifest and the work-directory key, a check of the
    read counts, and ``fit(source, settings, progress) ->`` :class:`Trained`. ``reads_files_in_tasks``: it counts
    the documents in one pass, so Spark's tasks may read local files themselves (``--reader auto``).
    ``short_vocabulary``: what to change when a model comes out with fewer pieces than asked (the summary says
    it)."""

    name = ""
    reads_files_in_tasks = True
    short_vocabulary = "train on more text"

    @staticmethod
    def settings_dict(settings) -> dict:
        return settings.to_dict()

    @staticmethod
    def check_read(read_stats, settings) -> None:
        """Raise :class:`InputError` when the read corpus cannot be trained with these settings."""

    @staticmethod
    def lossy_settings(settings) -> list[str]:
        """What in these settings keeps a model from giving back every byte it encodes (``[]``: nothing)."""
        return []


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
    def fit(source: Source, settings, progress: Callable[[str], None]) -> Trained:
        from pipelines.train.bytepiece import train_bytepiece

        result = train_bytepiece(source.engine, settings, progress=progress,
                                 provenance={"holdout_fraction": source.holdout} if source.holdout > 0 else None,
                                 workdir=source.work, limit=source.limit)
        source.log.reports.extend(result.stages)
        return Trained(result.models, result.fingerprint, result.documents, bounds=result.bounds)


# ---------------------------------------------------------------------------------------------------- stage files
def _encode_chunk_table(value) -> tuple[dict, dict]:
    arrays = {"counts": np.asarray(value.counts, np.int64)}
    for name, texts in (("chunks", value.chunks), ("held_out", value.held_out), ("training", value.training)):
        arrays[f"{name}_data"], arrays[f"{name}_offsets"] = pack(texts)
    return arrays, {"stats": value.stats, "bound": value.bound}


def _decode_chunk_table(arrays: dict, meta: dict):
    from tokenizer.trainers.chunk_table import ChunkTable

    texts = {name: unpack(arrays[f"{name}_data"], arrays[f"{name}_offsets"]) for name in ("held_out", "training")}
    return ChunkTable(PackedBytes(arrays["chunks_data"], arrays["chunks_offsets"]), arrays["counts"], meta["stats"],
                      texts["held_out"], texts["training"], meta.get("bound", {}))


def _decode_merges(arrays: dict, meta: dict):
    from tokenizer.trainers.bpe import Merges

    return Merges(arrays["left"], arrays["right"], arrays["counts"])


def _decode_em_state(arrays: dict, meta: dict):
    from tokenizer.trainers.unigram import EmState

    return EmState(unpack(arrays["data"], arrays["offsets"]), arrays["scores"], arrays["order"], meta["rounds"])


#: the ``chunks`` stage of unigram and BPE: a :class:`~tokenizer.trainers.chunk_table.ChunkTable`
CHUNK_TABLE = StageCodec("chunk_table", _encode_chunk_table, _decode_chunk_table)
#: BPE's ``merges`` stage: :class:`~tokenizer.trainers.bpe.Merges`
MERGES = StageCodec("merges", lambda value: ({"left": value.left, "right": value.right, "counts": value.counts}, {}),
                    _decode_merges)
#: unigram's ``em_SIZE`` checkpoints: an :class:`~tokenizer.trainers.unigram.EmState`
EM_STATE = StageCodec(
    "em_state", lambda value: ({**dict(zip(("data", "offsets"), pack(value.pieces, writable=True))),
                                "scores": value.scores, "order": value.order}, {"rounds": int(value.rounds)}),
    _decode_em_state)


# ---------------------------------------------------------------------------------------------------- chunk tables
def count_chunk_table(source: Source, counter, stage: str = "chunks") -> Any:
    """The ``chunks`` stage of unigram and BPE (or another chunk table's, named ``stage``: superword BPE's
    ``superword_chunks``): the chunk table of the engine's documents counted by ``counter``
    (:data:`pipelines.train.tables.Counter`), resumed from the work directory when a run before finished it. The
    ``chunks`` table keeps the first documents for the evaluation sample (a resumed run has them too)."""
    from pipelines.train.tables import chunk_table_of

    def compute():
        source.engine.label(stage)
        keep = int(source.options["eval_documents"]) if stage == "chunks" else 0
        return chunk_table_of(source.engine.count(counter, "bytes", limit=source.limit, keep_documents=keep))

    def counts(table) -> dict:
        return {"documents": int(table.stats.get("documents", 0)), "distinct_chunks": len(table.chunks),
                "chunks": int(table.counts.sum()), "chunk_bytes": table.chunk_bytes,
                **{k: v for k, v in table.stats.items() if k != "documents"},
                "dropped_by_bound": int(table.bound.get("dropped_entries", 0))}

    table = source.log.run(stage, compute, CHUNK_TABLE, counts)
    if not table.chunks:
        raise InputError(NO_TEXT)
    return table


def evaluation_of(table) -> tuple | None:
    return (table.held_out, table.training) if table.held_out or table.training else None


def read_counts_of(table) -> dict:
    """The read counts a chunk table's count found when it read the files itself (Spark's tasks: ``null_rows``,
    and ``invalid_utf8_rows`` of a character model); ``{}`` otherwise. ``read_counts_of(table)`` with stats
    ``{"documents": 4, "invalid_utf8_rows": 1}`` -> ``{"invalid_utf8_rows": 1}``."""
    return {k: int(table.stats[k]) for k in ("null_rows", "invalid_utf8_rows") if k in table.stats}


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
    def lossy_settings(settings: dict) -> list[str]:
        """SentencePiece's lossy choices among the settings (``--unigram-defaults sentencepiece`` makes them all).
        ``Unigram.lossy_settings({8000: UnigramSettings(byte_fallback=False)})[0]`` -> ``'no byte fallback: ...'``."""
        first = next(iter(settings.values()))
        if first.variant == "byte":
            return []
        reasons = []
        if not first.byte_fallback:
            reasons.append("no byte fallback: characters outside the vocabulary become <unk>")
        if first.remove_extra_whitespaces:
            reasons.append("runs of spaces are collapsed, leading and trailing ones dropped")
        if first.normalizer_name not in ("identity", ""):
            reasons.append(f"the {first.normalizer_name} normalizer changes the text")
        return reasons

    @staticmethod
    def settings_dict(settings: dict) -> dict:
        first = dict(next(iter(settings.values())).to_dict())
        first.pop("vocab_size")
        return {"vocab_sizes": sorted(settings), **first}

    @staticmethod
    def fit(source: Source, settings: dict, progress: Callable[[str], None]) -> Trained:
        from pipelines.train import unigram as pu
        from tokenizer.trainers import unigram as ug
        from tokenizer.trainers.bpe import bpe_table_fingerprint

        options, sizes = source.options, sorted(settings)
        first = settings[sizes[0]]  # the chunks do not depend on the vocab size

        table = count_chunk_table(source, pu.counter(first))
        threads = source.engine.driver_threads()
        modes = []

        def build_models() -> dict:
            runner, mode = source.engine.estep_runner(table, options["estep"])
            modes.append(mode)
            if runner is None:
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
                    checkpoints=source.work.checkpoints(f"em_{size}", EM_STATE))
                source.log.add(f"em_{size}", started, em_rounds=report.em_rounds,
                               pieces=models[size].vocab_size)
            return models

        models = source.log.run("models", build_models, MODELS, _model_stage_counts)
        return Trained(models, bpe_table_fingerprint(table.chunks, table.counts),
                       int(table.stats.get("documents", 0)),
                       details={"estep": modes[0] if modes else "resumed", "distinct_chunks": len(table.chunks),
                                "sentences": int(table.counts.sum()),
                                "skipped_sentences": int(table.stats.get("skipped_sentences", 0))},
                       bounds={"chunks": table.bound}, evaluation_documents=evaluation_of(table),
                       read_counts=read_counts_of(table))


# ---------------------------------------------------------------------------------------------------- bpe
class Bpe(Algorithm):
    name = "bpe"
    short_vocabulary = "merging stopped at a pair rarer than --min-count: lower --min-count, or train on more text"

    @staticmethod
    def settings(options: dict):
        from tokenizer.trainers.bpe import BpeSettings

        length = options.get("max_piece_chars", options.get("max_piece_bytes"))
        superword = {key: options[key] for key in ("superword_transition", "superword_pattern",
                                                    "superword_max_words") if options.get(key) is not None}
        return BpeSettings(vocab_sizes=tuple(int(v) for v in options["vocab_size"]),
                           pretokenizer=options["pretokenizer"], pattern=options["pattern"],
                           min_count=options.get("min_count"), max_piece_length=length,
                           special_tokens=tuple(options["special_tokens"]),
                           character_coverage=options.get("character_coverage", 0.9995), **superword).validate()

    @staticmethod
    def fit(source: Source, settings, progress: Callable[[str], None]) -> Trained:
        from pipelines.train.bpe import counter
        from tokenizer.trainers import bpe

        from tokenizer.trainers import superword as sw
        from tokenizer.trainers.superword_settings import transition_size

        progress(f"[chunks] pre-tokenizing ({settings.pretokenizer}) and counting chunks")
        table = count_chunk_table(source, counter(settings))
        fingerprint = bpe.bpe_table_fingerprint(table.chunks, table.counts)
        superword = settings.superword_transition is not None
        wanted = sw.stage_one_merges(settings) if superword else None
        merges = source.log.run("merges", lambda: bpe.learn_bpe(table.chunks, table.counts, settings, wanted),
                                MERGES, lambda value: {"merges": len(value.left)})
        provenance = {"chunk_table_fingerprint": fingerprint, "holdout_fraction": source.holdout}
        tables = {"chunks": table}
        if superword:  # stage 2: the coarse chunks, counted and reduced as the first, merges on from stage 1's
            progress(f"[superword_chunks] counting {settings.superword_pattern} chunks (merges cross spaces)")
            tables["superword_chunks"] = coarse = count_chunk_table(
                source, counter(sw.stage_two_settings(settings)), "superword_chunks")
            first = merges
            merges = source.log.run("superword_merges",
                                    lambda: sw.learn_superword(first, coarse.chunks, coarse.counts, settings),
                                    MERGES, lambda value: {"merges": len(value.left)})
            provenance["superword_chunk_table_fingerprint"] = bpe.bpe_table_fingerprint(coarse.chunks, coarse.counts)
        bounds = {name: value.bound for name, value in tables.items()}
        provenance.update(table_bound.provenance(bounds))
        models = source.log.run("models", lambda: bpe.build_models(merges, settings, provenance), MODELS,
                                _model_stage_counts)
        details = {"distinct_chunks": len(table.chunks), "chunks": int(table.counts.sum())}
        if superword:
            details.update(superword_transition=transition_size(settings), superword_chunks=len(coarse.chunks),
                           superword_chunk_bytes=coarse.chunk_bytes)
        return Trained(models, fingerprint, int(table.stats.get("documents", 0)), details=details,
                       bounds=bounds, evaluation_documents=evaluation_of(table), read_counts=read_counts_of(table))


ALGORITHMS = {"bytepiece": BytePiece, "unigram": Unigram, "bpe": Bpe}
