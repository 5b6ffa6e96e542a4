#!/usr/bin/env bash
# Roles of the shardpiece image:
#   master            a Spark standalone master   (SPARK_MASTER_PORT 7077, SPARK_MASTER_WEBUI_PORT 8080)
#   worker [URL]      a worker joining URL        (default $SPARK_MASTER_URL or spark://master:7077;
#                                                  SPARK_WORKER_CORES, SPARK_WORKER_MEMORY)
#   anything else     run as a command, e.g. `shardpiece train --config configs/cluster.yaml`
# SPARK_HOST overrides the address a master (default: its hostname) or worker (default: its IP) advertises;
# SHARDPIECE_DRIVER_HOST=auto makes a driver advertise its container IP (pipelines/spark/session.py reads it).
set -euo pipefail

own_ip() { python -c 'import socket; print(socket.gethostbyname(socket.gethostname()))'; }
# The driver (client container) is reached by its IP: `docker compose run` containers have no DNS name by default.
if [ "${SHARDPIECE_DRIVER_HOST:-}" = "auto" ]; then
  SHARDPIECE_DRIVER_HOST="$(own_ip)"
  export SHARDPIECE_DRIVER_HOST
fi
case "${1:-}" in
  master)
    shift
    exec "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.master.Master \
      --host "${SPARK_HOST:-$(python -c "import socket; print(socket.gethostname())")}" --port "${SPARK_MASTER_PORT:-7077}" --webui-port "${SPARK_MASTER_WEBUI_PORT:-8080}" "$@"
    ;;
  worker)
    shift
    url="${1:-${SPARK_MASTER_URL:-spark://master:7077}}"
    [ $# -gt 0 ] && shift
    exec "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.worker.Worker \
      --host "${SPARK_HOST:-$(own_ip)}" --webui-port "${SPARK_WORKER_WEBUI_PORT:-8081}" \
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
