"""Ctrl-C: one line and exit 130 saying what a rerun does, in the body's Python code and inside a Spark job; a
failure inside a Spark task is one line naming the log file that holds the stacks. The order is forced with marker
files written by the job's testing aids (a held lease, a hung task), never by sleeps."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from jobs.interrupt import EXIT_INTERRUPTED, Interrupted, run_interruptible
from pipelines.lease import HOLD_ENV

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_a_body_returns_its_value_and_raises_its_own_errors():
    assert run_interruptible(lambda: 7) == 7
    with pytest.raises(ValueError, match="bad"):
        run_interruptible(lambda: (_ for _ in ()).throw(ValueError("bad")))


def test_ctrl_c_raises_interrupted_in_the_body_and_its_finally_runs():
    started, stop, cleaned = threading.Event(), threading.Event(), []
    # as in a command's process (a SparkContext started earlier in this test session set its own handler)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)

    def body():
        try:
            started.set()
            while not stop.is_set():
                stop.wait(0.01)  # Python code between waits: where Ctrl-C lands
        finally:
            cleaned.append(True)

    def press_ctrl_c():
        started.wait()
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=press_ctrl_c).start()
    try:
        with pytest.raises(Interrupted):
            run_interruptible(body)
        assert cleaned == [True]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)


def start(argv: list[str], marker: str, env: dict | None = None) -> subprocess.Popen:
    """Start ``shardpiece ARGV`` and return once it has written ``marker`` (it is then held there)."""
    process = subprocess.Popen([sys.executable, "-m", "jobs.cli", *argv], cwd=REPO, text=True,
                               env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", **(env or {})},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 600  # a guard against a hang, not a timing assumption
    while not os.path.exists(marker):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return process


def interrupt(process: subprocess.Popen) -> tuple[int, str, str]:
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=600)
    return process.returncode, out, err


@pytest.mark.spark
def test_ctrl_c_of_train_on_spark_is_one_line_and_the_rerun_resumes(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("".join(f"line {i} of the corpus, words and more words\n" for i in range(400)))
    work = tmp_path / "work"
    argv = ["train", "--algorithm", "bpe", "--input", str(corpus), "--vocab-size", "300", "--output",
            str(tmp_path / "m.model"), "--work-dir", str(work), "--master", "local[1]"]
    hold = str(tmp_path / "release")
    process = start(argv, hold + ".held", {HOLD_ENV: hold})  # held with its lease and a running JVM
    code, out, err = interrupt(process)
    assert code == EXIT_INTERRUPTED, err
    assert err.splitlines() == [f"shardpiece train: interrupted (Ctrl-C): the stages done so far are kept in {work}; "
                                "rerun the same command to resume"]
    leases = [name for _, _, names in os.walk(work) for name in names if name == "lease.json"]
    assert leases == []  # released on the way out
    rerun = subprocess.run([sys.executable, "-m", "jobs.cli", *argv, "--quiet"], cwd=REPO, capture_output=True,
                           text=True, env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    assert (tmp_path / "m.model").stat().st_size > 0


@pytest.mark.spark
def test_ctrl_c_inside_a_spark_job_of_tokenize_is_one_line_naming_the_mode_that_finishes(tmp_path):
    from tokenizer import Model

    model = str(tmp_path / "m.shardpiece")
    Model.byte_level([b"th", b"the", b" the"], [-2.0, -1.5, -1.0]).save(model)
    corpus = tmp_path / "in.txt"
    corpus.write_text("".join(f"the thing {i}\n" for i in range(200)))
    marker = str(tmp_path / "task-started")
    config = tmp_path / "hang.yaml"
    config.write_text(f"fault_injection: {{partition: 0, marker: '{marker}', action: hang}}\n")
    out_dir = tmp_path / "out"
    # no progress line however long the busy machine takes to reach the hang (one comes every 10 s by default)
    argv = ["tokenize", "--model", model, "--input", str(corpus), "--output", str(out_dir), "--master", "local[1]",
            "--config", str(config), "--progress-seconds", "86400"]
    process = start(argv, marker)  # its task is hung inside the Spark job
    code, out, err = interrupt(process)
    assert code == EXIT_INTERRUPTED, err
    assert err.splitlines() == [f"shardpiece tokenize: interrupted (Ctrl-C): nothing of this run was committed "
                                f"({out_dir} keeps what earlier runs committed); rerun with --mode skip to tokenize "
                                "what is missing"]
    finish = subprocess.run([sys.executable, "-m", "jobs.cli", *argv, "--mode", "skip"], cwd=REPO,
                            capture_output=True, text=True, env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
                            timeout=600)  # the marker exists: the task does not hang again
    assert finish.returncode == 0, finish.stderr
    import pyarrow.dataset as ds

    assert ds.dataset(str(out_dir), format="parquet").count_rows() == 200


@pytest.mark.spark
def test_a_failed_spark_task_is_one_line_naming_the_log_with_the_stacks(tmp_path):
    import gzip

    corpus = tmp_path / "c.txt.gz"
    corpus.write_bytes(gzip.compress(b"".join(b"line %d of a corpus\n" % i for i in range(20000)))[:2000])
    work = tmp_path / "work"
    argv = [sys.executable, "-m", "jobs.cli", "train", "--input", str(corpus), "--output", str(tmp_path / "m"),
            "--vocab-size", "300", "--work-dir", str(work), "--master", "local[1]"]
    result = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=600,
                            env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"shardpiece train: error in a Spark task: cannot read input file file://{corpus}")
    (log,) = os.listdir(work / "logs")
    assert f"(the Java and Python stacks: {work / 'logs' / log}; --verbose prints them here)" in line
    text = (work / "logs" / log).read_text()
    assert "java.io.EOFException" in text and "the driver's traceback" in text
    verbose = subprocess.run(argv + ["--verbose"], cwd=REPO, capture_output=True, text=True, timeout=600,
                             env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})
    assert verbose.returncode == 2 and "java.io.EOFException" in verbose.stderr
    assert len(os.listdir(work / "logs")) == 1  # --verbose writes no log file
