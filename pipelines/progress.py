"""Progress inside a long stage: the tasks of its running Spark job done of total, a rate and an ETA, as a line every
few seconds on a terminal (nothing more when the output is not a terminal: the stage's own line, printed when it
ends, is then its one line; nothing with ``--quiet``).

:class:`StageProgress` formats and paces the lines of one stage (its clock is injectable: tests pass a fake one);
:func:`spark_task_counts` reads the counts of a Spark job group from Spark's status tracker;
:class:`SparkStageWatcher` is the thread that polls it while a stage runs. No pyspark import here: the tracker is
passed in. Example (a fake clock at 0, 10 and 20 s)::

    >>> lines, times = [], iter([0.0, 10.0, 20.0])
    >>> p = StageProgress("ngrams", lines.append, terminal=True, clock=lambda: next(times))
    >>> p.update(TaskCounts(job=1, done=30, total=120, finished_tasks=0))
    >>> p.update(TaskCounts(job=1, done=60, total=120, finished_tasks=0))
    >>> lines
    ['[ngrams] job 1: 30/120 tasks (25%), 3.0 tasks/s, ETA 30s; 10s in this stage', \
'[ngrams] job 1: 60/120 tasks (50%), 3.0 tasks/s, ETA 20s; 20s in this stage']
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

#: seconds between two progress lines on a terminal
PROGRESS_SECONDS = 5.0


def format_duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``2h07m``: ``format_duration(185)`` -> ``'3m05s'``."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


@dataclass(frozen=True)
class TaskCounts:
    """Tasks of a stage's running Spark job (``job``: Spark's job id, ``done`` of ``total`` tasks of its active
    stages) and of its jobs already finished (``finished_tasks``)."""

    job: int
    done: int
    total: int
    finished_tasks: int


@dataclass
class StageProgress:
    """The progress lines of stage ``stage``, passed to ``say``: at most one per ``every`` seconds of ``clock`` and
    only on a ``terminal``. The rate is over the running job's tasks since it was first seen."""

    stage: str
    say: Callable[[str], None]
    terminal: bool
    every: float = PROGRESS_SECONDS
    clock: Callable[[], float] = time.monotonic
    started: float = field(init=False)
    _last: float = field(init=False)
    _job_seen: dict = field(init=False, default_factory=dict)  # job id -> (time, tasks done) when first seen

    def __post_init__(self) -> None:
        self.started = self._last = self.clock()

    def update(self, counts: TaskCounts) -> None:
        """Say a line for ``counts`` if it is time to (see the class docstring)."""
        now = self.clock()
        first_time, first_done = self._job_seen.setdefault(counts.job, (self._last, 0))
        if not self.terminal or now - self._last < self.every or counts.total <= 0:
            return
        self._last = now
        self.say(self.line(counts, now, (counts.done - first_done) / max(now - first_time, 1e-9)))

    def line(self, counts: TaskCounts, now: float, rate: float) -> str:
        """``[stage] job J: D/T tasks (P%), R tasks/s, ETA E; S in this stage``."""
        share = counts.done / counts.total
        eta = f", ETA {format_duration((counts.total - counts.done) / rate)}" if rate > 0 else ""
        before = f", {counts.finished_tasks:,} tasks in earlier jobs" if counts.finished_tasks else ""
        return (f"[{self.stage}] job {counts.job}: {counts.done:,}/{counts.total:,} tasks ({100 * share:.0f}%), "
                f"{rate:.1f} tasks/s{eta}{before}; {format_duration(now - self.started)} in this stage")


def spark_task_counts(tracker: Any, group: str) -> TaskCounts | None:
    """The counts of job group ``group`` from a Spark status tracker (``SparkContext.statusTracker()``): the
    newest running job's active stages, and the completed tasks of the group's other jobs; ``None`` when no job
    of the group runs."""
    running, finished = None, 0
    for job_id in sorted(tracker.getJobIdsForGroup(group)):
        job = tracker.getJobInfo(job_id)
        if job is None:
            continue
        stages = [tracker.getStageInfo(stage_id) for stage_id in job.stageIds]
        stages = [info for info in stages if info is not None]
        if str(job.status) == "RUNNING":
            running = (job_id, stages)
        else:
            finished += sum(info.numCompletedTasks for info in stages)
    if running is None:
        return None
    job_id, stages = running
    active = [info for info in stages  # the stages under way (a shuffle's map side may be done, its reduce not)
              if info.numActiveTasks > 0 or 0 < info.numCompletedTasks < info.numTasks] or stages
    return TaskCounts(job=job_id, done=sum(info.numCompletedTasks for info in active),
                      total=sum(info.numTasks for info in active), finished_tasks=finished)


class SparkStageWatcher(threading.Thread):
    """Polls ``tracker`` for job group ``group`` every ``progress.every`` seconds (``wait``: an Event's wait,
    injectable) and passes the counts to ``progress`` until :meth:`stop`."""

    def __init__(self, tracker: Any, group: str, progress: StageProgress,
                 wait: Callable[[float], bool] | None = None):
        super().__init__(name=f"progress-{progress.stage}", daemon=True)
        self.tracker, self.group, self.progress = tracker, group, progress
        self._stopped = threading.Event()
        self._wait = wait or self._stopped.wait

    def run(self) -> None:
        while not self._wait(self.progress.every) and not self._stopped.is_set():
            try:
                counts = spark_task_counts(self.tracker, self.group)
            except Exception:  # the session is stopping: progress is not worth an error
                return
            if counts is not None:
                self.progress.update(counts)

    def stop(self) -> None:
        self._stopped.set()
