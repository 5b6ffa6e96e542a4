"""What Beam pipelines and this process hand each other: files in an exchange directory, written atomically
through Beam's ``FileSystems`` (a local directory on the direct runner, ``gs://...`` on Dataflow), and the pipeline
options of a run.

A pipeline's tasks write their results under names decided by their input (``result-00003.pkl`` for task 3), so a
retried bundle rewrites the same file with the same bytes and never adds one; this process reads the files once
the pipeline has finished. A value every task reads (:class:`SharedFile`) is one pickled file, loaded once per
worker process.

Example::

    options = pipeline_options({"runner": None, "beam_option": ["direct_num_workers=2"]})
    write_file(join(directory, "result-00000.pkl"), pickle.dumps(value))
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import uuid
from functools import partial
from typing import Any, Callable

from tokenizer.errors import ConfigError, ShardpieceError

#: the direct runner's defaults here: worker processes (not threads), 2 of them
DIRECT_DEFAULTS = {"direct_running_mode": "multi_processing", "direct_num_workers": "2"}
_LOADED: dict[str, Any] = {}  # SharedFile values this process loaded, by path


def require_beam() -> None:
    """Raise a :class:`ConfigError` saying how to install Apache Beam when it is not installed."""
    import importlib.util

    if importlib.util.find_spec("apache_beam") is None:
        raise ConfigError("--engine beam needs Apache Beam: pip install 'shardpiece[beam]' (or apache-beam), or "
                          "drop --engine beam (Spark, the default engine, runs the same job)")


def option_pairs(options: dict) -> dict[str, str]:
    """The Beam pipeline options of a run: the config's ``beam:`` mapping, then ``--beam-option KEY=VALUE`` (which
    wins), then the direct runner's :data:`DIRECT_DEFAULTS` where not given. Example: ``{"runner": None,
    "beam_option": ["direct_num_workers=3"]}`` -> ``{"runner": "DirectRunner", "direct_num_workers": "3",
    "direct_running_mode": "multi_processing"}``."""
    pairs = {"runner": options.get("runner") or "DirectRunner"}
    pairs.update({str(k): str(v) for k, v in (options.get("beam") or {}).items()})
    for pair in options.get("beam_option") or []:
        key, _, value = pair.partition("=")
        if not key.strip():
            raise ConfigError(f"--beam-option {pair!r}: give KEY=VALUE, e.g. --beam-option direct_num_workers=2")
        pairs[key.strip().lstrip("-")] = value.strip()
    if pairs["runner"] in ("DirectRunner", "direct"):
        for key, value in DIRECT_DEFAULTS.items():
            pairs.setdefault(key, value)
    return pairs


def pipeline_options(options: dict):
    """Beam ``PipelineOptions`` of :func:`option_pairs` (a value ``true`` is a bare flag: ``--save_main_session``)."""
    from apache_beam.options.pipeline_options import PipelineOptions

    flags = []
    for key, value in option_pairs(options).items():
        if key == "beam_plugins":  # Beam takes one module per flag
            flags += [f"--beam_plugins={module}" for module in plugin_modules(options)]
        else:
            flags.append(f"--{key}" if value.lower() == "true" else f"--{key}={value}")
    return PipelineOptions(flags)


def plugin_modules(options: dict) -> list[str]:
    """The modules of the ``beam_plugins`` option (comma-separated): what registers a Beam ``FileSystem`` for
    another scheme. ``plugin_modules({"beam_option": ["beam_plugins=a.fs, b.fs"]})`` -> ``["a.fs", "b.fs"]``."""
    value = option_pairs(options).get("beam_plugins", "")
    return [module.strip() for module in value.split(",") if module.strip()]


def import_plugins(options: dict) -> None:
    """Import the ``beam_plugins`` modules in this process and give Beam's ``FileSystems`` the run's pipeline
    options, so the driver lists and opens input paths with the filesystems the workers use (Beam's worker
    processes import the same modules: the option travels with the pipeline). A module that does not import is
    a :class:`ConfigError` naming it."""
    import importlib

    from apache_beam.io.filesystems import FileSystems

    for module in plugin_modules(options):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ConfigError(f"--beam-option beam_plugins={module}: cannot import it ({exc}); give a module on "
                              "the Python path of the driver and the workers") from None
    FileSystems.set_options(pipeline_options(options))


@contextlib.contextmanager
def beam_log(path: str | None):
    """While a pipeline runs, Beam's log (its own and what the runner relays of its workers') goes to the file
    ``path`` (the run's log file under the work directory) instead of the terminal; ``None``: the terminal."""
    if path is None:
        yield
        return
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    root = logging.getLogger()
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    saved = root.handlers[:], root.level
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    try:
        yield
    finally:
        root.handlers[:], level = saved
        root.setLevel(level)
        handler.close()


def join(directory: str, *names: str) -> str:
    from apache_beam.io.filesystems import FileSystems

    return FileSystems.join(directory, *names)


def write_file(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically: a temporary name unique to this attempt, then a rename over ``path``
    (a retried task's second write replaces the first whole)."""
    from apache_beam.io.filesystems import FileSystems

    temporary = f"{path}.tmp-{uuid.uuid4().hex}"
    with FileSystems.create(temporary) as handle:
        handle.write(data)
    FileSystems.rename([temporary], [path])


def read_file(path: str) -> bytes:
    from apache_beam.io.filesystems import FileSystems

    with FileSystems.open(path) as handle:
        return handle.read()


def list_files(directory: str, pattern: str) -> list[str]:
    """The files of ``directory`` matching ``pattern`` (a glob of names), sorted; no temporary files."""
    from apache_beam.io.filesystems import FileSystems

    found = FileSystems.match([join(directory, pattern)])[0].metadata_list
    return sorted(m.path for m in found if ".tmp-" not in m.path)


def exists(path: str) -> bool:
    from apache_beam.io.filesystems import FileSystems

    return FileSystems.exists(path)


def remove(paths: list[str]) -> None:
    """Delete files or directories (recursively) that exist."""
    from apache_beam.io.filesystems import FileSystems

    present = [path for path in paths if FileSystems.exists(path)]
    if present:
        FileSystems.delete(present)


def make_directory(path: str) -> str:
    from apache_beam.io.filesystems import FileSystems

    if not FileSystems.exists(path):
        FileSystems.mkdirs(path)
    return path


class SharedFile:
    """A value every task of a stage reads (the engine's ``share``): pickled to ``path`` once; ``.value`` loads it
    once per process. Pickles as its path only."""

    def __init__(self, path: str, value: Any = None):
        self.path = path
        if value is not None:
            write_file(path, pickle.dumps(value, protocol=5))
            _LOADED[path] = value

    @property
    def value(self) -> Any:
        if self.path not in _LOADED:
            _LOADED[self.path] = pickle.loads(read_file(self.path))
        return _LOADED[self.path]

    def unpersist(self) -> None:
        _LOADED.pop(self.path, None)
        remove([self.path])

    def __getstate__(self) -> dict:
        return {"path": self.path}

    def __setstate__(self, state: dict) -> None:
        self.path = state["path"]


# ---------------------------------------------------------------------------------------------- pipelines
def run_pipeline(options: dict, build: Callable) -> None:
    """Run one pipeline on the run's runner: ``build(pipeline)`` adds its transforms; Beam's log goes to the run's
    log file (``options["spark_log_file"]``: the log file every engine of the run writes)."""
    with beam_log(options.get("spark_log_file")):
        import apache_beam as beam

        with beam.Pipeline(options=pipeline_options(options)) as pipeline:
            build(pipeline)


def task(function: Callable, directory: str, element: tuple[int, Any]) -> None:
    """Run ``function(index, item)`` for ``(index, item)`` and write ``("ok", result)``, or the input error it
    raised as ``("error", exception)``, to ``result-INDEX.pkl`` (one file per input: a retry rewrites it)."""
    index, item = element
    try:
        outcome = ("ok", function(index, item))
    except ShardpieceError as error:
        outcome = ("error", error)
    write_file(join(directory, f"result-{index:05d}.pkl"), pickle.dumps(outcome, protocol=5))


def run_tasks(options: dict, directory: str, items: list, function: Callable) -> list:
    """``function(index, item)`` of every item in one pipeline (a task each, spread over the workers), the results
    in item order, read from ``directory``; the first input error a task raised (a :class:`ShardpieceError`: a
    bad row, a missing column) is raised here as it was raised there."""
    import apache_beam as beam

    run_pipeline(options, lambda p: (
        p | "items" >> beam.Create(list(enumerate(items))) | "spread" >> beam.Reshuffle()
        | "run" >> beam.Map(partial(task, function, directory))))
    outcomes = [pickle.loads(read_file(path)) for path in list_files(directory, "result-*.pkl")]
    if len(outcomes) != len(items):
        raise RuntimeError(f"the Beam pipeline left {len(outcomes)} results of {len(items)} tasks in {directory}: "
                           "rerun the job")
    for state, value in outcomes:
        if state == "error":
            raise value
    return [value for _, value in outcomes]
