"""session_config: the small local driver (bytepiece training) and what stays as Spark sets it."""

from __future__ import annotations

import pytest

import os

from pipelines.spark.session import (
    SMALL_DRIVER_JAVA_OPTIONS, SMALL_DRIVER_MEMORY, is_local_master, local_cores, session_config,
)


@pytest.fixture(autouse=True)
def no_memory_environment(monkeypatch):
    monkeypatch.delenv("SHARDPIECE_DRIVER_MEMORY", raising=False)
    monkeypatch.delenv("SHARDPIECE_MASTER", raising=False)
    monkeypatch.delenv("SHARDPIECE_DRIVER_HOST", raising=False)


@pytest.mark.parametrize("master, local", [
    ("local", True), ("local[2]", True), ("local[*]", True), ("local[4,2]", True),
    ("local-cluster[2,1,1024]", False), ("spark://127.0.0.1:7077", False), ("yarn", False), ("local[x]", False),
])
def test_is_local_master(master, local):
    assert is_local_master(master) is local


def test_small_driver_on_a_local_master_gets_the_small_jvm():
    conf = session_config("local[2]", small_driver=True)
    assert conf["spark.driver.memory"] == SMALL_DRIVER_MEMORY
    assert conf["spark.driver.extraJavaOptions"].startswith(SMALL_DRIVER_JAVA_OPTIONS + " ")
    assert "-Dlog4j2.configurationFile=" in conf["spark.driver.extraJavaOptions"]
    assert "UseSerialGC" not in conf["spark.executor.extraJavaOptions"]
    # the small JVM alone keeps one reused Python worker per core (what the tokenize job wants)
    assert conf["spark.python.worker.reuse"] == "true"
    assert conf["spark.task.cpus"] == "1"
    assert "spark.sql.files.maxPartitionBytes" not in conf


def test_single_worker_on_a_local_master_runs_one_lean_worker():
    conf = session_config("local[2]", single_worker=True)
    assert conf["spark.task.cpus"] == "2"
    assert int(conf["spark.sql.execution.arrow.maxBytesPerBatch"]) > 0
    assert conf["spark.python.worker.reuse"] == "false"
    assert int(conf["spark.sql.files.maxPartitionBytes"]) > 0
    assert int(conf["spark.sql.adaptive.advisoryPartitionSizeInBytes"]) > 0
    assert "UseSerialGC" not in conf["spark.driver.extraJavaOptions"]  # the JVM is small_driver's business


@pytest.mark.parametrize("master", ["local-cluster[2,1,1024]", "spark://127.0.0.1:7077"])
def test_cluster_masters_keep_their_settings(master):
    small, default = session_config(master, small_driver=True, single_worker=True), session_config(master)
    assert small == default
    assert small["spark.driver.memory"] == "4g"
    assert "UseSerialGC" not in small["spark.driver.extraJavaOptions"]
    assert "spark.sql.execution.arrow.maxBytesPerBatch" not in small
    assert "spark.sql.files.maxPartitionBytes" not in small
    assert small["spark.python.worker.reuse"] == "true"
    assert small["spark.task.cpus"] == "1"


@pytest.mark.parametrize("master, cores", [
    ("local", 1), ("local[2]", 2), ("local[4,2]", 4), ("local[*]", max(1, os.cpu_count() or 1)),
])
def test_single_worker_runs_one_task_over_all_cores(master, cores):
    assert local_cores(master) == cores
    assert session_config(master, single_worker=True)["spark.task.cpus"] == str(cores)


def test_local_cores_of_a_cluster_master_is_an_error():
    with pytest.raises(ValueError, match="not a local master"):
        local_cores("local-cluster[2,1,1024]")


def test_without_small_driver_a_local_master_is_unchanged():
    conf = session_config("local[2]")
    assert conf["spark.driver.memory"] == "4g"
    assert conf["spark.task.cpus"] == "1"
    assert "UseSerialGC" not in conf["spark.driver.extraJavaOptions"]


def test_given_driver_memory_wins_over_the_small_default(monkeypatch):
    assert session_config("local[2]", small_driver=True, driver_memory="2g")["spark.driver.memory"] == "2g"
    monkeypatch.setenv("SHARDPIECE_DRIVER_MEMORY", "1500m")
    assert session_config("local[2]", small_driver=True)["spark.driver.memory"] == "1500m"
    assert session_config("local[2]", small_driver=True, driver_memory="3g")["spark.driver.memory"] == "3g"


def test_extra_settings_override_the_small_defaults():
    conf = session_config("local[2]", small_driver=True, extra={"spark.driver.extraJavaOptions": "-Xss1m"})
    assert conf["spark.driver.extraJavaOptions"] == "-Xss1m"


def test_an_out_of_memory_error_names_the_fix():
    from pipelines.spark.session import task_error_message

    class Py4JJavaError(Exception):
        pass

    Py4JJavaError.__module__ = "py4j.protocol"
    error = Py4JJavaError("An error occurred while calling o123.collectToPython.\n"
                          ": java.lang.OutOfMemoryError: Java heap space\n\tat java.base/java.util.Arrays.copyOf")
    message = task_error_message(error)
    assert "OutOfMemoryError" in message and "--driver-memory" in message
    assert task_error_message(ValueError("java.lang.OutOfMemoryError")) is None  # not from Spark: left alone
