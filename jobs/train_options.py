"""Every option of ``shardpiece train``, once: its config key, flag, type, default per algorithm and help.

One registry (:data:`OPTIONS`) makes the command line (:func:`build_parser`, grouped by algorithm), the config
schema (:data:`SCHEMA`), the defaults and the check that an option is taken by the chosen algorithm
(:func:`resolve_options`). Precedence, lowest first: defaults < ``--config FILE`` < ``--set KEY=VALUE`` < flags.

One name per idea and one unit per name: piece lengths are ``max_piece_bytes`` (BytePiece, byte-level BPE, the
byte unigram variant) or ``max_piece_chars`` (SentencePiece-style unigram and BPE), and giving the one the model
does not count in is an error naming the other. SentencePiece's spellings are accepted aliases
(``--split-digits``, ``--control-symbols``, ``--max-sentencepiece-length``); the old ``--max-piece-length``
still works with a deprecation notice.

    >>> options, notices = resolve_options(build_parser().parse_args(
    ...     ["--algorithm", "bpe", "--input", "c.txt", "--vocab-size", "300", "--output", "m.model"]))
    >>> options["max_piece_bytes"], options["special_tokens"], "order" in options
    (32, ['<pad>', '<s>', '</s>'], False)
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any, Callable

from jobs import config as C
from jobs.table_options import INPUT_FORMAT_HELP, INPUT_FORMATS, TABLE_OPTIONS
from tokenizer.bad_rows import BAD_ROW_POLICIES
from tokenizer.errors import ConfigError
from tokenizer.trainers.limits import BYTE_LEVEL_MAX_PIECE_BYTES
from tokenizer.trainers.limits import MIN_TABLE_BYTES
from tokenizer.trainers.limits import MIN_TABLE_ENTRIES as MIN_LIMIT

ALGORITHMS = ("bytepiece", "unigram", "bpe")
ALL = frozenset(ALGORITHMS)
DEFAULT_SPECIAL_TOKENS = ["<pad>", "<s>", "</s>"]


def piece_length_key(options: dict[str, Any]) -> str:
    """The piece-length option the chosen model counts in: ``max_piece_chars`` for SentencePiece-style unigram
    and BPE, ``max_piece_bytes`` otherwise. ``piece_length_key({"algorithm": "bytepiece"})`` -> ``'max_piece_bytes'``."""
    algorithm = options.get("algorithm", "bytepiece")
    if algorithm == "bpe" and options.get("pretokenizer") == "sentencepiece":
        return "max_piece_chars"
    if algorithm == "unigram" and options.get("unigram_variant", "sentencepiece") == "sentencepiece":
        return "max_piece_chars"
    return "max_piece_bytes"


def _only_in_unit(key: str) -> Callable[[dict], str | None]:
    other = {"max_piece_bytes": "max_piece_chars", "max_piece_chars": "max_piece_bytes"}[key]

    def check(options: dict) -> str | None:
        if piece_length_key(options) == key:
            return None
        unit = "characters" if other == "max_piece_chars" else "bytes"
        return (f"--algorithm {options['algorithm']} with these settings counts piece lengths in {unit}: use "
                f"--{other.replace('_', '-')} ({other})")
    return check


def _bpe_sentencepiece_only(options: dict) -> str | None:
    if options["algorithm"] == "bpe" and options.get("pretokenizer") != "sentencepiece":
        return "character_coverage is taken by unigram and by bpe with --pretokenizer sentencepiece only"
    return None


@dataclass(frozen=True)
class Option:
    """One option. ``default``: a value, or ``{algorithm: value}``; ``flags``: its command-line spellings (the
    first is the canonical one, the rest accepted aliases); ``action``: argparse's (``store``, ``store_true``,
    ``store_false``); ``applies``: a further condition on the other options (returns why not, or ``None``)."""

    key: str
    check: Callable[[Any], bool]
    expected: str
    help: str
    group: str
    algorithms: frozenset = ALL
    default: Any = None
    flags: tuple[str, ...] | None = None  # None: --key-with-dashes; (): config only
    action: str = "store"
    nargs: str | None = None
    type: Callable | None = None
    choices: tuple | None = None
    metavar: str | None = None
    applies: Callable[[dict], str | None] | None = None
    aliases: tuple[str, ...] = field(default=())  # config keys accepted for this one (SentencePiece's spellings)

    def default_for(self, algorithm: str) -> Any:
        if isinstance(self.default, dict):
            return self.default.get(algorithm)
        return self.default

    def option_strings(self) -> tuple[str, ...]:
        return ("--" + self.key.replace("_", "-"),) if self.flags is None else self.flags


def _o(key, check, expected, help_, group, **kw) -> Option:
    return Option(key, check, expected, help_, group, **kw)


_int, _num, _str, _bool = C.is_int, C.is_number, C.is_str, C.is_bool
UG, BP, BPE = frozenset({"unigram"}), frozenset({"bytepiece"}), frozenset({"bpe"})
OPTIONS: tuple[Option, ...] = (
    # ------------------------------------------------------------------ what to train
    _o("algorithm", _str, "a string (bytepiece, unigram or bpe)", "training algorithm (default bytepiece)", "train",
       default="bytepiece", choices=ALGORITHMS),
    _o("input", C.is_str_or_list, "a path or a list of paths", "files, globs or directories (any Spark filesystem "
       "URI, or with --engine beam any Beam FileSystems scheme; relative paths in a config file are relative to "
       "it)", "train", nargs="+", metavar="PATH"),
    _o("vocab_size", C.is_int_or_list, "an integer or a list of integers", "vocabulary size(s), special and byte "
       "pieces included; several sizes come from one count", "train", nargs="+", type=int, metavar="N"),
    _o("output", _str, "a path", "model file (one size) or directory (several sizes)", "train", metavar="MODEL"),
    # ------------------------------------------------------------------ input
    _o("input_format", _str, "a string (text, jsonl, parquet, delta or iceberg)", INPUT_FORMAT_HELP, "input",
       choices=INPUT_FORMATS),
    *(_o(t.key, t.check, t.expected, t.help, "input", type=t.type, metavar=t.metavar, flags=None if t.flag else ())
      for t in TABLE_OPTIONS),
    _o("text_column", _str, "a string", "JSONL field / Parquet column of the text (default text)", "input",
       default="text", metavar="NAME"),
    _o("holdout_fraction", _num, "a number between 0 and 0.5", "share of documents held out of training to "
       "measure bytes/token (default 0.001; 0: measure on training documents)", "input", default=0.001,
       type=float, metavar="F"),
    _o("eval_documents", _int, "an integer", "documents encoded to measure bytes/token (default 2000)", "input",
       default=2000, type=int, metavar="N"),
    _o("on_bad_row", _str, "a string (error, skip or keep)", "what a bad row does: error (default) stops naming "
       "its file and line; skip drops it; keep trains on it (a malformed JSON line as an empty document, invalid "
       "UTF-8 as U+FFFD). Bad rows: JSON lines that are not objects (every algorithm), and documents that are not "
       "valid UTF-8 for the character models (unigram, bpe --pretokenizer sentencepiece); byte-level models keep "
       "any bytes. Rows without text are skipped and counted under every policy; the summary and the manifest "
       "count every kind", "input", default="error", choices=BAD_ROW_POLICIES),
    _o("reader", _str, "a string (auto or spark)", "auto: local text and Parquet files on a local master are read "
       "by pyarrow in the tasks (unigram, bpe; same model bytes); spark: always Spark's reader (and Spark under "
       "--master auto)", "input", default="auto", choices=("auto", "spark")),
    # ------------------------------------------------------------------ how it runs
    _o("master", _str, "auto, none or a Spark master URL string", "auto (default): local inputs up to "
       "--in-process-max-mib train in this process, anything else on Spark (local[*]); none: always in this "
       "process; a Spark master URL (local[2], spark://...): always Spark. Same model bytes either way", "run",
       metavar="URL", default="auto"),
    _o("in_process_max_mib", _int, "an integer (MiB)", "--master auto trains local inputs up to this many MiB in "
       "this process, without Spark (default 256; the documents are held in memory)", "run", type=int,
       metavar="MIB", default=256),
    _o("partitions", _int, "an integer", "repartition the documents into N partitions", "run", type=int,
       metavar="N"),
    _o("driver_memory", _str, "a string such as 4g", "Spark driver memory (default 512m on a local master, else "
       "4g; or $SHARDPIECE_DRIVER_MEMORY)", "run", metavar="SIZE"),
    _o("threads", _int, "an integer", "threads per process: counting in each task (bytepiece; bpe with --master "
       "none), driver E-steps (unigram); default the cores; never changes the model", "run", type=int,
       metavar="N"),
    _o("work_dir", _str, "a directory path (stage outputs for resuming)", "where finished stages are kept for "
       "resuming (default .shardpiece-work beside --output)", "run", metavar="DIR"),
    _o("resume", _bool, "true or false", "recompute every stage even if the work directory holds it", "run",
       default=True, flags=("--no-resume",), action="store_false"),
    _o("max_table_entries", _int, "an integer (0: no bound)", "the driver's memory bound: at most N entries of any "
       "count table (n-grams, pieces, chunks) reach the driver, the most frequent, ties by bytes; the summary and "
       "the manifest say what was dropped (default 10000000; 0: no bound)", "run", default=10_000_000, type=int,
       metavar="N"),
    _o("max_table_bytes", _int, "an integer (0: no bound)", "the driver's memory bound in bytes: the kept entries "
       "of any count table hold at most N bytes of keys (a chunk's or piece's bytes, 8 per n-gram), the most "
       "frequent, ties by bytes, with --max-table-entries; reported as it is (default 0: no bound)", "run",
       default=0, type=int, metavar="N"),
    _o("spark", C.is_spark_conf, "a mapping of Spark configuration keys to values", "", "run", flags=()),
    _o("engine", _str, "a string (auto or beam)", "auto (default): this process or Spark, as --master says; beam: "
       "Apache Beam pipelines on --runner (pip install 'shardpiece[beam]'; docs/beam.md). Same model bytes", "run",
       default="auto", choices=("auto", "beam")),
    _o("runner", _str, "a Beam runner name string", "the Beam runner of --engine beam (default DirectRunner: "
       "2 worker processes here; DataflowRunner, FlinkRunner, PortableRunner, ...)", "run", metavar="NAME"),
    _o("beam_option", C.is_str_list, "a list of KEY=VALUE strings", "Beam pipeline options of --engine beam, "
       "passed through (e.g. --beam-option project=P region=europe-west1 temp_location=gs://B/tmp)", "run",
       nargs="+", metavar="KEY=VALUE"),
    _o("beam", C.is_spark_conf, "a mapping of Beam pipeline options to values", "", "run", flags=()),
    # ------------------------------------------------------------------ model options of several algorithms
    _o("special_tokens", C.is_str_list, "a list of strings", "control tokens (unigram: SentencePiece's control "
       "symbols, beside its <unk>, <s>, </s>)", "model", nargs="*", metavar="TOKEN",
       default={"bytepiece": DEFAULT_SPECIAL_TOKENS, "bpe": DEFAULT_SPECIAL_TOKENS, "unigram": []},
       flags=("--special-tokens", "--control-symbols"), aliases=("control_symbols",)),
    _o("min_count", _int, "an integer", "bytepiece: prune n-grams and pieces rarer than this (default 2); bpe: stop "
       "when the best pair is rarer (default 2; 1 with --pretokenizer sentencepiece, which merges on to the "
       "vocabulary size as SentencePiece does)", "model", algorithms=BP | BPE, default={"bytepiece": 2, "bpe": None},
       type=int, metavar="N"),
    _o("max_piece_bytes", _int, "an integer", "longest piece in bytes: bytepiece (default 36), bpe byte_level "
       f"({BYTE_LEVEL_MAX_PIECE_BYTES}), unigram byte variant (16)", "model",
       default={"bytepiece": 36, "bpe": BYTE_LEVEL_MAX_PIECE_BYTES, "unigram": 16}, type=int,
       metavar="N", applies=_only_in_unit("max_piece_bytes")),
    _o("max_piece_chars", _int, "an integer", "longest piece in characters: bpe sentencepiece, unigram "
       "sentencepiece variant (default 16)", "model", algorithms=UG | BPE, default=16, type=int, metavar="N",
       flags=("--max-piece-chars", "--max-sentencepiece-length"), aliases=("max_sentencepiece_length",),
       applies=_only_in_unit("max_piece_chars")),
    _o("isolate_digits", _bool, "true or false", "every decimal digit is a piece of its own", "model",
       algorithms=BP | UG, default=False, flags=("--isolate-digits", "--split-digits"), action="store_true",
       aliases=("split_digits",)),
    _o("character_coverage", _num, "a number from 0.98 to 1.0", "share of character occurrences covered by "
       "pieces; rarer characters stay bytes or <unk> (default 0.9995)", "model", algorithms=UG | BPE,
       default=0.9995, type=float, applies=_bpe_sentencepiece_only),
    # ------------------------------------------------------------------ bytepiece
    _o("order", _int, "an integer", "longest byte n-gram of the language model, 1..7 (default 6)", "bytepiece",
       algorithms=BP, default=6, type=int),
    _o("normalization", _str, "a string (identity or nfc)", "identity (lossless, default) or nfc", "bytepiece",
       algorithms=BP, default="identity", choices=("identity", "nfc")),
    _o("ensure_unicode", _bool, "true or false", "let pieces start on a UTF-8 continuation byte", "bytepiece",
       algorithms=BP, default=True, flags=("--no-ensure-unicode",), action="store_false"),
    _o("refine_em_rounds", _int, "an integer", "unigram EM rounds after pruning (default 0)", "bytepiece",
       algorithms=BP, default=0, type=int),
    _o("refine_em_mode", _str, "a string (viterbi or expected)", "counts of the EM rounds (default viterbi)",
       "bytepiece", algorithms=BP, default="viterbi", choices=("viterbi", "expected")),
    # ------------------------------------------------------------------ unigram
    _o("unigram_variant", _str, "a string (sentencepiece or byte)", "sentencepiece (normalizer, '▁', "
       "SentencePiece-compatible; default) or byte (raw bytes, lossless)", "unigram", algorithms=UG,
       default="sentencepiece", choices=("sentencepiece", "byte")),
    _o("seed_sentencepiece_size", _int, "an integer", "seed pieces (default 1000000)", "unigram", algorithms=UG,
       default=1_000_000, type=int),
    _o("shrinking_factor", _num, "a number in (0, 1)", "share of pieces kept per pruning round (default 0.75)",
       "unigram", algorithms=UG, default=0.75, type=float),
    _o("num_sub_iterations", _int, "an integer", "EM rounds between prunings (default 2)", "unigram",
       algorithms=UG, default=2, type=int),
    _o("max_sentence_length", _int, "an integer", "skip longer sentences, in bytes, as SentencePiece (default "
       "4192; 0: no limit)", "unigram", algorithms=UG, default=4192, type=int),
    _o("unigram_defaults", _str, "a string (lossless or sentencepiece)", "lossless (default): byte fallback, "
       "whitespace kept as it is, no dummy prefix, whitespace-only pieces allowed (every byte round-trips); "
       "sentencepiece: SentencePiece's own defaults (no byte fallback, runs of spaces collapsed, a '▁' before "
       "the first word), which drop what they cannot represent; the four flags below override either",
       "unigram", algorithms=UG, default="lossless", choices=("lossless", "sentencepiece")),
    _o("byte_fallback", _bool, "true or false", "256 byte pieces for characters outside the vocabulary "
       "(--no-byte-fallback: <unk>)", "unigram", algorithms=UG, action="store_true"),
    _o("split_by_whitespace", _bool, "true or false", "let pieces cross whitespace", "unigram", algorithms=UG,
       default=True, flags=("--no-split-by-whitespace",), action="store_false"),
    _o("split_by_number", _bool, "true or false", "let pieces join digits and letters", "unigram",
       algorithms=UG, default=True, flags=("--no-split-by-number",), action="store_false"),
    _o("split_by_unicode_script", _bool, "true or false", "let pieces cross scripts", "unigram", algorithms=UG,
       default=True, flags=("--no-split-by-unicode-script",), action="store_false"),
    _o("treat_whitespace_as_suffix", _bool, "true or false", "'▁' ends a word instead of starting it",
       "unigram", algorithms=UG, default=False, action="store_true"),
    _o("allow_whitespace_only_pieces", _bool, "true or false", "allow pieces of several '▁' "
       "(--no-whitespace-only-pieces: not)", "unigram", algorithms=UG, action="store_true"),
    _o("add_dummy_prefix", _bool, "true or false", "no '▁' before the first word (--add-dummy-prefix: one)",
       "unigram", algorithms=UG, flags=("--no-dummy-prefix",), action="store_false"),
    _o("remove_extra_whitespaces", _bool, "true or false", "keep runs of spaces as they are "
       "(--remove-extra-whitespaces: collapse them)", "unigram", algorithms=UG, flags=("--keep-extra-whitespaces",),
       action="store_false"),
    _o("normalizer_model", _str, "a path", "use this SentencePiece .model's normalizer (default identity)",
       "unigram", algorithms=UG, metavar="SP_MODEL"),
    _o("user_defined_symbols", C.is_str_list, "a list of strings", "pieces always kept whole", "unigram",
       algorithms=UG, default=[], nargs="*", metavar="SYMBOL"),
    _o("pad_id", _int, "an integer", "id of <pad> (default -1: none)", "unigram", algorithms=UG, default=-1,
       type=int),
    _o("estep", _str, "a string (auto, driver or spark)", "where E-steps run: driver, spark, or auto (driver up "
       "to 512 MiB of chunks)", "unigram", algorithms=UG, default="auto", choices=("auto", "driver", "spark")),
    # ------------------------------------------------------------------ bpe
    _o("pretokenizer", _str, "a string (byte_level or sentencepiece)", "byte_level: regex pre-split, "
       "tokenizers/tiktoken-compatible (default); sentencepiece: '▁' words, SentencePiece's BPE rules", "bpe",
       algorithms=BPE, default="byte_level", choices=("byte_level", "sentencepiece")),
    _o("pattern", _str, "a string (gpt2, llama3 or o200k)", "the byte_level regex: gpt2, llama3 (cl100k's) or "
       "o200k (o200k_base's, letters split by case); default gpt2", "bpe",
       algorithms=BPE, default="gpt2", choices=("gpt2", "llama3", "o200k")),
    _o("superword_transition", _num, "a number: a share below 1 or a vocabulary size", "superword BPE: plain merges "
       "up to this vocabulary size (or share of the largest --vocab-size, e.g. 0.8), then merges that cross spaces "
       "(default: none, plain BPE)", "bpe", algorithms=BPE, type=float, metavar="T"),
    _o("superword_pattern", _str, "a string (superword or superbpe)", "superword BPE's second-stage split "
       "(default superword: numbers, punctuation runs and line breaks cut, spaces stay inside; superbpe: the "
       "published SuperBPE split, line breaks inside too)", "bpe", algorithms=BPE, default="superword",
       choices=("superword", "superbpe")),
    _o("superword_max_words", _int, "an integer", "superword BPE: most words in a second-stage piece, a word "
       "counted at each space (default 4)", "bpe", algorithms=BPE, default=4, type=int, metavar="N"),
)
BY_KEY = {option.key: option for option in OPTIONS}
#: what ``--unigram-defaults`` sets, for the options not given: lossless, or SentencePiece's own defaults (the
#: models of earlier versions' defaults, byte for byte)
UNIGRAM_DEFAULTS = {
    "lossless": {"byte_fallback": True, "remove_extra_whitespaces": False, "add_dummy_prefix": False,
                 "allow_whitespace_only_pieces": True},
    "sentencepiece": {"byte_fallback": False, "remove_extra_whitespaces": True, "add_dummy_prefix": True,
                      "allow_whitespace_only_pieces": False},
}
#: the flag that sets each of those options the other way than its own flag does
UNIGRAM_OPPOSITE_FLAGS = {"byte_fallback": ("--no-byte-fallback", False),
                          "remove_extra_whitespaces": ("--remove-extra-whitespaces", True),
                          "add_dummy_prefix": ("--add-dummy-prefix", True),
                          "allow_whitespace_only_pieces": ("--no-whitespace-only-pieces", False)}
ALIASES = {alias: option.key for option in OPTIONS for alias in option.aliases}
#: old names that keep working with a notice; each maps to the piece-length option of the model's unit
DEPRECATED = {"max_piece_length": "--max-piece-length is deprecated: use --max-piece-bytes or --max-piece-chars "
                                  "(one unit per name)"}
SCHEMA: dict[str, tuple[Any, str]] = {o.key: (C.optional(o.check), o.expected) for o in OPTIONS}
ACCEPTED: dict[str, tuple[Any, str]] = {**SCHEMA, **{a: SCHEMA[k] for a, k in ALIASES.items()},
                                        **{k: SCHEMA["max_piece_bytes"] for k in DEPRECATED}}
GROUP_TITLES = {
    "train": "what to train (all algorithms)", "input": "input and evaluation (all algorithms)",
    "run": "how it runs (all algorithms; --config FILE and --set KEY=VALUE take any key)",
    "model": "model options of several algorithms ([the algorithms that take each])",
    "bytepiece": "bytepiece options", "unigram": "unigram options (SentencePiece's names)", "bpe": "bpe options",
}


def _help_of(option: Option) -> str:
    text = option.help
    if option.algorithms != ALL:
        text += f" [{', '.join(a for a in ALGORITHMS if a in option.algorithms)}]"
    return text.replace("%", "%%")


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``shardpiece train``: every option, grouped as :data:`GROUP_TITLES`; a flag that is
    not given leaves its key out of the namespace (the config file or the default decides)."""
    parser = argparse.ArgumentParser(
        prog="shardpiece train", argument_default=argparse.SUPPRESS,
        description="Train a vocabulary (bytepiece, unigram or bpe) with Spark. Every option is also a key of "
                    "--config FILE (YAML, '_' for '-') and of --set KEY=VALUE; flags win over --set, --set over "
                    "the file. Options an algorithm does not take are errors.")
    groups = {name: parser.add_argument_group(title) for name, title in GROUP_TITLES.items()}
    groups["train"].add_argument("--config", metavar="FILE", help="YAML file of options (see configs/demo.yaml)")
    groups["train"].add_argument(
        "--set", dest="overrides", action="append", metavar="KEY=VALUE",
        help="override any config key (value read as YAML), e.g. --set min_count=8 --set spark.executor.memory=8g")
    for option in OPTIONS:
        strings = option.option_strings()
        if not strings:
            continue
        kwargs: dict[str, Any] = {"dest": option.key, "help": _help_of(option)}
        if option.action != "store":
            kwargs["action"] = option.action
        else:
            for name in ("nargs", "type", "choices", "metavar"):
                if getattr(option, name) is not None:
                    kwargs[name] = getattr(option, name)
            if option.metavar is None and option.type in (int, float):
                kwargs["metavar"] = "N" if option.type is int else "F"
        groups[option.group].add_argument(*strings, **kwargs)
    for key, (flag, value) in UNIGRAM_OPPOSITE_FLAGS.items():
        groups["unigram"].add_argument(flag, dest=key, action="store_const", const=value,
                                       help=f"sets {key} to {str(value).lower()} [unigram]")
    groups["run"].add_argument("--quiet", action="store_true", help="print only the summary")
    groups["run"].add_argument("--verbose", action="store_true",
                               help="Spark's log and the Java and Python stacks of a failure on the terminal "
                                    "(default: in a log file under the work directory, named by the error line)")
    groups["model"].add_argument("--max-piece-length", dest="max_piece_length", type=int, help=argparse.SUPPRESS)
    return parser


