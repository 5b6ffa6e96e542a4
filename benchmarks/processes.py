"""Measuring a benchmark's processes: the peak memory of a process tree (RSS and PSS), sampled while a command runs,
its wall and CPU time, and killing a tree that runs too long. Used through :func:`run_measured`::

    run = run_measured([sys.executable, "-c", "print(1)"])   # run.seconds, run.peak_tree_bytes, ...
"""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence


def load_average() -> dict[str, float]:
    one, five, fifteen = os.getloadavg()
    return {"load1": round(one, 2), "load5": round(five, 2), "load15": round(fifteen, 2)}


@dataclass
class TreeMemory:
    """Peak resident memory of a process and all its descendants, sampled every ``interval`` seconds.

    ``peak_total_mib``: the largest sum of RSS over the tree at one sample (shared pages, e.g. of forked workers,
    count once per process, so this is an upper bound); ``peak_single_mib``/``peak_single_name``: the largest RSS
    of one process at any sample; ``peak_processes``: the most processes seen at once; ``cpu_seconds_sampled``:
    user + system CPU seconds of every process seen, each at its last sample (a lower bound: CPU spent after a
    process's last sample is missed; :func:`run_measured` also reports the kernel's own count for reaped children).

    ``peak_total_pss_mib``: the largest sum of PSS (proportional set size, ``/proc/PID/smaps_rollup``) over the
    tree at one sample: a page shared by n processes counts 1/n in each, so the sum counts every resident page
    once, the fair "all processes" figure for a forked worker pool and for Spark's forked Python workers alike.
    ``peak_by_process``: each process's largest RSS and PSS (MiB), keyed ``"ROLE PID"`` (role: ``driver`` for the
    measured command, ``java``, or the executable name). ``timeline``: every ``timeline_interval`` seconds,
    ``[seconds since start, tree RSS MiB, tree PSS MiB, {"ROLE PID": RSS MiB}]``.
    """

    peak_total_mib: float = 0.0
    peak_single_mib: float = 0.0
    peak_single_name: str = ""
    peak_processes: int = 0
    samples: int = 0
    cpu_seconds_sampled: float = 0.0
    peak_total_pss_mib: float = 0.0
    peak_by_process: dict = field(default_factory=dict)
    timeline: list = field(default_factory=list)
    last_total_pss_mib: float = 0.0


def process_pss_bytes(pid: int) -> int | None:
    """PSS of process ``pid`` in bytes from ``/proc/PID/smaps_rollup`` (Linux 4.14+), or ``None`` when it cannot
    be read (process gone, other kernel)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return None


class TreeSampler:
    """Samples :class:`TreeMemory` of process ``pid``'s tree in a background thread until :meth:`stop`."""

    def __init__(self, pid: int, interval: float = 0.1, timeline_interval: float = 2.0):
        import psutil

        self._psutil = psutil
        self.root = psutil.Process(pid)
        self.interval = interval
        self.timeline_interval = timeline_interval
        self.memory = TreeMemory()
        self._known: dict[int, Any] = {}
        self._labels: dict[int, str] = {}
        self._cpu: dict[int, float] = {}
        self._started = time.perf_counter()
        self._next_timeline = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "TreeSampler":
        self._thread.start()
        return self

    def stop(self) -> TreeMemory:
        self._stop.set()
        self._thread.join()
        return self.memory

    def _processes(self) -> list:
        psutil = self._psutil
        try:
            found = [self.root] + self.root.children(recursive=True)
        except psutil.Error:
            return []
        # Keep one Process object per pid (psutil caches per object; a new pid reuse is detected by create time).
        result = []
        for process in found:
            kept = self._known.setdefault(process.pid, process)
            result.append(kept)
        return result

    def _label(self, process) -> str:
        """``"ROLE PID"``; the name is read again each time, since a process may exec another program (Spark's
        launcher script becomes the JVM)."""
        if process.pid == self.root.pid:
            return f"driver {process.pid}"
        try:
            name = process.name()
        except self._psutil.Error:
            name = self._labels.get(process.pid, "?")
        self._labels[process.pid] = name
        return f"{name} {process.pid}"

    def _sample(self) -> None:
        psutil = self._psutil
        total, total_pss, count = 0, 0, 0
        now: dict[str, float] = {}
        for process in self._processes():
            try:
                rss = process.memory_info().rss
            except psutil.Error:
                continue
            pss = process_pss_bytes(process.pid)
            pss = rss if pss is None else pss
            total_pss += pss
            label = self._label(process)
            now[label] = round(rss / 2**20, 1)
            renamed = [key for key in self.memory.peak_by_process
                       if key.endswith(f" {process.pid}") and key != label]
            for key in renamed:  # the process exec'd another program: its peaks carry over to the new name
                self.memory.peak_by_process[label] = self.memory.peak_by_process.pop(key)
            peak = self.memory.peak_by_process.setdefault(label, {"rss_mib": 0.0, "pss_mib": 0.0})
            peak["rss_mib"] = max(peak["rss_mib"], round(rss / 2**20, 1))
            peak["pss_mib"] = max(peak["pss_mib"], round(pss / 2**20, 1))
            try:
                times = process.cpu_times()
                self._cpu[process.pid] = max(self._cpu.get(process.pid, 0.0), times.user + times.system)
            except psutil.Error:
                pass
            total += rss
            count += 1
            if rss / 2**20 > self.memory.peak_single_mib:
                self.memory.peak_single_mib = rss / 2**20
                try:
                    self.memory.peak_single_name = process.name()
                except psutil.Error:
                    pass
        self.memory.samples += 1
        self.memory.cpu_seconds_sampled = sum(self._cpu.values())
        self.memory.peak_total_mib = max(self.memory.peak_total_mib, total / 2**20)
        self.memory.peak_total_pss_mib = max(self.memory.peak_total_pss_mib, total_pss / 2**20)
        self.memory.last_total_pss_mib = total_pss / 2**20
        self.memory.peak_processes = max(self.memory.peak_processes, count)
        elapsed = time.perf_counter() - self._started
        if elapsed >= self._next_timeline and now:
            self._next_timeline = elapsed + self.timeline_interval
            self.memory.timeline.append([round(elapsed, 1), round(total / 2**20, 1), round(total_pss / 2**20, 1), now])

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.interval)
        self._sample()


