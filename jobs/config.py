"""YAML configuration of ``shardpiece train``: a flat mapping whose keys are the long option names (with ``_``).

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

    >>> validate_config({"vocab_size": "big"}, "x.yaml")
    Traceback (most recent call last):
    ...
    tokenizer.errors.ConfigError: x.yaml: key 'vocab_size' must be an integer or a list of integers, got 'big'
"""

from __future__ import annotations

import difflib
import os
from typing import Any

from tokenizer.errors import ConfigError

_URI_PREFIXES = ("file:", "hdfs:", "s3:", "s3a:", "s3n:", "gs:", "abfs:", "abfss:", "wasb:", "wasbs:", "viewfs:")


def _int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _str(v):
    return isinstance(v, str)


def _bool(v):
    return isinstance(v, bool)


def _int_or_list(v):
    return _int(v) or (isinstance(v, list) and bool(v) and all(_int(x) for x in v))


def _str_or_list(v):
    return _str(v) or (isinstance(v, list) and bool(v) and all(_str(x) for x in v))


def _str_list(v):
    return isinstance(v, list) and all(_str(x) for x in v)


def _spark_conf(v):
    return isinstance(v, dict) and all(_str(k) and isinstance(x, (str, int, float, bool)) for k, x in v.items())


def _optional(check):
    """``check`` that also accepts ``None`` (YAML ``null``: "use the default")."""
    return lambda v: v is None or check(v)


def _columns(v):
    return _str(v) or _str_list(v)


def _fault_injection(v):
    return v is None or (isinstance(v, dict) and all(_str(k) for k in v))


# key -> (check, description of the expected type)
SCHEMA: dict[str, tuple[Any, str]] = {
    "algorithm": (_str, "a string (bytepiece)"),
    "input": (_str_or_list, "a path or a list of paths"),
    "vocab_size": (_int_or_list, "an integer or a list of integers"),
    "output": (_str, "a path"),
    "order": (_int, "an integer"),
    "min_count": (_int, "an integer"),
    "max_piece_length": (_int, "an integer"),
    "normalization": (_str, "a string (identity or nfc)"),
    "isolate_digits": (_bool, "true or false"),
    "ensure_unicode": (_bool, "true or false"),
    "special_tokens": (_str_list, "a list of strings"),
    "refine_em_rounds": (_int, "an integer"),
    "refine_em_mode": (_str, "a string (viterbi or expected)"),
    "input_format": (_str, "a string (text, jsonl or parquet)"),
    "text_column": (_str, "a string"),
    "partitions": (_int, "an integer"),
    "master": (_str, "a Spark master URL string"),
    "driver_memory": (_str, "a string such as 4g"),
    "holdout_fraction": (_number, "a number between 0 and 0.5"),
    "eval_documents": (_int, "an integer"),
    "spark": (_spark_conf, "a mapping of Spark configuration keys to values"),
    "work_dir": (_str, "a directory path (stage outputs for resuming)"),
    "resume": (_bool, "true or false"),
}

# ``shardpiece tokenize``'s keys (the fields of pipelines.tokenize.TokenizeConfig, plus ``input`` and ``master``);
# the allowed values of the string options are checked by TokenizeConfig.validate and argparse.
TOKENIZE_SCHEMA: dict[str, tuple[Any, str]] = {
    "model": (_str, "a path"),
    "input": (_str_or_list, "a path or a list of paths"),
    "inputs": (_str_or_list, "a path or a list of paths"),
    "output": (_str, "a directory path"),
    "input_format": (_optional(_str), "a string (text, jsonl or parquet)"),
    "text_column": (_str, "a string"),
    "keep_columns": (_columns, "a list of column names or a comma-separated string"),
    "output_format": (_str, "a string (parquet, megatron or npy)"),
    "parquet_ids_dtype": (_str, "a string (int32 or uint16)"),
    "parquet_compression": (_str, "a string (zstd, snappy, lz4 or none)"),
    "add_bos": (_bool, "true or false"),
    "add_eos": (_bool, "true or false"),
    "partitions": (_optional(_int), "an integer"),
    "master": (_str, "a Spark master URL string"),
    "mode": (_str, "a string (error, overwrite, skip or incremental)"),
    "verify": (_bool, "true or false"),
    "verify_rate": (_number, "a number in (0, 1]"),
    "on_bad_row": (_str, "a string (error, skip or keep)"),
    "max_document_bytes": (_int, "an integer"),
    "progress_seconds": (_number, "a number of seconds"),
    "reader": (_str, "a string (auto, arrow or spark)"),
    "fault_injection": (_fault_injection, "a mapping (a testing aid of the commit protocol)"),
}


def validate_config(raw: Any, source: str, schema: dict[str, tuple[Any, str]] = SCHEMA) -> dict[str, Any]:
    """Check a parsed YAML document against ``schema`` (:data:`SCHEMA`, the train options, or
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


def _check_key(key: Any, source: str, schema: dict[str, tuple[Any, str]] = SCHEMA) -> None:
    if key not in schema:
        close = difflib.get_close_matches(str(key), schema, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"{source}: unknown key {key!r}{hint}; known keys: {', '.join(sorted(schema))}")


def parse_overrides(pairs: list[str] | None, source: str = "--set") -> dict[str, Any]:
    """``["min_count=8", "spark.executor.memory=8g"]`` -> ``{"min_count": 8, "spark": {"spark.executor.memory":
    "8g"}}``, validated like a config file (values are parsed as YAML scalars or flow lists).

    >>> parse_overrides(["vocab_size=[300, 400]", "isolate_digits=true", "spark.executor.cores=2"])
    {'vocab_size': [300, 400], 'isolate_digits': True, 'spark': {'spark.executor.cores': 2}}
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
        _check_key(key, source)
        check, expected = SCHEMA[key]
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


def dump_config(options: dict[str, Any]) -> str:
    """The resolved options as YAML that :func:`load_config` accepts (only the schema's keys, sorted; ``None``
    values left out). Paths should be absolute, so the file can be read from anywhere."""
    import yaml

    kept = {k: v for k, v in sorted(options.items()) if k in SCHEMA and v is not None}
    text = yaml.safe_dump(kept, sort_keys=True, allow_unicode=True, default_flow_style=None, width=120)
    validate_config(yaml.safe_load(text), "the resolved config")
    return "# shardpiece train: the resolved options of this run (shardpiece train --config THIS_FILE repeats it)\n" + text


def load_config(path: str) -> dict[str, Any]:
    """Read and validate a YAML config; relative ``input`` paths are resolved against the file's directory."""
    import yaml

    try:
        with open(path, encoding="utf-8") as handle:
            raw = yaml.safe_load(handle)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from None
    config = validate_config(raw, path)
    if "input" in config:
        inputs = [config["input"]] if isinstance(config["input"], str) else list(config["input"])
        base = os.path.dirname(os.path.abspath(path))
        config["input"] = [p if os.path.isabs(p) or p.startswith(_URI_PREFIXES) else os.path.join(base, p)
                           for p in inputs]
    return config
