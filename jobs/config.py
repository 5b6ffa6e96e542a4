"""YAML configuration of ``shardpiece train`` and ``shardpiece tokenize``: a flat mapping whose keys are the long
option names (with ``_``); the train keys are :data:`jobs.train_options.SCHEMA`.

Validation names the file and the key: an unknown key (with the closest known one), a value of the wrong type.
Precedence, lowest first: defaults < the file < ``--set KEY=VALUE`` overrides < the named command-line options.
``--set`` takes any key of the file (the value is read as YAML: ``--set min_count=8``, ``--set vocab_size=[8000,
16000]``, ``--set isolate_digits=true``); a key starting with ``spark.`` goes into the ``spark`` mapping
(``--set spark.executor.memory=8g``). The resolved options are saved beside the outputs
(:func:`dump_config`), a file ``--config`` reads back to repeat the run. ``shardpiece tokenize --config FILE`` is
checked by the same :func:`validate_config` against :data:`TOKENIZE_SCHEMA`.

Example (``configs/demo.yaml``)::

    algorithm: bytepiece
    input: ["../data/sample/*.txt.gz"]     # relative paths are relative to the config file
    vocab_size: [2000, 4000]
    min_count: 4

    >>> validate_config({"output_format": 3}, "x.yaml", TOKENIZE_SCHEMA)
    Traceback (most recent call last):
    ...
    tokenizer.errors.ConfigError: x.yaml: key 'output_format' must be a string (parquet, megatron or npy), got 3
"""

from __future__ import annotations

import difflib
import os
from typing import Any

from jobs.table_options import table_schema
from tokenizer.errors import ConfigError

_URI_PREFIXES = ("file:", "hdfs:", "s3:", "s3a:", "s3n:", "gs:", "abfs:", "abfss:", "wasb:", "wasbs:", "viewfs:")


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def is_str(v):
    return isinstance(v, str)


def is_bool(v):
    return isinstance(v, bool)


def is_int_or_list(v):
    return is_int(v) or (isinstance(v, list) and bool(v) and all(is_int(x) for x in v))


def is_str_or_list(v):
    return is_str(v) or (isinstance(v, list) and bool(v) and all(is_str(x) for x in v))


def is_str_list(v):
    return isinstance(v, list) and all(is_str(x) for x in v)


def is_spark_conf(v):
    return isinstance(v, dict) and all(is_str(k) and isinstance(x, (str, int, float, bool)) for k, x in v.items())


def optional(check):
    """``check`` that also accepts ``None`` (YAML ``null``: "use the default")."""
    return lambda v: v is None or check(v)


def _columns(v):
    return is_str(v) or is_str_list(v)


def _fault_injection(v):
    return v is None or (isinstance(v, dict) and all(is_str(k) for k in v))


# ``shardpiece tokenize``'s keys (the fields of pipelines.tokenize.TokenizeConfig, plus ``input``, ``master`` and
# ``driver_memory``);
# the allowed values of the string options are checked by TokenizeConfig.validate and argparse.
TOKENIZE_SCHEMA: dict[str, tuple[Any, str]] = {
    "model": (is_str, "a path"),
    "input": (is_str_or_list, "a path or a list of paths"),
    "inputs": (is_str_or_list, "a path or a list of paths"),
    "output": (is_str, "a directory path"),
    "input_format": (optional(is_str), "a string (text, jsonl, parquet, delta or iceberg)"),
    **table_schema(),
    "on_table_change": (is_str, "a string (error or retokenize)"),
    "text_column": (is_str, "a string"),
    "keep_columns": (_columns, "a list of column names or a comma-separated string"),
    "output_format": (is_str, "a string (parquet, megatron or npy)"),
    "parquet_ids_dtype": (is_str, "a string (int32 or uint16)"),
    "parquet_compression": (is_str, "a string (zstd, snappy, lz4 or none)"),
    "add_bos": (is_bool, "true or false"),
    "add_eos": (is_bool, "true or false"),
    "control_tokens_in_text": (is_bool, "true or false"),
    "partitions": (optional(is_int), "an integer"),
    "master": (is_str, "a Spark master URL string"),
    "engine": (is_str, "a string (spark or beam)"),
    "runner": (is_str, "a Beam runner name string"),
    "beam_option": (is_str_list, "a list of KEY=VALUE strings"),
    "beam": (is_spark_conf, "a mapping of Beam pipeline options to values"),
    "driver_memory": (is_str, "a string such as 4g"),
    "mode": (is_str, "a string (error, overwrite, skip or incremental)"),
    "verify": (is_bool, "true or false"),
    "verify_rate": (is_number, "a number in (0, 1]"),
    "on_bad_row": (is_str, "a string (error, skip or keep)"),
    "max_document_bytes": (is_int, "an integer"),
    "progress_seconds": (is_number, "a number of seconds"),
    "quiet": (is_bool, "true or false"),
    "reader": (is_str, "a string (auto, arrow or spark)"),
    "fault_injection": (_fault_injection, "a mapping (a testing aid of the commit protocol)"),
}


def check_beam_options(options: dict[str, Any], master: str | None) -> None:
    """The engine flags ``train`` and ``tokenize`` share: Beam's (``runner``, ``beam_option``, the ``beam:`` section)
    only with ``engine: beam``, and no Spark ``master`` with it (a :class:`ConfigError` naming the fix).
    ``check_beam_options({"engine": "spark", "runner": "DirectRunner"}, None)`` raises: --runner needs --engine beam;
    ``check_beam_options({"engine": "spark"}, None)`` passes."""
    beam = options.get("engine") == "beam"
    for key in ("runner", "beam_option", "beam"):
        if options.get(key) and not beam:
            flag = f"--{key.replace('_', '-')}" if key != "beam" else "the beam: section"
            raise ConfigError(f"{flag} is for Apache Beam: add --engine beam, or drop it")
    if beam and (master or "auto").lower() != "auto":
        raise ConfigError(f"--master {master} is Spark's: with --engine beam choose the runner with --runner (and "
                          "--beam-option KEY=VALUE)")