def canonical(raw: dict[str, Any], source: str, notices: list[str]) -> dict[str, Any]:
    """``raw`` (validated against :data:`ACCEPTED`) with aliases renamed to their option's key; deprecated keys
    are kept (resolved once the algorithm is known) and noted."""
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key in DEPRECATED:
            notices.append(f"{source}: {DEPRECATED[key]}")
        name = ALIASES.get(key, key)
        if name in out and out[name] != value:
            raise ConfigError(f"{source}: {key!r} and {name!r} name the same option: give it once")
        out[name] = value
    return out


def load_config(path: str, notices: list[str] | None = None) -> dict[str, Any]:
    """A train config file, validated and with aliases renamed (relative ``input`` paths resolved against it)."""
    return canonical(C.load_config(path, ACCEPTED), path, notices if notices is not None else [])


def resolve_options(args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    """``(options, notices)``: defaults < ``--config`` < ``--set`` < flags, every given key checked against the
    chosen algorithm, piece lengths in the model's unit; ``notices`` are deprecation messages for stderr.
    Raises :class:`ConfigError` for a missing, unknown, mistyped or inapplicable option."""
    notices: list[str] = []
    given: dict[str, Any] = {}
    source = "the command line"
    if getattr(args, "config", None):
        given.update(load_config(args.config, notices))
        source = f"{args.config} or the command line"
    overrides = C.parse_overrides(getattr(args, "overrides", None), ACCEPTED)
    given = C.merge_options(given, canonical(overrides, "--set", notices))
    flags = {k: v for k, v in vars(args).items() if k not in ("config", "overrides", "quiet", "verbose")}
    if "max_piece_length" in flags:
        notices.append(DEPRECATED["max_piece_length"])
    given = C.merge_options(given, {ALIASES.get(k, k): v for k, v in flags.items()})
    given = {k: v for k, v in given.items() if v is not None}
    algorithm = given.get("algorithm", "bytepiece")
    if algorithm not in ALGORITHMS:
        raise ConfigError(f"algorithm {algorithm!r} is unknown: use one of {', '.join(ALGORITHMS)}")
    options: dict[str, Any] = {"algorithm": algorithm}
    for option in OPTIONS:  # the algorithm's own choices first: piece lengths depend on them
        if option.key in given:
            options[option.key] = given[option.key]
    for key in ("max_piece_length", "max_sentencepiece_length"):
        if key in given:
            target = piece_length_key(options)
            if target in given and given[target] != given[key]:
                raise ConfigError(f"{key} and {target} name the same limit here: give only {target}")
            options[target] = given[key]
    for key in sorted(options):
        option = BY_KEY[key]
        if algorithm not in option.algorithms:
            takers = ", ".join(a for a in ALGORITHMS if a in option.algorithms)
            raise ConfigError(f"option {key} (--{key.replace('_', '-')}) is not taken by --algorithm {algorithm}: "
                              f"only by {takers}; remove it or choose one of those algorithms")
    for key in sorted(options):
        reason = BY_KEY[key].applies(options) if BY_KEY[key].applies else None
        if reason:
            raise ConfigError(f"option {key}: {reason}")
    for option in OPTIONS:
        if option.key not in options and algorithm in option.algorithms and not (
                option.applies and option.applies({**options, option.key: None})):
            default = option.default_for(algorithm)
            if default is not None:
                options[option.key] = list(default) if isinstance(default, list) else default
    if algorithm == "unigram":
        for key, value in UNIGRAM_DEFAULTS[options["unigram_defaults"]].items():
            options.setdefault(key, value)
    for key in ("input", "vocab_size", "output"):
        if options.get(key) in (None, [], ""):
            raise ConfigError(f"--{key.replace('_', '-')} is required: give it in {source}")
    if isinstance(options["input"], str):
        options["input"] = [options["input"]]
    if isinstance(options["vocab_size"], int):
        options["vocab_size"] = [options["vocab_size"]]
    if options["on_bad_row"] not in BAD_ROW_POLICIES:
        raise ConfigError(f"on_bad_row {options['on_bad_row']!r}: use one of {', '.join(BAD_ROW_POLICIES)}")
    if not 0.0 <= float(options["holdout_fraction"]) <= 0.5:
        raise ConfigError(f"--holdout-fraction {options['holdout_fraction']} is outside 0..0.5")
    for key in ("partitions", "threads", "eval_documents", "in_process_max_mib"):
        if options.get(key) is not None and options[key] < (0 if key == "eval_documents" else 1):
            raise ConfigError(f"--{key.replace('_', '-')} {options[key]}: use 1 or more")
    if options["max_table_entries"] and options["max_table_entries"] < MIN_LIMIT:
        raise ConfigError(f"--max-table-entries {options['max_table_entries']}: use {MIN_LIMIT} or more (or 0 for no "
                          "bound); a smaller table leaves no room for a useful vocabulary")
    if options.get("max_table_bytes") and options["max_table_bytes"] < MIN_TABLE_BYTES:
        raise ConfigError(f"--max-table-bytes {options['max_table_bytes']}: use {MIN_TABLE_BYTES} or more (or 0 for "
                          "no bound); a smaller table leaves no room for a useful vocabulary")
    from pipelines.read.tables import check_table_options

    check_table_options(options.get("input_format"), options["input"], options.get("reader"),
                        **{t.key: options.get(t.key) for t in TABLE_OPTIONS})
    check_engine(options)
    C.check_local_output("--output", options.get("output"), "the model")
    C.check_local_output("--work-dir", options.get("work_dir"), "the work directory")
    if (options.get("master") or "").lower() == "none":
        if options.get("partitions") is not None:
            raise ConfigError("--partitions needs Spark; with --master none use --threads")
        if options.get("reader") == "spark":
            raise ConfigError("--reader spark needs Spark: drop it, or give a Spark master (--master local[*])")
        if options.get("estep") == "spark":
            raise ConfigError("--estep spark needs Spark: drop it, or give a Spark master (--master local[*])")
        for path in options["input"]:
            if "://" in path and not path.startswith("file://"):
                raise ConfigError(f"--input {path}: --master none reads local files only; run with Spark "
                                  "(--master local[*] or a cluster URL) or --engine beam for other filesystems")
    return options, notices


def check_engine(options: dict[str, Any]) -> None:
    """Beam's options only with ``--engine beam``, and none of Spark's there (a :class:`ConfigError` naming the
    fix). ``check_engine({"engine": "auto", "runner": "DirectRunner"})`` raises: --runner needs --engine beam."""
    C.check_beam_options(options, options.get("master"))
    if options.get("engine") != "beam":
        return
    for key, value in (("reader", "spark"), ("estep", "spark")):
        if options.get(key) == value:
            raise ConfigError(f"--{key} spark needs Spark: drop it with --engine beam")
    if options.get("input_format") in ("delta", "iceberg") or options.get("where") is not None:
        raise ConfigError("--engine beam trains from text, JSONL and Parquet files: for a Delta or Iceberg table or "
                          "--where drop --engine beam (this process or Spark reads them)")
    for pair in options.get("beam_option") or []:
        if "=" not in pair or not pair.split("=", 1)[0].strip():
            raise ConfigError(f"--beam-option {pair!r}: give KEY=VALUE, e.g. --beam-option direct_num_workers=2")


def dump_config(options: dict[str, Any]) -> str:
    """The resolved options as YAML that ``--config`` reads back to repeat the run (schema keys only)."""
    return C.dump_config(options, SCHEMA, "shardpiece train")


def option_table() -> list[tuple[str, str]]:
    """``[(flag, "bytepiece, unigram, bpe")]`` of every option with a flag: which algorithms take it (the table in
    docs/training.md). ``option_table()[0]`` -> ``('--algorithm', 'all')``."""
    rows = []
    for option in OPTIONS:
        strings = option.option_strings()
        if strings:
            takers = "all" if option.algorithms == ALL else ", ".join(a for a in ALGORITHMS if a in option.algorithms)
            rows.append((strings[0], takers))
    return rows
