"""The Spark session every job runs in (:mod:`.session`), the driver JVM's class-data-sharing archive
(:mod:`.jvm_archive`) and the Python workers' heap (:mod:`.worker_heap`)."""
