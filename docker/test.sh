#!/usr/bin/env bash
# `make docker-test`: the image end to end on a standalone cluster, with host networking only.
#
#   1. installs Debian's docker.io and starts dockerd when there is no running engine;
#   2. makes the base image debian:bookworm-slim if it is not there (pulled when a registry answers, else built from
#      Debian's packages with debootstrap and cached under $SHARDPIECE_DOCKER_CACHE);
#   3. builds the image from docker/Dockerfile and prints its size;
#   4. starts a master and two workers (--network host, every process bound to and advertising 127.0.0.1, ports
#      picked free), then in a client container trains BytePiece on the shipped sample against the master and again
#      with local[2], prints both model hashes (they must be equal), tokenizes the sample on the cluster and checks
#      that every document decodes back to its line;
#   5. removes the containers and the volume it made, on failure too.
# Needs root (it may install packages and start dockerd) and a few minutes; not part of `make test`.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${SHARDPIECE_DOCKER_CACHE:-/var/cache/shardpiece-docker}
BASE=${SHARDPIECE_BASE_IMAGE:-debian:bookworm-slim}
IMAGE=${SHARDPIECE_IMAGE:-shardpiece:test}
RUN_ID=shardpiece-test-$$
VOLUME=$RUN_ID-data
CONTAINERS=()

