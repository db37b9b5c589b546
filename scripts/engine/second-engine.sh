#!/usr/bin/env bash
# A second Docker engine on loopback, reached over TCP with TLS, standing in for a remote
# engine (a build server's dockerd) in tests and benchmarks:
#   second-engine.sh start   start it (idempotent), load the sandbox images into it, and print
#                            the environment that points a client at it (eval "$(... start)")
#   second-engine.sh env     print that environment only (the engine must be running)
#   second-engine.sh stop    stop it, unmount what it left, delete its bridge (idempotent)
#   second-engine.sh purge   stop it and delete its state (data root, certificates)
# Everything it has is its own: data root, exec root, pid file, containerd, a bridge and
# certificates made here with openssl. It never touches the main engine's config, socket or
# docker0 (no `--bridge none`: a daemon started so deletes the first engine's docker0).
# Offline: images come from the main engine (docker save | docker load).
# GENAICODE_SECOND_ENGINE_{DIR,PORT,IMAGES,BRIDGE,BRIDGE_ADDR,POOL} run another one beside it.
set -euo pipefail

STATE=${GENAICODE_SECOND_ENGINE_DIR:-/var/lib/genaicode-docker-second-engine}
PORT=${GENAICODE_SECOND_ENGINE_PORT:-23760}
BRIDGE=${GENAICODE_SECOND_ENGINE_BRIDGE:-gcd2br0}
BRIDGE_ADDR=${GENAICODE_SECOND_ENGINE_BRIDGE_ADDR:-10.213.0.1/24}
POOL=${GENAICODE_SECOND_ENGINE_POOL:-10.214.0.0/16}
IMAGES=${GENAICODE_SECOND_ENGINE_IMAGES:-genaicode-docker/sandbox-minimal:latest genaicode-docker/sandbox-python:latest}
CERTS=$STATE/certs
CLIENT=$STATE/client
PIDFILE=$STATE/dockerd.pid
LOG=$STATE/dockerd.log

log() { printf '[second-engine] %s\n' "$*" >&2; }

# The second engine's CLI: flags, never the environment, so the main engine's client is untouched.
second() { docker --host "tcp://127.0.0.1:$PORT" --tlsverify --tlscacert "$CLIENT/ca.pem" --tlscert "$CLIENT/cert.pem" --tlskey "$CLIENT/key.pem" "$@"; }

print_env() {
  printf 'export DOCKER_HOST=tcp://127.0.0.1:%s\nexport DOCKER_TLS_VERIFY=1\nexport DOCKER_CERT_PATH=%s\n' "$PORT" "$CLIENT"
}

running_pid() {
  [ -f "$PIDFILE" ] || return 1
  local pid
  pid=$(cat "$PIDFILE")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && grep -q dockerd "/proc/$pid/cmdline" 2>/dev/null && echo "$pid"
}

make_certs() {
  [ -f "$CLIENT/key.pem" ] && [ -f "$CERTS/server-key.pem" ] && return 0
  log "making a CA, a server certificate for IP:127.0.0.1 and a client certificate (openssl)"
  mkdir -p "$CERTS" "$CLIENT"
  chmod 700 "$CERTS" "$CLIENT"
  local tmp
  tmp=$(mktemp -d)
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj '/CN=genaicode-docker second engine CA' \
    -keyout "$CERTS/ca-key.pem" -out "$CERTS/ca.pem" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj '/CN=127.0.0.1' -keyout "$CERTS/server-key.pem" -out "$tmp/server.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$tmp/server.ext"
  openssl x509 -req -in "$tmp/server.csr" -CA "$CERTS/ca.pem" -CAkey "$CERTS/ca-key.pem" -CAcreateserial -days 3650 \
    -extfile "$tmp/server.ext" -out "$CERTS/server-cert.pem" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj '/CN=genaicode-docker client' -keyout "$CLIENT/key.pem" -out "$tmp/client.csr" 2>/dev/null
  printf 'extendedKeyUsage=clientAuth\n' >"$tmp/client.ext"
  openssl x509 -req -in "$tmp/client.csr" -CA "$CERTS/ca.pem" -CAkey "$CERTS/ca-key.pem" -CAcreateserial -days 3650 \
    -extfile "$tmp/client.ext" -out "$CLIENT/cert.pem" 2>/dev/null
  cp "$CERTS/ca.pem" "$CLIENT/ca.pem"
  rm -rf "$tmp"
}

