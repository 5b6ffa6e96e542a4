"""Keep the Python workers' garbage collector off the tasks' path.

PySpark's daemon runs a full ``gc.collect()`` in a reused Python worker after every task, before the worker can
take the next one. A worker that has imported numpy, pyarrow, numba and pyspark and loaded a model tracks about
150,000 container objects (modules, functions, types, Numba dispatchers), and that collection walks all of them
(tens of milliseconds, against under a microsecond once frozen: BENCHMARKS.md, worker_heap.py), once per task,
between a worker's tasks: the tokenize job over en.train runs 4 tasks of about half a second each on ``local[2]``.

Those objects live as long as the worker. :func:`freeze_worker_heap`, called by a task once its set-up is done
(imports, model loaded, kernels fetched from the Numba cache by its first batch), moves everything tracked so far
into the collector's permanent generation (``gc.freeze``), once per worker process. Later collections scan only
what later tasks allocate; reference counting still frees frozen objects as before, so only reference cycles
that become garbage after the freeze among objects tracked before it would stay in memory (the worker's set-up
makes few: it is one-off, bounded, and never a task's data, which is allocated after the freeze).
"""

from __future__ import annotations

import gc
import sys

_frozen = False


def freeze_worker_heap() -> bool:
    """In a Spark Python worker, freeze the objects tracked so far (once per process); returns whether it did.

    Outside a Spark task (the driver, the in-process engine, tests calling task functions directly) it does nothing:
    the driver's heap holds the job's data, which must stay collectable.

    >>> freeze_worker_heap()   # not in a Spark task
    False
    """
    global _frozen
    if _frozen or "pyspark" not in sys.modules:  # a Spark worker has imported it; elsewhere it is never loaded here
        return False
    from pyspark import TaskContext

    if TaskContext.get() is None:
        return False
    gc.freeze()
    _frozen = True
    return True
