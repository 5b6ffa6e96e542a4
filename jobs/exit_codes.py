"""One exit-code convention for every ``shardpiece`` command.

=====  ==========================================================================================================
code   meaning
=====  ==========================================================================================================
0      success
1      the run failed: an output could not be written (full disk, no permission), Spark or a task failed for
       another reason (out of memory, a lost executor); fix the environment and rerun (training resumes from
       its work directory)
2      the command cannot run as given: an invalid option or config, input that is missing or unusable (no
       text, a missing column, a bad row, a corrupt input file, also when a Spark task finds it), a model file
       that cannot be read; the message says what to change
=====  ==========================================================================================================

Every command's ``main`` runs its body through :func:`run_command`, which prints ``COMMAND: error: MESSAGE`` on
stderr (the useful line of a Spark task's error, not the JVM's trace) and returns the code.
"""

from __future__ import annotations

import sys
from typing import Callable

from tokenizer.errors import OutputWriteError, ShardpieceError

OK, RUN_FAILED, USAGE = 0, 1, 2
#: the starts of task error messages (:func:`pipelines.spark.session.task_error_message`) that blame the input or
#: options
_USER_ERRORS_IN_TASKS = ("cannot read input file", "InputError:", "ConfigError:", "ModelFileError:", "ModelError:")


def exit_code(exc: BaseException) -> int | None:
    """The code of an error (``None``: not one of ours; let it propagate with its traceback)."""
    if isinstance(exc, OutputWriteError):
        return RUN_FAILED
    if isinstance(exc, ShardpieceError):
        return USAGE
    return None


def run_command(command: str, body: Callable[[], int | None]) -> int:
    """Run ``body`` and map what it raises to the convention above (its own return value on success, 0 for
    ``None``); an error inside a Spark task is reported by its useful line, with 2 when that line blames the input,
    else 1."""
    try:
        return int(body() or 0)
    except Exception as exc:
        code = exit_code(exc)
        if code is not None:
            print(f"{command}: error: {exc}", file=sys.stderr)
            return code
        module = type(exc).__module__ or ""
        if not module.startswith(("pyspark", "py4j")):
            raise
        from pipelines.spark.session import task_error_message

        message = task_error_message(exc) or type(exc).__name__
        print(f"{command}: error in a Spark task: {message}", file=sys.stderr)
        return USAGE if message.startswith(_USER_ERRORS_IN_TASKS) else RUN_FAILED
