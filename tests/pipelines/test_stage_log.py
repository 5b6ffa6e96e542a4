"""The training stages' log: each stage's driver peak memory, nested stages included."""

from __future__ import annotations

import time

import numpy as np
import pytest

from pipelines.train.workdir import StageLog
from tokenizer.memory import resident_peak_bytes

MIB = 2**20


def _hold(mib: int) -> np.ndarray:
    return np.ones(mib * MIB, np.uint8)  # written, so resident


def test_resident_peak_counts_a_freed_block_until_reset():
    before = resident_peak_bytes(reset=True)
    if before is None:
        pytest.skip("no /proc/self/status here")
    block = _hold(256)
    del block
    peak = resident_peak_bytes(reset=True)
    assert peak >= before + 200 * MIB  # the block was resident at some point
    after = resident_peak_bytes()
    if after == peak:
        pytest.skip("this kernel refuses to reset the peak (/proc/self/clear_refs)")
    assert after < peak - 100 * MIB  # started again from what is resident now


def test_each_stage_reports_its_own_peak_and_an_outer_stage_its_inner_ones():
    if resident_peak_bytes(reset=True) is None:
        pytest.skip("no /proc/self/status here")
    lines: list[str] = []
    log = StageLog(progress=lines.append)
    outer = time.perf_counter()
    started = time.perf_counter()
    block = _hold(256)
    del block
    log.add("inner", started, items=1)
    started = time.perf_counter()
    log.add("quiet", started)
    log.add("outer", outer)
    inner, quiet, whole = log.reports
    assert inner.driver_peak_mib >= quiet.driver_peak_mib + 200 or quiet.driver_peak_mib == inner.driver_peak_mib
    assert whole.driver_peak_mib >= inner.driver_peak_mib  # the inner stage ran inside the outer one
    assert inner.to_dict()["driver_peak_mib"] == inner.driver_peak_mib and "ended" not in inner.to_dict()
    assert lines[0] == "[inner] %.1f s: items 1" % inner.seconds
