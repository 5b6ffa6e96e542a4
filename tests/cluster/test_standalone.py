"""End to end on a real standalone Spark cluster: a master and two workers started from the pyspark distribution
(``spark-class ...deploy.master.Master`` / ``...deploy.worker.Worker``), every process on 127.0.0.1 with free ports.

* ``shardpiece train --master spark://...`` writes the same model bytes as a local run, and ``shardpiece tokenize``
  on the same cluster gives the ids the local encoder gives;
* killing one worker (and its executor) in the middle of a training job: the job still finishes, with the same
  bytes.

Both are ``slow`` and ``spark``, and opt-in (they start five JVMs and take minutes: 11 min on a shared, heavily
loaded 2-core machine), so the default suite stays within CI's budget::

    SHARDPIECE_CLUSTER_TESTS=1 .venv/bin/python -m pytest -q tests/cluster/

The cluster is always stopped (module fixture teardown), also when a test fails. Daemon logs go to the test's
temporary directory and are shown on failure. The last recorded run is in BENCHMARKS.md ("cluster").
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from pipelines.train.bytepiece import multiset_fingerprint
from pipelines.tokenize.commit import OutputDirectory
from tokenizer.core import Tokenizer
from tokenizer.trainers.bytepiece import TrainSettings, train_bytepiece_local

pytestmark = [
    pytest.mark.slow, pytest.mark.spark,
    pytest.mark.skipif(os.environ.get("SHARDPIECE_CLUSTER_TESTS") != "1",
                       reason="starts a standalone Spark cluster: set SHARDPIECE_CLUSTER_TESTS=1 to run"),
]

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOOPBACK = "127.0.0.1"
WORKERS = 2


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        return sock.getsockname()[1]


def spark_home() -> str:
    pyspark = pytest.importorskip("pyspark")
    return os.path.dirname(pyspark.__file__)


def daemon_env(tmp) -> dict:
    env = dict(os.environ, SPARK_LOCAL_IP=LOOPBACK, SPARK_HOME=spark_home(), SPARK_DAEMON_MEMORY="384m",
               SPARK_LOG_DIR=str(tmp / "logs"), SPARK_PID_DIR=str(tmp / "pids"), SPARK_NO_DAEMONIZE="1",
               SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false")  # no fixed REST port 6066
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    return env


class Cluster:
    """A standalone master and workers as child processes (each in its own process group)."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.env = daemon_env(tmp)
        self.spark_class = os.path.join(spark_home(), "bin", "spark-class")
        self.master_port, self.master_ui = free_port(), free_port()
        self.url = f"spark://{LOOPBACK}:{self.master_port}"
        self.processes: dict[str, subprocess.Popen] = {}

    def _start(self, name: str, args: list[str]) -> None:
        log = open(self.tmp / f"{name}.log", "wb")
        self.processes[name] = subprocess.Popen([self.spark_class, *args], env=self.env, stdout=log,
                                                stderr=subprocess.STDOUT, start_new_session=True)
        log.close()

    def start(self, timeout: float = 240.0) -> None:
        self._start("master", ["org.apache.spark.deploy.master.Master", "--host", LOOPBACK, "--port",
                               str(self.master_port), "--webui-port", str(self.master_ui)])
        for i in range(WORKERS):
            work = self.tmp / f"worker-{i}"
            work.mkdir()
            self._start(f"worker-{i}", ["org.apache.spark.deploy.worker.Worker", "--host", LOOPBACK, "--port",
                                        str(free_port()), "--webui-port", str(free_port()), "--cores", "1",
                                        "--memory", "1g", "--work-dir", str(work), self.url])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, process in self.processes.items():
                if process.poll() is not None:
                    raise RuntimeError(f"{name} exited with {process.returncode}:\n{self.logs()}")
            if self.alive_workers() == WORKERS:
                return
            time.sleep(1.0)
        raise RuntimeError(f"the cluster did not come up in {timeout:.0f} s:\n{self.logs()}")

    def state(self) -> dict:
        with urllib.request.urlopen(f"http://{LOOPBACK}:{self.master_ui}/json/", timeout=5) as response:
            return json.load(response)

    def alive_workers(self) -> int:
        try:
            return sum(1 for w in self.state().get("workers", []) if w.get("state") == "ALIVE")
        except OSError:
            return 0

    def kill(self, name: str) -> None:
        """SIGKILL a daemon and everything it started (its executor JVM and Python workers): a lost machine."""
        process = self.processes[name]
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(timeout=30)

    def stop(self) -> None:
        for name in sorted(self.processes, reverse=True):  # workers first, then the master
            process = self.processes[name]
            if process.poll() is None:
                try:
                    os.killpg(process.pid, signal.SIGTERM)
                    process.wait(timeout=20)
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    try:
                        os.killpg(process.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    process.wait(timeout=20)

    def logs(self) -> str:
        parts = []
        for path in sorted(self.tmp.glob("*.log")):
            parts.append(f"--- {path.name}\n" + path.read_text(errors="replace")[-3000:])
        return "\n".join(parts)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cluster = Cluster(tmp_path_factory.mktemp("standalone"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


def corpus_lines(n: int = 900, seed: int = 21) -> list[bytes]:
    rng = random.Random(seed)
    words = ["cluster", "worker", "master", "shard", "piece", "東京", "データ", "数据", "模型", "2025", "ok"]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(1, 10))).encode() for _ in range(n)]


