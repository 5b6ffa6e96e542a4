"""The in-process engine: training without Spark, on this process's threads (:mod:`.engine`, :mod:`.read`)."""
