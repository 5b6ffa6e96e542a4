"""Building the SparkSession every shardpiece job runs in.

:func:`build_session` starts (or reuses) a session that

* runs ``local[*]`` unless a master URL is given (``local[2]``, ``local-cluster[2,1,1024]``, ``spark://host:7077``);
* binds the driver to loopback (``spark.driver.host`` / ``spark.driver.bindAddress`` = 127.0.0.1 and
  ``SPARK_LOCAL_IP`` for the JVM and every executor it starts), and turns the web UI off, so a local run opens no
  port on any other interface. Only when ``$SHARDPIECE_DRIVER_HOST`` is set (the cluster image's client container,
  whose executors run on other hosts) does the driver advertise that name and bind every interface;
* enables Arrow for the ``mapInArrow`` steps;
* limits Numba to ``threads_per_task`` threads per task (``NUMBA_NUM_THREADS`` in every Python worker), so
  ``cores x threads`` never oversubscribes the machine;
* logs only errors (the log4j2 configuration is written to a temporary file and passed to the driver JVM);
  with ``log_file`` the driver JVM's whole output (Spark's log, the Java stacks of failed tasks, what a local
  master's Python workers print) goes to that file instead of the terminal (:func:`spark_log_file` names it);
* with ``small_driver=True`` and a local master (``local``, ``local[N]``, ``local[*]``: every task runs inside the
  driver JVM), starts that JVM small: a 512m heap unless a driver memory is given, the serial collector (the heap
  grows only as far as the live data needs), the C1 compiler only, capped code cache, direct (off-heap) memory and
  thread stacks, and glibc limited to two malloc arenas (``MALLOC_ARENA_MAX``) and a fixed 1 MB mmap threshold
  (``MALLOC_MMAP_THRESHOLD_``: freed large arrays go back to the system) in the JVM and its Python workers;
* with ``single_worker=True`` and a local master, runs one lean Python worker at a time: ``spark.task.cpus`` equal
  to the local core count, so one task (one Python worker, whose imports and kernels cost ~200 MB) runs at a time
  and uses every core through threads (see :func:`task_threads`); workers that exit after each task; smaller tasks
  (4 MB input splits, ~16 MB reduce partitions, 32 MB Arrow batches). The training job uses both, and its
  algorithms' own options keep the worker for every task and read 32 MB splits
  (:func:`pipelines.train.unigram.counting_session_options`); the tokenize job uses ``small_driver`` only (its tasks
  want one warm worker per core).
  Cluster masters (and ``local-cluster[...]``) keep Spark's own settings.

Example::

    spark = build_session(master="local[2]", app_name="shardpiece-test", shuffle_partitions=4)
    spark.range(3).count()   # -> 3
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
from typing import Any, Mapping

LOOPBACK = "127.0.0.1"
SMALL_DRIVER_MEMORY = "512m"
SMALL_DRIVER_ARROW_BATCH_BYTES = 32 << 20
SMALL_DRIVER_SPLIT_BYTES = 4 << 20
SMALL_DRIVER_REDUCE_BYTES = 16 << 20
# JVM options of a small local driver (see session_config). Serial GC: no concurrent GC threads or remembered
# sets, and the heap is only grown when a collection cannot make room; a 64m young generation (the default, a third of
# the heap, is all touched between two minor collections) and a small initial heap; C1 only (TieredStopAtLevel=1): the
# C2 compiler's arenas cost tens of MB; the rest caps memory the JVM would otherwise reserve lazily and keep.
SMALL_DRIVER_JAVA_OPTIONS = (
    "-XX:+UseSerialGC -Xms96m -Xmn64m -XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=64m "
    "-XX:MaxDirectMemorySize=256m -Xss512k -XX:MinHeapFreeRatio=10 -XX:MaxHeapFreeRatio=30"
)
_LOCAL_MASTER = re.compile(r"local(\[(\d+|\*)(,\d+)?\])?")


def local_cores(master: str) -> int:
    """Task slots of a local master: ``local`` -> 1, ``local[4]`` / ``local[4,2]`` -> 4, ``local[*]`` -> the
    machine's cores. Raises ValueError for other masters (check :func:`is_local_master` first)."""
    match = _LOCAL_MASTER.fullmatch(master.strip())
    if not match:
        raise ValueError(f"{master!r} is not a local master (local, local[N], local[*], local[N,F])")
    cores = match.group(2)
    if cores is None:
        return 1
    return max(1, os.cpu_count() or 1) if cores == "*" else max(1, int(cores))