@dataclass
class Measured:
    """One measured subprocess run."""

    command: list[str]
    seconds: float
    returncode: int
    memory: TreeMemory
    load_before: dict[str, float]
    load_after: dict[str, float]
    output_tail: str = ""
    cpu_seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    stopped_by: str = ""  # "time" or "memory" when run_measured killed the run at a limit

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["memory"] = {k: (round(v, 1) if isinstance(v, float) else v) for k, v in out["memory"].items()}
        out["seconds"] = round(self.seconds, 3)
        out["cpu_seconds"] = round(self.cpu_seconds, 3)
        return out


def run_measured(command: Sequence[str], *, env: dict[str, str] | None = None, cwd: str | None = None,
                 log_path: str | None = None, interval: float = 0.1, max_seconds: float | None = None,
                 max_tree_mib: float | None = None) -> Measured:
    """Run ``command``, timing it wall-clock and sampling its process tree's memory; output goes to
    ``log_path`` (or is discarded) and its last lines come back in ``output_tail``. ``cpu_seconds``: user + system
    CPU time of the tree, the larger of the kernel's count for reaped descendants (``RUSAGE_CHILDREN``; run one
    measured command at a time) and the sampled sum: on a loaded machine it shows the work done, which wall time
    does not. ``max_seconds``/``max_tree_mib``: kill the whole tree once the run takes longer or its PSS sum grows
    larger; ``stopped_by`` then says which limit (and ``returncode`` is the kill's)."""
    import resource

    full_env = dict(os.environ)
    full_env.update(env or {})
    load_before = load_average()
    log = open(log_path, "wb") if log_path else subprocess.DEVNULL
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        started = time.perf_counter()
        process = subprocess.Popen(list(command), env=full_env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL)
        sampler = TreeSampler(process.pid, interval).start()
        stopped_by = ""
        while True:
            try:
                returncode = process.wait(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                if max_seconds is not None and time.perf_counter() - started > max_seconds:
                    stopped_by = "time"
                elif max_tree_mib is not None and sampler.memory.last_total_pss_mib > max_tree_mib:
                    stopped_by = "memory"
                if stopped_by:
                    kill_tree(process.pid)
        seconds = time.perf_counter() - started
        memory = sampler.stop()
    finally:
        if log_path:
            log.close()
    tail = ""
    if log_path:
        with open(log_path, "rb") as handle:
            tail = b"\n".join(handle.read().splitlines()[-15:]).decode("utf-8", "replace")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    reaped = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    cpu = max(reaped, memory.cpu_seconds_sampled)
    return Measured(list(command), seconds, returncode, memory, load_before, load_average(), tail, cpu,
                    stopped_by=stopped_by)


def kill_tree(pid: int) -> None:
    """SIGKILL process ``pid`` and all its descendants (children first, so none is re-parented and missed)."""
    import psutil

    try:
        root = psutil.Process(pid)
        processes = root.children(recursive=True) + [root]
    except psutil.Error:
        return
    for process in processes:
        try:
            process.kill()
        except psutil.Error:
            pass