make_bridge() {
  if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    ip link add "$BRIDGE" type bridge
    ip addr add "$BRIDGE_ADDR" dev "$BRIDGE"
  fi
  ip link set "$BRIDGE" up
}

start() {
  if [ "$(id -u)" != 0 ]; then
    log "a second dockerd can only be started as root"
    exit 1
  fi
  command -v dockerd >/dev/null 2>&1 || { log "dockerd is missing (Debian package docker.io)"; exit 1; }
  command -v openssl >/dev/null 2>&1 || { log "openssl is missing (Debian package openssl)"; exit 1; }
  mkdir -p "$STATE/data" "$STATE/exec"
  make_certs
  if ! running_pid >/dev/null; then
    make_bridge
    # A dockerd started on a data root that holds its network store deletes the default bridge
    # network it finds there, and with it the first engine's docker0 (dockerd 20.10): every
    # container of the main engine on the bridge network then fails to start. The store holds
    # nothing this engine needs after a stop (its containers are removed first), so it goes.
    rm -f "$STATE/data/network/files/local-kv.db"
    # Its own, empty daemon.json: the main engine's /etc/docker/daemon.json is not read.
    [ -f "$STATE/daemon.json" ] || echo '{}' >"$STATE/daemon.json"
    log "starting dockerd on tcp://127.0.0.1:$PORT (log: $LOG)"
    # setsid: the daemon outlives the shell (and the CI step) that started it.
    # cd /: a daemon keeps the folder it started in, which may be a clone deleted later.
    (cd / && exec setsid dockerd --config-file "$STATE/daemon.json" --host "tcp://127.0.0.1:$PORT" --tlsverify \
      --tlscacert "$CERTS/ca.pem" --tlscert "$CERTS/server-cert.pem" --tlskey "$CERTS/server-key.pem" \
      --data-root "$STATE/data" --exec-root "$STATE/exec" --pidfile "$PIDFILE" \
      --bridge "$BRIDGE" --iptables=false --ip-masq=false --ip-forward=false \
      --default-address-pool "base=$POOL,size=24") >"$LOG" 2>&1 </dev/null &
  fi
  local ok=0
  for _ in $(seq 1 120); do
    if second version --format '{{.Server.Version}}' >/dev/null 2>&1; then ok=1; break; fi
    sleep 0.5
  done
  if [ "$ok" != 1 ]; then
    log "the second engine did not answer within 60 s; the end of $LOG:"
    tail -n 20 "$LOG" >&2 || true
    exit 1
  fi
  for image in $IMAGES; do
    if ! second image inspect "$image" >/dev/null 2>&1; then
      log "loading $image from the main engine"
      docker image inspect "$image" >/dev/null 2>&1 || { log "the main engine has no $image: run scripts/setup.sh first"; exit 1; }
      docker save "$image" | second load >/dev/null
    fi
  done
  log "ready: $(second version --format '{{.Server.Version}} (API {{.Server.APIVersion}})')"
  print_env
}

stop() {
  local pid
  if pid=$(running_pid); then
    log "stopping dockerd $pid"
    # Its containers first, so none outlives the daemon in its containerd.
    second ps -aq 2>/dev/null | xargs -r docker --host "tcp://127.0.0.1:$PORT" --tlsverify --tlscacert "$CLIENT/ca.pem" \
      --tlscert "$CLIENT/cert.pem" --tlskey "$CLIENT/key.pem" rm -f >/dev/null 2>&1 || true
    kill "$pid"
    for _ in $(seq 1 60); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.5
    done
    kill -0 "$pid" 2>/dev/null && { log "dockerd $pid did not stop within 30 s"; exit 1; }
  fi
  rm -f "$PIDFILE"
  # What it left mounted under its own roots (never anything else), deepest first.
  if [ -d "$STATE" ]; then
    awk -v s="$STATE/" 'index($2, s) == 1 { print $2 }' /proc/self/mounts | sort -r | while read -r m; do umount -l "$m" || true; done
  fi
  if ip link show "$BRIDGE" >/dev/null 2>&1; then ip link delete "$BRIDGE"; fi
}

case "${1:-}" in
  start) start ;;
  env)
    running_pid >/dev/null || { log "not running: start it with $0 start"; exit 1; }
    print_env
    ;;
  stop) stop ;;
  purge)
    stop
    rm -rf "$STATE"
    ;;
  *)
    echo "usage: $0 start|env|stop|purge" >&2
    exit 2
    ;;
esac
