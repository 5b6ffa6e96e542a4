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
130    stopped by Ctrl-C; the line says what a rerun does
=====  ==========================================================================================================

Every command's ``main`` runs its body through :func:`run_command`, which prints ``COMMAND: error: MESSAGE`` on
stderr (the useful line of a Spark task's error, not the JVM's trace: that goes to the run's log file, which the
line names) and returns the code; Ctrl-C prints one line and returns 130.
"""

from __future__ import annotations

import sys
import traceback
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


def run_command(command: str, body: Callable[[], int | None], *, after_interrupt: Callable[[], str] = lambda: "",
                verbose: bool = False) -> int:
    """Run ``body`` and map what it raises to the convention above (its own return value on success, 0 for
    ``None``); an error inside a Spark task is reported by its useful line, with 2 when that line blames the input,
    else 1, and the line names the log file holding the Java and Python stacks (``verbose``: they are printed
    instead). Ctrl-C stops the body (:mod:`jobs.interrupt`) and prints one line ending with ``after_interrupt()``
    (what a rerun does), exit 130."""
    from jobs.interrupt import EXIT_INTERRUPTED, run_interruptible

    def say_interrupted(what: str) -> None:
        hint = after_interrupt()
        print(f"{command}: {what} (Ctrl-C){': ' + hint if hint else ''}", file=sys.stderr, flush=True)

    try:
        return int(run_interruptible(body, on_second=lambda: say_interrupted("stopped at once")) or 0)
    except KeyboardInterrupt:
        say_interrupted("interrupted")
        return EXIT_INTERRUPTED
    except Exception as exc:
        code = exit_code(exc)
        if code is not None:
            print(f"{command}: error: {exc}", file=sys.stderr)
            return code
        module = type(exc).__module__ or ""
        if not module.startswith(("pyspark", "py4j")):
            raise
        from pipelines.spark.session import spark_log_file, task_error_message

        message = task_error_message(exc) or type(exc).__name__
        log = spark_log_file()
        if verbose or not log:
            traceback.print_exc()
        else:
            _append_traceback(log, command)
            message += f" (the Java and Python stacks: {log}; --verbose prints them here)"
        print(f"{command}: error in a Spark task: {message}", file=sys.stderr)
        return USAGE if message.startswith(_USER_ERRORS_IN_TASKS) else RUN_FAILED


def _append_traceback(path: str, command: str) -> None:
    """Add the driver's traceback of the exception being handled to the log file ``path`` (best effort: the log is
    for reading after the fact; the error line is printed either way)."""
    try:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(f"\n{command}: the driver's traceback\n{traceback.format_exc()}")
    except OSError:
        pass
