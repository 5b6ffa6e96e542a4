#!/usr/bin/env bash
# Roles of the shardpiece image:
#   master            a Spark standalone master   (SPARK_MASTER_PORT 7077, SPARK_MASTER_WEBUI_PORT 8080)
#   worker [URL]      a worker joining URL        (default $SPARK_MASTER_URL or spark://master:7077;
#                                                  SPARK_WORKER_CORES, SPARK_WORKER_MEMORY)
#   anything else     run as a command, e.g. `shardpiece train --config configs/cluster.yaml`
set -euo pipefail

host="${SPARK_HOST:-$(hostname)}"
case "${1:-}" in
  master)
    shift
    exec "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.master.Master \
      --host "$host" --port "${SPARK_MASTER_PORT:-7077}" --webui-port "${SPARK_MASTER_WEBUI_PORT:-8080}" "$@"
    ;;
  worker)
    shift
    url="${1:-${SPARK_MASTER_URL:-spark://master:7077}}"
    [ $# -gt 0 ] && shift
    exec "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.worker.Worker \
      --host "$host" --webui-port "${SPARK_WORKER_WEBUI_PORT:-8081}" \
      --cores "${SPARK_WORKER_CORES:-2}" --memory "${SPARK_WORKER_MEMORY:-4g}" \
      --work-dir "${SPARK_WORKER_DIR:-/tmp/spark-work}" "$@" "$url"
    ;;
  "")
    exec shardpiece --help
    ;;
  *)
    exec "$@"
    ;;
esac