def is_local_master(master: str) -> bool:
    """``local``, ``local[4]``, ``local[*]``, ``local[4,2]``: every task runs in the driver JVM.
    (``local-cluster[...]`` starts executor JVMs, so it is not.)

    >>> is_local_master("local[2]"), is_local_master("local-cluster[2,1,1024]"), is_local_master("spark://h:7077")
    (True, False, False)
    """
    return bool(_LOCAL_MASTER.fullmatch(master.strip()))

_LOG4J2 = """\
rootLogger.level = {level}
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{HH:mm:ss}} %p %c{{1}}: %m%n%ex
logger.spark_repl.name = org.apache.spark.repl.Main
logger.spark_repl.level = {level}
logger.netty.name = io.netty
logger.netty.level = ERROR
logger.hadoop_native.name = org.apache.hadoop.util.NativeCodeLoader
logger.hadoop_native.level = ERROR
"""


def _log4j_file(level: str) -> str:
    """Path of a log4j2 properties file that logs ``level`` and above to stderr (written once per level)."""
    path = os.path.join(tempfile.gettempdir(), f"shardpiece-log4j2-{level.lower()}.properties")
    text = _LOG4J2.format(level=level.upper())
    try:
        with open(path, encoding="utf-8") as handle:
            if handle.read() == text:
                return path
    except OSError:
        pass
    from tokenizer.files import write_atomic

    write_atomic(path, text.encode("utf-8"), what="Spark logging configuration")
    return path


DEFAULT_LOG_LEVEL = "ERROR"  # Spark's own messages below errors are not shown


def session_config(
    master: str | None = None,
    *,
    app_name: str = "shardpiece",
    shuffle_partitions: int | None = None,
    driver_memory: str | None = None,
    threads_per_task: int = 1,
    log_level: str = DEFAULT_LOG_LEVEL,
    extra: Mapping[str, Any] | None = None,
    small_driver: bool = False,
    single_worker: bool = False,
) -> dict[str, str]:
    """The Spark configuration :func:`build_session` applies, as a plain dict (handy for tests and manifests).

    ``driver_memory`` defaults to ``$SHARDPIECE_DRIVER_MEMORY``, else to ``SMALL_DRIVER_MEMORY`` (512m) when
    ``small_driver`` is set and the master is local, else ``"4g"``: the driver holds the pruned n-gram table and
    the piece table, which for a 60 MB corpus at min_count 8 is a few hundred MB. ``small_driver`` with a local
    master also adds ``SMALL_DRIVER_JAVA_OPTIONS`` to the driver JVM; ``single_worker`` with a local master runs one
    task (one Python worker) at a time over all local cores (see the module docstring). ``extra`` entries (any
    ``spark.*`` key) override the defaults.
    """
    master = master or os.environ.get("SHARDPIECE_MASTER") or "local[*]"
    small = small_driver and is_local_master(master)
    single = single_worker and is_local_master(master)
    log4j = _log4j_file(log_level)
    java_opts = f"-Dlog4j.configurationFile=file:{log4j} -Dlog4j2.configurationFile=file:{log4j}"
    driver_java_opts = f"{SMALL_DRIVER_JAVA_OPTIONS} {java_opts}" if small else java_opts
    default_memory = SMALL_DRIVER_MEMORY if small else "4g"
    python = sys.executable
    driver_host = os.environ.get("SHARDPIECE_DRIVER_HOST")
    conf = {
        "spark.master": master,
        "spark.app.name": app_name,
        "spark.driver.host": driver_host or LOOPBACK,
        "spark.driver.bindAddress": "0.0.0.0" if driver_host else LOOPBACK,
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.memory": driver_memory or os.environ.get("SHARDPIECE_DRIVER_MEMORY") or default_memory,
        "spark.driver.maxResultSize": "2g",
        "spark.driver.extraJavaOptions": driver_java_opts,
        "spark.executor.extraJavaOptions": java_opts,
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "10000",
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.session.timeZone": "UTC",
        "spark.task.cpus": "1",
        "spark.pyspark.python": python,
        "spark.pyspark.driver.python": python,
        "spark.executorEnv.SPARK_LOCAL_IP": LOOPBACK,
        "spark.executorEnv.NUMBA_NUM_THREADS": str(threads_per_task),
        "spark.executorEnv.PYSPARK_PYTHON": python,
        "spark.python.worker.reuse": "true",
    }
    if single:
        # Arrow batches of large binary rows (the n-gram tables) stay a bounded size in the JVM.
        conf["spark.sql.execution.arrow.maxBytesPerBatch"] = str(SMALL_DRIVER_ARROW_BATCH_BYTES)
        # A Python worker exits after its task instead of idling with its arrays and kernels in memory while the
        # driver works (pruning, building models); a new task pays one fork and the imports.
        conf["spark.python.worker.reuse"] = "false"
        # Smaller tasks, so the Python worker holds less at once: input splits of at most 4 MB (files are read
        # as several partitions) and reduce partitions of about 16 MB after adaptive merging.
        conf["spark.sql.files.maxPartitionBytes"] = str(SMALL_DRIVER_SPLIT_BYTES)
        conf["spark.sql.adaptive.advisoryPartitionSizeInBytes"] = str(SMALL_DRIVER_REDUCE_BYTES)
        # One task at a time over all cores: one Python worker instead of one per core; the bytepiece steps run
        # that many threads (task_threads) over their shards, whose kernels release the GIL.
        conf["spark.task.cpus"] = str(local_cores(master))
    if driver_host:  # executors on other hosts advertise their own address
        del conf["spark.executorEnv.SPARK_LOCAL_IP"]
    if shuffle_partitions is not None:
        conf["spark.sql.shuffle.partitions"] = str(int(shuffle_partitions))
    for key, value in (extra or {}).items():
        conf[str(key)] = str(value).lower() if isinstance(value, bool) else str(value)
    return conf


