from __future__ import annotations

import gc

import pytest

from pipelines.spark.worker_heap import freeze_worker_heap

pytestmark = pytest.mark.spark


def test_outside_a_spark_task_nothing_is_frozen(monkeypatch):
    # counted calls, not gc.get_freeze_count(): this process's frozen objects (tests that trained in-process froze
    # theirs) leave the count whenever another thread frees one of them
    calls = []
    monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
    assert freeze_worker_heap() is False
    assert calls == []


def _heap_after(run_task):
    """A one-task job: runs ``run_task()`` in a Python worker, then reports its heap as PySpark's collection after
    the task sees it. (The functions are defined in here so that they are pickled by value: the worker cannot
    import this test module.)"""
    run_task = {"map_shards": _shards_task, "encode_task": _encode_task}[run_task]()

    def partition(_):
        import gc as worker_gc

        from pipelines.spark import worker_heap

        result = run_task()
        yield {"result": result, "frozen_flag": worker_heap._frozen, "frozen": worker_gc.get_freeze_count(),
               "collectable": len(worker_gc.get_objects())}
    return partition


def _shards_task():
    def run():
        from pipelines.read.shards import map_shards
        from tokenizer.trainers import bytepiece  # noqa: F401  (what a counting task loads: numba, the kernels)

        return list(map_shards(len, [b"ab", b"c"], threads=1))
    return run


def _encode_task():
    def run():
        import tempfile

        import pyarrow as pa

        from pipelines.tokenize import MALFORMED, TEXT, TokenizeConfig, encode_task, task_options
        from tokenizer import Model

        model_bytes = Model.byte_level([b"ab", b"ca"], [-1.0, -1.0]).to_bytes()
        batch = pa.RecordBatch.from_arrays([pa.array([b"abc", b"cab"], pa.binary()), pa.array([False, False])],
                                           names=[TEXT, MALFORMED])
        with tempfile.TemporaryDirectory() as output:
            counts = encode_task(iter([batch]), partition=0, attempt=0, model=model_bytes, model_sha256="heap-test",
                                 output=output, run_id="run-00000",
                                 config=task_options(TokenizeConfig(model="-", inputs=["-"], output=output,
                                                                    output_format="npy",
                                                                    max_document_bytes=1 << 20)),
                                 empty_schema=None)
        return counts["documents"]
    return run


@pytest.mark.parametrize("run_task,expected", [("map_shards", [2, 1]), ("encode_task", 2)])
def test_a_worker_freezes_its_heap_after_its_first_unit_of_work(spark, run_task, expected):
    """The counting (map_shards) and encoding tasks freeze the worker's heap, so that PySpark's gc.collect() after
    each task walks only what later tasks allocate: tens of thousands of objects instead of ~150,000."""
    [report] = spark.sparkContext.parallelize([0], 1).mapPartitions(_heap_after(run_task)).collect()
    assert report["result"] == expected
    assert report["frozen_flag"] is True
    assert report["frozen"] > 50_000  # numpy, pyarrow, numba, pyspark and the kernels
    assert report["collectable"] < report["frozen"] // 2