say() { printf 'docker-test: %s\n' "$*"; }
fail() { say "FAILED: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || { say "needs root (it installs and starts dockerd): run 'sudo make docker-test'" >&2; exit 2; }
mkdir -p "$CACHE"

cleanup() {
  local code=$?
  for name in "${CONTAINERS[@]}"; do docker rm -f "$name" >/dev/null 2>&1 || true; done
  docker volume rm -f "$VOLUME" >/dev/null 2>&1 || true
  [ -n "${CONTEXT:-}" ] && rm -rf "$CONTEXT"
  [ $code -eq 0 ] || say "cleaned up after a failure (exit $code); logs of the containers were printed above" >&2
}
trap cleanup EXIT

# ------------------------------------------------------------------------------------------------ 1. the engine
if ! command -v dockerd >/dev/null 2>&1; then
  say "installing docker.io from Debian's packages"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
fi
if ! docker info >/dev/null 2>&1; then
  say "starting dockerd (log: $CACHE/dockerd.log; it keeps running after the test)"
  nohup dockerd >"$CACHE/dockerd.log" 2>&1 &
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || fail "dockerd did not start: see $CACHE/dockerd.log"
fi

# ------------------------------------------------------------------------------------------------ 2. the base image
if ! docker image inspect "$BASE" >/dev/null 2>&1; then
  if timeout 60 docker pull "$BASE" >/dev/null 2>&1; then
    say "pulled $BASE"
  else
    say "no registry answered: building $BASE from Debian's packages (debootstrap, cached in $CACHE)"
    command -v debootstrap >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
    if [ ! -f "$CACHE/bookworm-minbase.tar" ]; then
      rm -rf "$CACHE/rootfs"
      debootstrap --variant=minbase bookworm "$CACHE/rootfs" http://deb.debian.org/debian >"$CACHE/debootstrap.log" 2>&1 \
        || fail "debootstrap failed: see $CACHE/debootstrap.log"
      rm -rf "$CACHE"/rootfs/var/cache/apt/archives/*.deb "$CACHE"/rootfs/var/lib/apt/lists/*
      tar -C "$CACHE/rootfs" -cf "$CACHE/bookworm-minbase.tar" .
      rm -rf "$CACHE/rootfs"
    fi
    docker import "$CACHE/bookworm-minbase.tar" "$BASE" >/dev/null
  fi
fi

# ------------------------------------------------------------------------------------------------ 3. the image
# The context holds only what the image copies (any builder, no .dockerignore needed).
CONTEXT=$(mktemp -d)
(cd "$REPO" && cp -r setup.cfg pyproject.toml README.md tokenizer pipelines jobs configs data "$CONTEXT"/)
mkdir -p "$CONTEXT/docker"
cp -r "$REPO"/docker/{Dockerfile,entrypoint.sh,requirements.txt,warm_kernels.py,ca-certificates} "$CONTEXT/docker/"
# this host's extra CA certificates (a TLS-intercepting egress proxy, say) go into the image's trust store
cp /usr/local/share/ca-certificates/*.crt "$CONTEXT/docker/ca-certificates/" 2>/dev/null || true
find "$CONTEXT" -name __pycache__ -prune -exec rm -rf {} +
say "building $IMAGE on $BASE"
docker build --force-rm --network host --build-arg BASE_IMAGE="$BASE" -f "$CONTEXT/docker/Dockerfile" -t "$IMAGE" "$CONTEXT" \
  >"$CACHE/build.log" 2>&1 || { tail -40 "$CACHE/build.log" >&2; fail "docker build failed (log: $CACHE/build.log)"; }
SIZE=$(docker image inspect -f '{{.Size}}' "$IMAGE")
say "image $IMAGE: $((SIZE / 1000000)) MB"

# ------------------------------------------------------------------------------------------------ 4. the cluster
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
MASTER_PORT=$(free_port); MASTER_UI=$(free_port)
MASTER=spark://127.0.0.1:$MASTER_PORT
LOOPBACK=(-e SPARK_LOCAL_IP=127.0.0.1 -e SPARK_HOST=127.0.0.1 -e SHARDPIECE_DRIVER_HOST=127.0.0.1)
docker volume create "$VOLUME" >/dev/null

start() {  # start NAME ARGS...: a detached container of the image on the host network
  local name=$RUN_ID-$1; shift
  CONTAINERS+=("$name")
  docker run -d --name "$name" --network host -v "$VOLUME:/data" "${LOOPBACK[@]}" "$@" >/dev/null
}
logs() { for name in "${CONTAINERS[@]}"; do echo "--- $name"; docker logs --tail 30 "$name" 2>&1; done; }

start master -e SPARK_MASTER_PORT="$MASTER_PORT" -e SPARK_MASTER_WEBUI_PORT="$MASTER_UI" "$IMAGE" master
for n in 1 2; do
  start "worker-$n" -e SPARK_WORKER_CORES=1 -e SPARK_WORKER_MEMORY=2g -e SPARK_WORKER_WEBUI_PORT="$(free_port)" \
    "$IMAGE" worker "$MASTER"
done
alive=0
for _ in $(seq 90); do
  alive=$(python3 -c "import json, urllib.request; print(json.load(urllib.request.urlopen(
    'http://127.0.0.1:$MASTER_UI/json/', timeout=2)).get('aliveworkers', 0))" 2>/dev/null || echo 0)
  [ "$alive" = 2 ] && break
  sleep 1
done
[ "$alive" = 2 ] || { logs >&2; fail "the two workers did not register with $MASTER"; }
say "master $MASTER with 2 workers"

client() {  # client SCRIPT: run a bash script in a client container (the driver) on the host network
  docker run --rm --network host -v "$VOLUME:/data" "${LOOPBACK[@]}" -e SHARDPIECE_DRIVER_MEMORY=1g \
    --entrypoint bash "$IMAGE" -c "$1"
}
# Every worker container is "127.0.0.1" on the host network, but each has its own /tmp: executors must fetch shuffle
# blocks over the network, not read another "local" executor's files (which live in another container).
HOST_NETWORK_CONF="--set spark.shuffle.readHostLocalDisk=false"
TRAIN="shardpiece train --algorithm bytepiece --input /data/corpus --vocab-size 4000 --order 4 --min-count 4 \
  --holdout-fraction 0 --quiet $HOST_NETWORK_CONF"
client "set -e; cp -r data/sample /data/corpus
  $TRAIN --master $MASTER --output /data/cluster.model --work-dir /data/work-cluster
  $TRAIN --master 'local[2]' --output /data/local.model --work-dir /data/work-local
  sha256sum /data/cluster.model /data/local.model > /data/hashes.txt" || { logs >&2; fail "training failed"; }
HASHES=$(client "cat /data/hashes.txt")
echo "$HASHES" | sed 's/^/docker-test: model sha256 /'
[ "$(echo "$HASHES" | awk '{print $1}' | sort -u | wc -l)" = 1 ] \
  || fail "the cluster's model differs from the local[2] model"
client "set -e
  shardpiece tokenize --master $MASTER --model /data/cluster.model --input '/data/corpus/*.txt.gz' \
    --output /data/tokens --partitions 4 2>/dev/null >/dev/null
  python - <<'PY'
import glob, gzip
import pyarrow.dataset as ds
from pipelines.tokenize.commit import read_manifest
from tokenizer import Tokenizer
tok = Tokenizer.load('/data/cluster.model')
lines = sorted(l for p in glob.glob('/data/corpus/*.txt.gz') for l in gzip.open(p, 'rb').read().split(b'\n')[:-1])
ids = ds.dataset('/data/tokens', format='parquet').to_table(columns=['input_ids'])['input_ids'].to_pylist()
decoded = sorted(tok.decode_bytes(x) for x in ids)
assert read_manifest('/data/tokens')['documents'] == len(lines), 'manifest count'
assert decoded == lines, 'decoded documents differ from the input lines'
print(f'docker-test: tokenized {len(lines):,} documents on the cluster; every one decodes back to its line')
PY" || { logs >&2; fail "tokenizing on the cluster failed"; }
say "ok (image $((SIZE / 1000000)) MB)"
