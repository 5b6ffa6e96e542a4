"""The lease that keeps two runs out of one output: taken, refused while its holder lives, taken over when stale,
renewed, released; and two real ``shardpiece`` processes (train, tokenize in every mode), the first held by the
test hook right after it takes the lease (no sleeps: the test waits for the hook's file)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time

import pytest

from pipelines.lease import HOLD_ENV, Lease, LeaseHeld, lease_beside


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_taken_refused_released_and_taken_again(tmp_path):
    path = str(tmp_path / "work" / "lease.json")
    first = Lease(path, "the thing").acquire()
    holder = json.loads(open(path).read())
    assert holder["pid"] == os.getpid() and holder["run_id"] == first.identity["run_id"]
    with pytest.raises(LeaseHeld, match=rf"the thing is in use by another run \(pid {os.getpid()} on "):
        Lease(path, "the thing").acquire()
    first.release()
    assert not os.path.exists(path) and os.listdir(tmp_path / "work") == []  # no lock file left behind
    with Lease(path, "the thing"):
        assert os.path.exists(path)
    assert not os.path.exists(path)


def test_a_dead_holder_or_an_old_renewal_is_taken_over_with_a_line(tmp_path):
    import socket

    path = str(tmp_path / "lease.json")
    lines: list[str] = []

    def take_over(holder: dict, now: float) -> None:
        with open(path, "w") as handle:
            json.dump(holder, handle)
        lease = Lease(path, "the output", progress=lines.append, now=lambda: now).acquire()
        assert json.loads(open(path).read())["run_id"] == lease.identity["run_id"]
        lease.release()

    # its process is gone (this host), however recent its renewal
    take_over({"host": socket.gethostname(), "pid": dead_pid(), "started": 0, "run_id": "dead", "renewed": 5e9}, 5e9)
    # another host, not renewed for more than STALE_SECONDS (600)
    take_over({"host": "another-host", "pid": 1, "started": 0, "run_id": "silent", "renewed": 1000.0}, 1601.0)
    assert len(lines) == 2 and all(line.startswith("[lease] taking over the stale lease of pid ") for line in lines)
    assert "run dead" in lines[0] and "on another-host" in lines[1]
    with open(path, "w") as handle:  # renewed 600 s ago exactly, on another host: still live
        json.dump({"host": "another-host", "pid": 1, "started": 0, "run_id": "x", "renewed": 1000.0}, handle)
    with pytest.raises(LeaseHeld, match="pid 1 on another-host"):
        Lease(path, "the output", now=lambda: 1600.0).acquire()


def test_the_renewal_rewrites_the_renewal_time(tmp_path):
    path = str(tmp_path / "lease.json")
    clock = itertools.count(10, 10)
    lease = Lease(path, "x", renew_seconds=0.0, now=lambda: float(next(clock)))
    lease.acquire()
    first = json.loads(open(path).read())["renewed"]
    while json.loads(open(path).read())["renewed"] == first:  # the thread renews (counted by the clock, not timed)
        pass
    lease.release()
    assert not os.path.exists(path)


def test_lease_beside_a_directory():
    assert lease_beside("/d/out/") == "/d/.out.lease" and lease_beside("/d/out") == "/d/.out.lease"


# ------------------------------------------------------------------------------------------------ two processes
def start_held(argv: list[str], hook: str, cwd: str) -> subprocess.Popen:
    """Start ``shardpiece ARGV`` that stops right after taking its lease until ``hook`` exists; returns once it
    holds the lease (its hook file ``HOOK.held`` appeared)."""
    env = {**os.environ, HOLD_ENV: hook, "SPARK_LOCAL_IP": "127.0.0.1"}
    process = subprocess.Popen([sys.executable, "-m", "jobs.cli", *argv], env=env, cwd=cwd,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 600  # a guard against a hang, not a timing assumption
    while not os.path.exists(hook + ".held"):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.05)
    return process


def run_cli(argv: list[str], cwd: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != HOLD_ENV}
    return subprocess.run([sys.executable, "-m", "jobs.cli", *argv], env={**env, "SPARK_LOCAL_IP": "127.0.0.1"},
                          cwd=cwd, capture_output=True, text=True, timeout=600)


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_a_second_train_of_the_same_run_key_exits_2_naming_the_first(tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("".join(f"line {i} of the corpus, words and more words\n" for i in range(400)))
    argv = ["train", "--algorithm", "bpe", "--input", str(corpus), "--vocab-size", "300", "--output",
            str(tmp_path / "m.model"), "--work-dir", str(tmp_path / "work"), "--quiet"]
    hook = str(tmp_path / "release")
    first = start_held(argv, hook, REPO)
    holder = json.loads(open(hook + ".held").read())
    try:
        second = run_cli(argv, REPO)
        assert second.returncode == 2, second.stderr
        [line] = [line for line in second.stderr.splitlines() if line.strip()]
        assert f"is in use by another run (pid {holder['pid']} on " in line and "wait for it to finish" in line
    finally:
        open(hook, "w").close()
        out, err = first.communicate(timeout=600)
    assert first.returncode == 0, err
    assert run_cli(argv, REPO).returncode == 0  # released: the next run goes ahead


@pytest.mark.spark
def test_a_second_tokenize_into_one_output_exits_2_in_every_mode_before_its_jvm(tmp_path):
    from tokenizer import Model

    model = tmp_path / "m.model"
    Model.byte_level([b"ab", b"cd"], [-1.0, -1.0]).save(str(model))
    (tmp_path / "in.txt").write_text("abcd\n" * 100)
    out = tmp_path / "out"
    base = ["tokenize", "--model", str(model), "--input", str(tmp_path / "in.txt"), "--output", str(out),
            "--output-format", "parquet", "--master", "local[1]"]
    hook = str(tmp_path / "release")
    first = start_held(base, hook, REPO)
    holder = json.loads(open(hook + ".held").read())
    try:
        for mode in ("error", "overwrite", "skip", "incremental"):
            second = run_cli(base + ["--mode", mode], REPO)
            assert second.returncode == 2, (mode, second.stderr)
            lines = [line for line in second.stderr.splitlines() if line.strip()]
            assert len(lines) == 1 and f"(pid {holder['pid']} on " in lines[0], (mode, lines)
            assert "SparkContext" not in second.stderr and not out.exists()
    finally:
        open(hook, "w").close()
        _, err = first.communicate(timeout=600)
    assert first.returncode == 0, err
    assert not os.path.exists(lease_beside(str(out))) and (out / "_manifest.parquet").exists()