_spark_log_file: str | None = None


def spark_log_file() -> str | None:
    """The file the driver JVM of this process writes its output to (``build_session(log_file=...)``), or
    ``None`` when it writes to the terminal (no such session yet, or ``--verbose``)."""
    return _spark_log_file


def log_file_in(folder: str, command: str) -> str:
    """A new log file's path in ``folder`` for one run of ``command``, named by its UTC start and process id:
    ``log_file_in("/w/logs", "train")`` -> ``"/w/logs/train-20261207T111500Z-4242.log"``."""
    import time

    return os.path.join(folder, f"{command}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{os.getpid()}.log")


def _start_jvm_logging_to(conf: Mapping[str, str], path: str) -> None:
    """Start the driver JVM (as ``SparkSession.builder.getOrCreate`` would, with the same ``conf``) with its
    stdout and stderr appended to ``path``; the session built next uses it."""
    global _spark_log_file
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with SparkContext._lock:
        if SparkContext._gateway is not None:
            return
        with open(path, "ab") as handle:  # the JVM keeps its own copy of the descriptor
            gateway = launch_gateway(SparkConf(loadDefaults=False).setAll(list(conf.items())),
                                     popen_kwargs={"stdout": handle, "stderr": handle})
        SparkContext._gateway, SparkContext._jvm = gateway, gateway.jvm
    _spark_log_file = os.path.abspath(path)


