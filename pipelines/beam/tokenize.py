"""``shardpiece tokenize --engine beam``: the tokenize job's tasks as one Beam pipeline; the planning, the checks and
the commit are the job's own (:func:`pipelines.tokenize.run.run_tokenize` with this executor), so the output
directory has the one format whichever engine wrote it.

    groups of work units (text byte ranges, Parquet row groups: :mod:`pipelines.read.arrow_read`), planned on the
    driver in input order -> one Beam task per group: read with pyarrow, encode, write the shard under a name unique
    to the attempt (``_temporary/RUN/part-P-attempt-A``: :func:`pipelines.tokenize.task.encode_units`) -> the
    task's counts to ``result-P.pkl`` (a retried bundle rewrites it: one result per partition) -> the driver
    checks the results and commits the shards the results name, then the manifest; the other attempts' files are
    removed with ``_temporary``

Example::

    summary = run_tokenize(None, config, versions=versions(None), executor=BeamTokenize(options))
"""

from __future__ import annotations

import os
import random
from functools import partial
from typing import Any

from pipelines.beam import exchange as X
from pipelines.beam.files import BeamFiles


def encode_group(arguments: dict, index: int, units: list) -> dict:
    """One task: the group's units encoded and written as partition ``index``'s shard under a fresh attempt id;
    returns the task's counts (``RESULT_SCHEMA``'s fields)."""
    from pipelines.tokenize.task import encode_units

    attempt = random.SystemRandom().getrandbits(62)  # unique to this attempt (a retry gets another)
    arguments = dict(arguments)
    model = X.SharedFile(arguments.pop("model_path"))  # read only when this process has not loaded the model yet
    return next(encode_units([units], model=model, identity=(index, attempt), **arguments))


class BeamTokenize:
    """The tokenize job's executor on Beam (see the module docstring); ``options``: ``runner``, ``beam_option``,
    ``beam`` as for training."""

    name = "beam"

    def __init__(self, options: dict):
        X.require_beam()
        self.options = options
        self.pairs = X.option_pairs(options)
        X.import_plugins(options)
        self.remote_files = BeamFiles()  # opens inputs with a scheme in the tasks (pipelines.read.arrow_read)

    def list_inputs(self, inputs: list[str]) -> tuple[list, list, str | None]:
        """:func:`pipelines.tokenize.inputs.list_inputs` of the inputs (non-empty files, empty files, guessed
        format), those with a scheme listed through Beam's ``FileSystems`` (:mod:`pipelines.beam.files`)."""
        from pipelines.beam.files import list_remote
        from pipelines.read.arrow_read import has_scheme
        from pipelines.read.readers import detect_format
        from pipelines.tokenize.commit import InputFile
        from pipelines.tokenize.inputs import list_inputs

        local = [spec for spec in inputs if not has_scheme(spec)]
        remote = list_remote([spec for spec in inputs if has_scheme(spec)])
        if not remote:
            return list_inputs(None, local)
        files, empty, _ = list_inputs(None, local) if local else ([], [], None)
        found = [InputFile(path, size, mtime * 1_000_000) for path, (size, mtime) in remote.items()]
        files = sorted(files + [f for f in found if f.size], key=lambda f: f.path)
        empty = sorted(empty + [f for f in found if not f.size], key=lambda f: f.path)
        return files, empty, detect_format([f.path for f in files + empty])

    @property
    def parallelism(self) -> int:
        """Task slots: the direct runner's workers, else ``num_workers`` or ``max_num_workers`` as given (2)."""
        for key in ("direct_num_workers", "num_workers", "max_num_workers"):
            if str(self.pairs.get(key, "")).isdigit() and int(self.pairs[key]) > 0:
                return int(self.pairs[key])
        return 2

    @property
    def master(self) -> str:
        return f"beam {self.pairs['runner']}"

    def encode(self, groups: list, *, model: bytes, output: str, run_id: str, **arguments: Any) -> list[dict]:
        """Every group encoded by one Beam task (:func:`encode_group`); the results in partition order."""
        directory = X.make_directory(os.path.join(output, "_temporary", run_id, "beam"))
        shared = X.SharedFile(X.join(directory, "model.pkl"), model)
        try:
            return X.run_tasks(self.options, directory, groups, partial(
                encode_group, {**arguments, "model_path": shared.path, "output": output, "run_id": run_id}))
        finally:
            shared.unpersist()
