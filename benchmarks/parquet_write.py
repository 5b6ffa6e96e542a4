"""CPU and size of writing the tokenize job's Parquet output, per codec and writer setting, without Spark.

    .venv/bin/python benchmarks/parquet_write.py              # en.train's ids (the tokenize benchmark's model)
    .venv/bin/python benchmarks/parquet_write.py --rows 200000

The ids are those of ``benchmarks/tokenize_job.py`` (its SentencePiece model on en.train, every line one document),
encoded once. Each variant writes all of them, with an int64 ``id`` column and ``num_tokens``, in batches of
10,000 documents (one batch per row group, as the job's tasks write) to one file; best process CPU of
``--repeats``, interleaved, and the file's size:

* ``job writer, CODEC``: :func:`pipelines.tokenize.writers.open_shard_writer` as the job calls it, for every codec of
  ``--parquet-compression``;
* ``zstd, ...``: ``pyarrow.parquet.ParquetWriter`` with the job writer's settings plus one change (statistics off,
  data page version 2.0, 8 MB data pages, 65,536-value write batches, BYTE_STREAM_SPLIT encoding of the ids);
* ``megatron writer``: the Megatron shard writer on the same ids (raw token bytes and an index), for scale.

The question it answers: how much of the job's CPU the Parquet output costs, and whether a writer setting the
readers of the output all understand would make it cheaper. Results: ``benchmarks/results/parquet-write.json``.
"""

from __future__ import annotations

import os
import sys
import time

# Run as a script, sys.path[0] is benchmarks/: put the repository root there too, for ``benchmarks.common``.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(_HERE))

import argparse  # noqa: E402
import shutil  # noqa: E402

from benchmarks import common  # noqa: E402

BATCH_ROWS = 10_000
IDS_LEAF = "input_ids.list.element"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", default="en", choices=common.CORPORA)
    parser.add_argument("--corpora", default=common.DEFAULT_CORPORA)
    parser.add_argument("--work", default=common.DEFAULT_WORK)
    parser.add_argument("--vocab-size", type=int, default=32000)
    parser.add_argument("--sp-train-bytes", type=int, default=common.DEFAULT_TRAIN_BYTES)
    parser.add_argument("--rows", type=int, default=0, help="use only the first N lines (default: all)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipelines.tokenize.writers import PARQUET_CODECS, ParquetShardWriter, open_shard_writer
    from tokenizer import Tokenizer

    lines = common.read_lines(common.corpus_path(args.corpora, args.corpus, "train"))
    if args.rows:
        lines = lines[:args.rows]
    tokenizer = Tokenizer.load(common.lossless_sentencepiece_model(args))
    ids = tokenizer.encode_batch(pa.array(lines, pa.string()), num_threads=1)
    documents, tokens = len(ids), len(ids.values)
    print(f"{args.corpus}.train: {documents:,} documents, {tokens:,} ids; {common.load_text()}", flush=True)
    columns = pa.table({"id": pa.array(np.arange(documents, dtype=np.int64))})
    directory = os.path.join(args.work, "parquet-write")
    os.makedirs(directory, exist_ok=True)
    stem = os.path.join(directory, "shard")

    def write_all(writer) -> int:
        """Write every document with ``writer`` in the job's batches; returns the shard's bytes."""
        for start in range(0, documents, BATCH_ROWS):
            writer.write(columns.slice(start, BATCH_ROWS), ids.slice(start, BATCH_ROWS))
        return sum(os.path.getsize(os.path.join(directory, name)) for name in writer.close())

    def job_writer(output_format: str, codec: str = "zstd"):
        return lambda: write_all(open_shard_writer(output_format, stem, vocab_size=args.vocab_size,
                                                   compression=codec))

    def changed_writer(**changes):
        """The job's zstd Parquet writer with ``changes`` to the options it opens its ``ParquetWriter`` with."""
        class ChangedWriter(ParquetShardWriter):
            def _open(self, schema):
                return pq.ParquetWriter(self.stem + ".parquet", schema, **{"compression": self.compression,
                                                                          "use_dictionary": False, **changes})
        return lambda: write_all(ChangedWriter(stem, args.vocab_size))

    systems = {f"job writer, {codec}": job_writer("parquet", codec) for codec in PARQUET_CODECS}
    systems.update({
        "zstd, statistics off": changed_writer(write_statistics=False),
        "zstd, data page version 2.0": changed_writer(data_page_version="2.0"),
        "zstd, 8 MB data pages": changed_writer(data_page_size=8 << 20),
        "zstd, write batches of 65,536 values": changed_writer(write_batch_size=65536),
        "zstd, BYTE_STREAM_SPLIT ids": changed_writer(
            column_encoding={IDS_LEAF: "BYTE_STREAM_SPLIT", "id": "PLAIN", "num_tokens": "PLAIN"}),
        "megatron writer": job_writer("megatron"),
    })
    cpu = {name: float("inf") for name in systems}
    sizes: dict[str, int] = {}
    for _ in range(args.repeats):  # interleaved, as common.interleaved_best, but timing process CPU
        for name, function in systems.items():
            started = time.process_time()
            sizes[name] = function()
            cpu[name] = min(cpu[name], time.process_time() - started)
    shutil.rmtree(directory, ignore_errors=True)

    reference = cpu["job writer, zstd"]
    rows = [[name, cpu[name], cpu[name] / reference, sizes[name] / 1e6, sizes[name] / tokens]
            for name in systems]
    table = common.markdown_table(["writer", "CPU s (best)", "x job writer zstd", "file MB", "bytes per id"], rows)
    print()
    print(table)
    print(common.load_text())
    path = common.write_results("parquet-write", {
        "corpus": args.corpus, "documents": documents, "ids": tokens, "batch_rows": BATCH_ROWS,
        "cpu_seconds": cpu, "file_bytes": sizes, "table": table,
    })
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