SETTINGS = TrainSettings(order=5, min_count=3, vocab_sizes=(300, 340))


def train_command(cluster: Cluster, corpus, output, quiet: bool = True) -> list[str]:
    return [sys.executable, "-m", "jobs.cli", "train", "--master", cluster.url, "--input", str(corpus),
            "--vocab-size", "300", "340", "--output", str(output), "--min-count", "3", "--order", "5",
            "--partitions", "6", "--holdout-fraction", "0", "--driver-memory", "1g",
            "--set", "spark.executor.memory=640m", "--work-dir", str(output) + ".work"] + (["--quiet"] if quiet else [])


def expected_models(lines) -> dict[int, bytes]:
    models = train_bytepiece_local(lines, SETTINGS, provenance={"corpus_fingerprint": multiset_fingerprint(lines)})
    return {size: model.to_bytes() for size, model in models.items()}


def job_env(cluster: Cluster) -> dict:
    return dict(cluster.env, PYTHONUNBUFFERED="1")


def test_train_and_tokenize_on_a_standalone_cluster_match_local_runs(cluster, tmp_path):
    lines = corpus_lines()
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(b"\n".join(lines) + b"\n")
    output = tmp_path / "models"
    done = subprocess.run(train_command(cluster, corpus, output), cwd=REPO, env=job_env(cluster),
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:] + cluster.logs()
    expected = expected_models(lines)
    for size in (300, 340):
        assert (output / f"bytepiece-{size}.model").read_bytes() == expected[size]
    manifest = json.loads((output / "manifest.json").read_text())
    assert manifest["spark_master"] == cluster.url and manifest["versions"]["spark"]
    assert manifest["input_fingerprint"]["files"][0]["size"] == corpus.stat().st_size

    tokens = tmp_path / "tokens"
    done = subprocess.run([sys.executable, "-m", "jobs.cli", "tokenize", "--master", cluster.url, "--model",
                           str(output / "bytepiece-340.model"), "--input", str(corpus), "--output", str(tokens),
                           "--partitions", "3", "--verify"],
                          cwd=REPO, env=job_env(cluster), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:] + cluster.logs()
    import pyarrow.parquet as pq

    shards = sorted(tokens.glob("*.parquet"))
    assert shards, sorted(os.listdir(tokens))
    ids = [tuple(row) for shard in shards for row in pq.read_table(shard).column("input_ids").to_pylist()]
    tokenizer = Tokenizer.load(str(output / "bytepiece-340.model"))
    assert sorted(ids) == sorted(tuple(tokenizer.encode(line)) for line in lines)
    assert OutputDirectory(tokens).is_complete()


def test_a_worker_killed_mid_job_still_gives_the_same_model_bytes(cluster, tmp_path):
    lines = corpus_lines(3000, seed=22)
    corpus = tmp_path / "corpus.txt"
    corpus.write_bytes(b"\n".join(lines) + b"\n")
    output = tmp_path / "models"
    job = subprocess.Popen(train_command(cluster, corpus, output, quiet=False), cwd=REPO, env=job_env(cluster),
                           stdout=subprocess.PIPE, stderr=(tmp_path / "job.err").open("wb"), text=True)
    seen = []
    try:
        for line in job.stdout:  # kill while the n-gram pass runs on both executors
            seen.append(line)
            if line.startswith("[ngrams] counting"):
                break
        time.sleep(2.0)
        assert job.poll() is None, "the job ended before a worker could be killed:\n" + "".join(seen)
        cluster.kill("worker-0")
        seen.extend(job.stdout)
        assert job.wait(timeout=900) == 0, "".join(seen) + (tmp_path / "job.err").read_text()[-4000:]
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    deadline = time.monotonic() + 60
    while cluster.alive_workers() != WORKERS - 1 and time.monotonic() < deadline:
        time.sleep(1.0)
    assert cluster.alive_workers() == WORKERS - 1
    expected = expected_models(lines)
    for size in (300, 340):
        assert (output / f"bytepiece-{size}.model").read_bytes() == expected[size]