def build_session(master: str | None = None, *, log_file: str | None = None, **options: Any):
    """Start a loopback-bound SparkSession (or return the running one, with the SQL options updated), configured
    by :func:`session_config` (``options``: its keywords). ``log_file``: where the driver JVM writes its output
    (made with its folder; ``None``: the terminal).

    Driver-JVM options (master, memory, log configuration, log file) only take effect when no session is running
    yet; the runtime SQL options (shuffle partitions, Arrow) are applied to a reused session too.
    """
    conf = session_config(master, **options)
    small_driver = bool(options.get("small_driver")) and is_local_master(conf["spark.master"])
    if not os.environ.get("SHARDPIECE_DRIVER_HOST"):
        os.environ["SPARK_LOCAL_IP"] = LOOPBACK
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # Python workers of a local master inherit the driver's environment.
    os.environ.setdefault("NUMBA_NUM_THREADS", conf["spark.executorEnv.NUMBA_NUM_THREADS"])
    import warnings

    # pyspark 4.x warns that pandas 3 is "not fully supported"; mapInArrow does not go through pandas.
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"pyspark(\..*)?")
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    if small_driver:
        # glibc's default of 8 malloc arenas per core lets native memory of many threads (the JVM's, the Python
        # workers' numba/arrow) sit in RSS; two arenas are plenty for local tasks. The JVM and the Python workers
        # it starts inherit this environment.
        os.environ.setdefault("MALLOC_ARENA_MAX", "2")
        # A fixed mmap threshold: glibc otherwise raises it (up to 32 MB) each time a large block is freed, after
        # which the workers' numpy arrays of a few MB come from the heap and their pages are kept after use.
        os.environ.setdefault("MALLOC_MMAP_THRESHOLD_", str(1 << 20))
    archive_options = ""
    if small_driver and SparkContext._active_spark_context is None:
        from pipelines.spark.jvm_archive import driver_archive_options

        # the JVM's classes from a class-data-sharing archive: the session starts in about half the time
        archive_options = driver_archive_options(conf["spark.driver.extraJavaOptions"])
        if archive_options:
            conf["spark.driver.extraJavaOptions"] += " " + archive_options
    if log_file and SparkContext._gateway is None and "PYSPARK_GATEWAY_PORT" not in os.environ:
        _start_jvm_logging_to(conf, log_file)
    builder = SparkSession.builder
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if "ArchiveClassesAtExit" in archive_options:
        from pipelines.spark.jvm_archive import record_class_path

        record_class_path(archive_options, spark.sparkContext._jvm.java.lang.System.getProperty("java.class.path"))
    spark.sparkContext.setLogLevel(str(options.get("log_level", DEFAULT_LOG_LEVEL)).upper())
    for key in ("spark.sql.shuffle.partitions", "spark.sql.execution.arrow.pyspark.enabled",
                "spark.sql.execution.arrow.maxRecordsPerBatch", "spark.sql.execution.arrow.maxBytesPerBatch"):
        if key in conf:
            spark.conf.set(key, conf[key])
    return spark


def task_error_message(exc: BaseException) -> str | None:
    """The useful line of an error raised inside a Spark task (e.g. ``tokenizer.errors.InputError: ...``), or
    ``None`` when ``exc`` does not come from Spark. Spark wraps task errors in long JVM and Python tracebacks."""
    module = type(exc).__module__ or ""
    if not module.startswith(("pyspark", "py4j")):
        return None
    text = str(exc)
    if "java.lang.OutOfMemoryError" in text:
        return ("the Spark driver JVM ran out of memory (java.lang.OutOfMemoryError): raise --driver-memory (or "
                "$SHARDPIECE_DRIVER_MEMORY; local training defaults to 512m), or use more partitions or a higher "
                "--min-count so that less is collected at once")
    unreadable = re.search(r"Encountered error while reading file (\S+?)\.?\s", text)
    if unreadable:  # Spark's FAILED_READ_FILE: a corrupt, truncated or mislabelled input file
        causes = re.findall(r"^Caused by: (?:[\w.$]+\.)?(\w+(?:Error|Exception)): (.+)$", text, flags=re.MULTILINE)
        cause = f" ({causes[-1][0]}: {causes[-1][1].strip()})" if causes else ""
        return (f"cannot read input file {unreadable.group(1)}{cause}: it is corrupt, truncated or not in the "
                "format its name says; re-create it, or remove it from --input")
    found = re.findall(r"^(?:[\w.]+\.)?(\w+(?:Error|Exception)): (.+)$", text, flags=re.MULTILINE)
    for name, message in reversed(found):
        if name not in ("PythonException", "Py4JJavaError", "SparkException"):
            return f"{name}: {message.strip()}"
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def describe_jobs(spark, stage: str) -> str:
    """Name the Spark jobs this thread starts from now on after the training ``stage`` (``[ngrams]``), as the
    progress lines name it: Spark's UI and event log (``spark.job.description``) then say which stage a job
    belongs to (``benchmarks/bytepiece_stages.py`` groups task metrics by it). Returns their job group
    (``shardpiece-ngrams``), whose jobs Spark's status tracker lists (:mod:`pipelines.progress`)."""
    group = f"shardpiece-{stage}"
    spark.sparkContext.setJobGroup(group, f"[{stage}]")
    return group


def task_threads(spark) -> int:
    """Cores each task may use: the session's ``spark.task.cpus`` (``single_worker`` on a local master sets it to
    the local core count, e.g. 2 for ``local[2]``; Spark's default and cluster masters give 1)."""
    try:
        return max(1, int(spark.sparkContext.getConf().get("spark.task.cpus", "1")))
    except ValueError:
        return 1


def default_parallelism(spark) -> int:
    """The number of task slots Spark reports (``local[4]`` -> 4, ``local-cluster[2,1,1024]`` -> 2)."""
    return max(1, int(spark.sparkContext.defaultParallelism))
