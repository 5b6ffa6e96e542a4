"""Shared fixtures: one Spark session for the whole test run (starting one takes ~20 s)."""

from __future__ import annotations

import os
import warnings

import pytest

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
warnings.filterwarnings("ignore", category=FutureWarning, module=r"pyspark\..*")


@pytest.fixture(scope="session")
def spark():
    """A local[2] SparkSession bound to loopback, 4 shuffle partitions, errors-only logging."""
    pytest.importorskip("pyspark")
    from pipelines.spark.session import build_session

    session = build_session(
        "local[2]", app_name="shardpiece-tests", shuffle_partitions=4, driver_memory="1g",
        extra={"spark.sql.adaptive.enabled": "false", "spark.default.parallelism": "2"},
    )
    yield session
    session.stop()
