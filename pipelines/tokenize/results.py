"""The tokenize job's results: the checks a run passes before it is committed, the run's summary (counts,
tokens-per-document quantiles, bad rows, throughput), and merging a committed Megatron output into one dataset."""

from __future__ import annotations

import os
from typing import Any

from pipelines.tokenize.commit import OutputDirectory, TaskResult
from pipelines.tokenize.options import BAD_ROW_KINDS, TokenizeConfig
from pipelines.tokenize.stats import histogram_quantiles
from pipelines.tokenize.writers import shard_document_count
from tokenizer.errors import InputError
from tokenizer.interop.megatron import merge_datasets


def _check_results(results: list[TaskResult], config: TokenizeConfig, expected_rows: int | None) -> None:
    """Refuse to commit when a partition reported twice, a shard's metadata disagrees with its task's counts, the
    decoded output differs from the input, or (verify) the rows read differ from an independent count."""
    partitions = [r.partition for r in results]
    if len(set(partitions)) != len(partitions):
        raise InputError(f"partitions reported twice in {sorted(partitions)}: not committing")
    for result in results:
        counted = shard_document_count(config.output_format, result.stem)
        if counted != result.documents:
            raise InputError(f"shard {result.stem} holds {counted} documents, its task wrote {result.documents}")
        skipped = sum(result.stats[k] for k in BAD_ROW_KINDS) - result.stats["kept_bad_rows"]
        if result.stats["rows"] != result.documents + skipped:
            raise InputError(f"partition {result.partition}: {result.stats['rows']} rows read but "
                             f"{result.documents} written and {skipped} skipped")
        if result.stats["verify_mismatches"]:
            raise InputError(f"verify: {result.stats['verify_mismatches']} documents of partition {result.partition} "
                             f"do not decode to their input, e.g. {result.stats['mismatch_examples'][0]}; nothing "
                             "was committed. Is the model lossless (byte fallback, identity normalizer)?")
    if expected_rows is not None:
        read = sum(r.stats["rows"] for r in results)
        if expected_rows != read:
            raise InputError(f"verify: the input has {expected_rows} rows but the tasks read {read}; nothing was "
                             "committed")


def _summary(config, out, run_id, results, new_files, new_empty, input_format, sha256, seconds) -> dict[str, Any]:
    histogram: dict[int, int] = {}
    totals = {"rows": 0, "kept_bad_rows": 0, "altered_rows": 0, "verified": 0, **{k: 0 for k in BAD_ROW_KINDS}}
    encode_seconds = 0.0
    for result in results:
        for key in totals:
            totals[key] += result.stats[key]
        for bucket, count in result.stats["histogram"].items():
            histogram[int(bucket)] = histogram.get(int(bucket), 0) + count
        encode_seconds += result.stats["encode_seconds"]
    documents = sum(r.documents for r in results)
    tokens = sum(r.tokens for r in results)
    text_bytes = sum(r.bytes for r in results)
    quantiles = histogram_quantiles(histogram, [0.5, 0.9, 0.99])
    bad_total = sum(totals[k] for k in BAD_ROW_KINDS)
    return {
        "status": "committed", "run_id": run_id, "output": out.path, "output_format": config.output_format,
        "model": os.path.abspath(config.model), "model_sha256": sha256, "input_format": input_format,
        "input_files": [f.path for f in new_files], "empty_input_files": [f.path for f in new_empty],
        "rows_read": totals["rows"], "documents": documents, "bytes": text_bytes, "tokens": tokens,
        "bytes_per_token": text_bytes / tokens if tokens else 0.0,
        "tokens_per_document": {
            "min": min((r.stats["min_tokens"] for r in results if r.documents), default=0), **quantiles,
            "max": max((r.stats["max_tokens"] for r in results), default=0),
            "mean": tokens / documents if documents else 0.0,
            "note": "exact below 1024 tokens, within 1% above",
        },
        "bad_rows": {"policy": config.on_bad_row, "total": bad_total,
                     **{k: totals[k] for k in BAD_ROW_KINDS},
                     "kept": totals["kept_bad_rows"], "skipped": bad_total - totals["kept_bad_rows"],
                     "altered_text": totals["altered_rows"]},
        "verify": {"enabled": config.verify, "rate": config.verify_rate if config.verify else 0.0,
                   "documents_checked": totals["verified"], "mismatches": 0},
        "partitions": len(results), "seconds": seconds, "encode_seconds_total": encode_seconds,
        "throughput": {"mb_per_s": text_bytes / 1e6 / seconds if seconds else 0.0,
                       "documents_per_s": documents / seconds if seconds else 0.0,
                       "tokens_per_s": tokens / seconds if seconds else 0.0},
        "add_bos": config.add_bos, "add_eos": config.add_eos,
    }


def merge_megatron(output_dir: str, prefix: str):
    """Merge the committed Megatron shards of ``output_dir`` (manifest order) into ``prefix.bin``/``prefix.idx``."""
    out = OutputDirectory(output_dir)
    manifest = out.manifest()
    if manifest is None or not out.is_complete():
        raise InputError(f"{out.path} is not a complete tokenize output (its _manifest.parquet is missing or marks a "
                         "commit under way): finish or rerun the job first")
    if manifest.get("output_format") != "megatron":
        raise InputError(f"{out.path} holds {manifest.get('output_format')} shards, not megatron")
    stems = out.committed_stems()
    if not stems:
        raise InputError(f"{out.path} has no shards to merge")
    return merge_datasets(stems, prefix)
