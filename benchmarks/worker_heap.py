"""What PySpark's garbage collection after every task costs a tokenize worker, with and without a frozen heap.

    .venv/bin/python benchmarks/worker_heap.py

PySpark's daemon calls ``gc.collect()`` in a reused Python worker after each task. This script builds a process
like a tokenize worker (imports pyspark's worker, pyarrow, numpy, the pipelines; loads a model and encodes a
batch, which fetches the kernels from the Numba cache), then times ``gc.collect()`` ``--repeats`` times, freezes
the heap as :func:`pipelines.spark.worker_heap.freeze_worker_heap` does in a Spark task (``gc.freeze()``), and times it
again. The model is the tokenize benchmark's sentencepiece model when it exists, else a small byte-level one.
Results go to ``benchmarks/results/worker-heap.json``.
"""

from __future__ import annotations

import common

import argparse  # noqa: E402
import gc  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default=common.DEFAULT_WORK)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args(argv)

    import pyarrow as pa
    import pyspark.worker  # noqa: F401 - what a worker has imported
    import pipelines.read.arrow_read  # noqa: F401
    import pipelines.tokenize.writers  # noqa: F401
    from pipelines.tokenize import load_tokenizer_bytes
    from tokenizer import Model

    model_path = os.path.join(args.work, "sp-unigram-en-13999953b-identity-32000.model")
    if os.path.isfile(model_path):
        with open(model_path, "rb") as handle:
            model_bytes = handle.read()
        model_name = os.path.basename(model_path)
    else:
        model_bytes, model_name = Model.byte_level([b"the", b" a"], [-1.0, -1.0]).to_bytes(), "byte-level (2 pieces)"
    tokenizer = load_tokenizer_bytes(model_bytes, "benchmark")
    tokenizer.encode_batch(pa.array(["a first batch of text"] * 1000), num_threads=1)

    def timed_collections() -> list[float]:
        times = []
        for _ in range(args.repeats):
            started = time.perf_counter()
            gc.collect()
            times.append(time.perf_counter() - started)
        return sorted(times)

    tracked_before = len(gc.get_objects())
    before = timed_collections()
    gc.freeze()
    after = timed_collections()
    rows = [["not frozen", tracked_before, before[0] * 1e6, before[len(before) // 2] * 1e6],
            ["frozen (gc.freeze)", len(gc.get_objects()), after[0] * 1e6, after[len(after) // 2] * 1e6]]
    table = common.markdown_table(["heap", "objects a collection walks", "gc.collect() us (best)",
                                   "gc.collect() us (median)"], rows)
    print(f"model: {model_name}; {common.load_text()}")
    print(table)
    path = common.write_results("worker-heap", {"model": model_name, "repeats": args.repeats, "table": table,
                                              "objects": [tracked_before, len(gc.get_objects())],
                                              "frozen_objects": gc.get_freeze_count(),
                                              "seconds_not_frozen": before, "seconds_frozen": after})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
