"""Everything Spark: the session every job runs in (:mod:`.session`), the driver JVM's class-data-sharing archive
(:mod:`.jvm_archive`), the Python workers' heap (:mod:`.worker_heap`), and training's Spark engine
(:mod:`.train_engine`: its reduce :mod:`.reduce`, tasks that read local files themselves :mod:`.direct_count`,
unigram's E-steps on the executors :mod:`.estep`)."""
