"""Progress inside a stage: lines paced by a fake clock, only on a terminal; task counts of a job group read from a
fake status tracker; the watcher thread driven step by step by a fake wait (no sleeps, no timing); and Spark's own
tracker giving the counts of a real job group."""

from __future__ import annotations

from collections import namedtuple

import pytest

from pipelines.progress import SparkStageWatcher, StageProgress, TaskCounts, format_duration, spark_task_counts

Job = namedtuple("Job", "jobId stageIds status")
Stage = namedtuple("Stage", "stageId numTasks numActiveTasks numCompletedTasks")


class FakeTracker:
    def __init__(self, groups, jobs, stages):
        self.groups, self.jobs, self.stages = groups, jobs, stages

    def getJobIdsForGroup(self, group):
        return self.groups.get(group, [])

    def getJobInfo(self, job_id):
        return self.jobs.get(job_id)

    def getStageInfo(self, stage_id):
        return self.stages.get(stage_id)


def clock_of(times):
    values = iter(times)
    return lambda: next(values)


def test_durations():
    assert [format_duration(s) for s in (0, 42, 185, 3600 * 2 + 7 * 60 + 20)] == ["0s", "42s", "3m05s", "2h07m"]


def test_lines_are_paced_and_only_on_a_terminal():
    lines = []
    progress = StageProgress("chunks", lines.append, terminal=True, every=5.0,
                             clock=clock_of([100.0, 103.0, 106.0, 108.0, 111.0]))
    for done in (10, 20, 30, 40):
        progress.update(TaskCounts(job=7, done=done, total=100, finished_tasks=12))
    # 103: too early; 106: a line; 108: too early after it; 111: a line
    assert lines == [
        "[chunks] job 7: 20/100 tasks (20%), 3.3 tasks/s, ETA 24s, 12 tasks in earlier jobs; 6s in this stage",
        "[chunks] job 7: 40/100 tasks (40%), 3.6 tasks/s, ETA 16s, 12 tasks in earlier jobs; 11s in this stage",
    ]
    quiet = []
    off_terminal = StageProgress("chunks", quiet.append, terminal=False, clock=clock_of([0.0, 60.0]))
    off_terminal.update(TaskCounts(job=1, done=5, total=10, finished_tasks=0))
    assert quiet == []


def test_task_counts_of_a_group_follow_its_running_job():
    tracker = FakeTracker(
        {"shardpiece-ngrams": [3, 4], "other": [9]},
        {3: Job(3, [10, 11], "SUCCEEDED"), 4: Job(4, [12, 13], "RUNNING"), 9: Job(9, [20], "RUNNING")},
        {10: Stage(10, 8, 0, 8), 11: Stage(11, 4, 0, 4), 12: Stage(12, 6, 0, 6), 13: Stage(13, 50, 2, 20),
         20: Stage(20, 1, 1, 0)})
    # job 4's map stage is done, its reduce stage under way; job 3's 12 tasks are finished
    assert spark_task_counts(tracker, "shardpiece-ngrams") == TaskCounts(job=4, done=20, total=50, finished_tasks=12)
    assert spark_task_counts(tracker, "nothing") is None


def test_the_watcher_polls_until_stopped():
    tracker = FakeTracker({"g": [1]}, {1: Job(1, [5], "RUNNING")}, {5: Stage(5, 10, 1, 0)})
    lines, steps = [], []
    progress = StageProgress("read", lines.append, terminal=True, every=1.0, clock=clock_of([0.0, 1.0, 2.0, 3.0]))

    def wait(seconds):  # the fake wait: three polls, then stopped
        steps.append(seconds)
        if len(steps) <= 3:
            tracker.stages[5] = Stage(5, 10, 1, 3 * len(steps))
            return False
        return True

    watcher = SparkStageWatcher(tracker, "g", progress, wait=wait)
    watcher.run()  # in this thread: the steps are counted, not timed
    assert steps == [1.0] * 4
    assert [line.split(" tasks (")[0] for line in lines] == ["[read] job 1: 3/10", "[read] job 1: 6/10",
                                                             "[read] job 1: 9/10"]


@pytest.mark.spark
def test_spark_status_tracker_gives_the_counts_of_a_job_group(spark):
    from pipelines.spark.session import describe_jobs

    group = describe_jobs(spark, "progress-test")
    try:
        spark.sparkContext.parallelize(range(100), 4).map(lambda x: x * 2).count()
    finally:
        spark.sparkContext.setJobGroup("", "")
    tracker = spark.sparkContext.statusTracker()
    (job_id,) = tracker.getJobIdsForGroup(group)
    assert str(tracker.getJobInfo(job_id).status) == "SUCCEEDED"
    assert spark_task_counts(tracker, group) is None  # nothing of the group runs now


@pytest.mark.spark
def test_tokenize_runs_its_job_in_its_group_and_prints_no_progress_line_off_a_terminal(spark, tmp_path, capsys):
    from pipelines.tokenize import TokenizeConfig, run_tokenize
    from pipelines.tokenize.run import JOB_GROUP
    from tokenizer import Model

    model = str(tmp_path / "m.shardpiece")
    Model.byte_level([b"th", b"the"], [-2.0, -1.0]).save(model)
    (tmp_path / "in.txt").write_text("".join(f"the thing {i}\n" for i in range(300)))
    before = set(spark.sparkContext.statusTracker().getJobIdsForGroup(JOB_GROUP))
    run_tokenize(spark, TokenizeConfig(model=model, inputs=[str(tmp_path / "in.txt")], output=str(tmp_path / "out"),
                                       progress_seconds=0.5))  # a line every poll, were stderr a terminal
    jobs = set(spark.sparkContext.statusTracker().getJobIdsForGroup(JOB_GROUP)) - before
    assert jobs and spark.sparkContext.getLocalProperty("spark.jobGroup.id") is None
    err = capsys.readouterr().err
    assert "[tokenize] job" not in err and "tokenize: 300 documents" in err