def check_local_output(flag: str, path: str | None, what: str) -> None:
    """An output path with a scheme (``gs://``, ``s3://``, ``hdfs://``) is a :class:`ConfigError` saying the fix:
    outputs are written with local file operations (atomic renames). ``what`` names the output. Example:
    ``check_local_output("--output", "gs://b/m.model", "the model")`` raises ``--output gs://b/m.model: the model
    is written to a local path ...``."""
    from pipelines.read.arrow_read import has_scheme

    if path and has_scheme(str(path)):
        raise ConfigError(f"{flag} {path}: {what} is written to a local path (a mounted filesystem every worker sees, "
                          f"for a cluster), not to {str(path).split('://', 1)[0]}://: write it there and copy it to "
                          f"{path} afterwards")


def validate_config(raw: Any, source: str, schema: dict[str, tuple[Any, str]]) -> dict[str, Any]:
    """Check a parsed YAML document against ``schema`` (``jobs.train_options.ACCEPTED``, the train options, or
    :data:`TOKENIZE_SCHEMA`); returns it as a dict (``None`` -> ``{}``).

    >>> validate_config({"partitions": "4"}, "t.yaml", TOKENIZE_SCHEMA)
    Traceback (most recent call last):
    ...
    tokenizer.errors.ConfigError: t.yaml: key 'partitions' must be an integer, got '4'
    """
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: the file must hold a mapping of option: value, got a {type(raw).__name__}")
    for key, value in raw.items():
        _check_key(key, source, schema)
        check, expected = schema[key]
        if not check(value):
            raise ConfigError(f"{source}: key {key!r} must be {expected}, got {value!r}")
    return dict(raw)


def _check_key(key: Any, source: str, schema: dict[str, tuple[Any, str]]) -> None:
    if key not in schema:
        close = difflib.get_close_matches(str(key), schema, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"{source}: unknown key {key!r}{hint}; known keys: {', '.join(sorted(schema))}")


def parse_overrides(pairs: list[str] | None, schema: dict[str, tuple[Any, str]],
                    source: str = "--set") -> dict[str, Any]:
    """``["min_count=8", "spark.executor.memory=8g"]`` -> ``{"min_count": 8, "spark": {"spark.executor.memory":
    "8g"}}``, validated against ``schema`` like a config file (values are parsed as YAML scalars or flow lists).

    >>> parse_overrides(["partitions=4", "spark.executor.cores=2"], TOKENIZE_SCHEMA)
    {'partitions': 4, 'spark': {'spark.executor.cores': 2}}
    """
    import yaml

    out: dict[str, Any] = {}
    for pair in pairs or []:
        key, sep, text = pair.partition("=")
        key = key.strip().replace("-", "_") if not key.strip().startswith("spark.") else key.strip()
        if not sep or not key:
            raise ConfigError(f"{source} {pair!r}: write KEY=VALUE, e.g. --set min_count=8")
        try:
            value = yaml.safe_load(text) if text.strip() else ""
        except yaml.YAMLError as exc:
            raise ConfigError(f"{source} {pair!r}: the value is not valid YAML ({exc.problem})") from None
        if key.startswith("spark."):
            if not isinstance(value, (str, int, float, bool)):
                raise ConfigError(f"{source} {pair!r}: a Spark setting needs a single value, got {value!r}")
            out.setdefault("spark", {})[key] = value
            continue
        _check_key(key, source, schema)
        check, expected = schema[key]
        if not check(value):
            raise ConfigError(f"{source}: key {key!r} must be {expected}, got {value!r}")
        out[key] = value
    return out


def merge_options(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """``base`` updated with ``overrides``; the ``spark`` mappings are merged key by key."""
    merged = dict(base)
    for key, value in overrides.items():
        if key == "spark" and isinstance(merged.get("spark"), dict):
            merged["spark"] = {**merged["spark"], **value}
        else:
            merged[key] = value
    return merged


def dump_config(options: dict[str, Any], schema: dict[str, tuple[Any, str]], command: str) -> str:
    """The resolved options as YAML that :func:`load_config` accepts (only the schema's keys, sorted; ``None``
    values left out). Paths should be absolute, so the file can be read from anywhere."""
    import yaml

    kept = {k: v for k, v in sorted(options.items()) if k in schema and v is not None}
    text = yaml.safe_dump(kept, sort_keys=True, allow_unicode=True, default_flow_style=None, width=120)
    validate_config(yaml.safe_load(text), "the resolved config", schema)
    return f"# {command}: the resolved options of this run ({command} --config THIS_FILE repeats it)\n" + text


def load_config(path: str, schema: dict[str, tuple[Any, str]]) -> dict[str, Any]:
    """Read and validate a YAML config; relative ``input`` paths are resolved against the file's directory."""
    import yaml

    try:
        with open(path, encoding="utf-8") as handle:
            raw = yaml.safe_load(handle)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    config = validate_config(raw, path, schema)
    if "input" in config and config.get("input_format") != "iceberg":  # an Iceberg input: a table's name
        inputs = [config["input"]] if isinstance(config["input"], str) else list(config["input"])
        base = os.path.dirname(os.path.abspath(path))
        config["input"] = [p if os.path.isabs(p) or p.startswith(_URI_PREFIXES) or "://" in p  # a URI of any scheme
                           else os.path.join(base, p) for p in inputs]
    return config
