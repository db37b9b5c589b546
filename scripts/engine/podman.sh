#!/usr/bin/env bash
# Podman's Docker-compatible API on a socket of its own, for users and tests that want Podman:
#   podman.sh start   install Podman from Debian's archive if missing (root), start its API
#                     service (idempotent), load the sandbox images into it from the main
#                     engine, and print the DOCKER_HOST that points a client at it
#   podman.sh env     print that DOCKER_HOST only (the service must be running)
#   podman.sh stop    stop the service (its containers are removed first; idempotent)
# Rootful. Its settings are a containers.conf of ours (CONTAINERS_CONF), so the machine's own
# /etc/containers is not changed: `default_ulimits = []`, without which every container fails
# setting RLIMIT_NOFILE here. Offline: images come from the main engine (docker save | podman load).
set -euo pipefail

STATE=${GENAICODE_PODMAN_DIR:-/var/lib/genaicode-docker-podman}
SOCKET=$STATE/podman.sock
PIDFILE=$STATE/service.pid
LOG=$STATE/service.log
IMAGES=${GENAICODE_PODMAN_IMAGES:-genaicode-docker/sandbox-minimal:latest genaicode-docker/sandbox-python:latest}
export CONTAINERS_CONF=$STATE/containers.conf

log() { printf '[podman] %s\n' "$*" >&2; }

running_pid() {
  [ -f "$PIDFILE" ] || return 1
  local pid
  pid=$(cat "$PIDFILE")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && grep -q podman "/proc/$pid/cmdline" 2>/dev/null && echo "$pid"
}

answers() { curl -fsS --unix-socket "$SOCKET" http://d/_ping >/dev/null 2>&1; }

install() {
  command -v podman >/dev/null 2>&1 && command -v catatonit >/dev/null 2>&1 && return 0
  if [ "$(id -u)" != 0 ]; then
    log "Podman (with catatonit) is missing: install the Debian packages podman and catatonit"
    exit 1
  fi
  log "installing podman and catatonit from the Debian archive"
  export DEBIAN_FRONTEND=noninteractive
  # catatonit: Podman's init for `Init: true` (a recommended package, so named here).
  apt-get install -y -qq --no-install-recommends podman catatonit >/dev/null 2>&1 || {
    apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends podman catatonit >/dev/null; }
}

start() {
  install
  command -v curl >/dev/null 2>&1 || { log "curl is missing (Debian package curl)"; exit 1; }
  mkdir -p "$STATE"
  if [ ! -f "$CONTAINERS_CONF" ]; then
    printf '[containers]\ndefault_ulimits = []\n' >"$CONTAINERS_CONF"
  fi
  if ! running_pid >/dev/null; then
    rm -f "$SOCKET"
    log "starting podman system service on unix://$SOCKET (log: $LOG)"
    # setsid: the service outlives the shell (and the CI step) that started it.
    setsid podman system service --time=0 "unix://$SOCKET" >"$LOG" 2>&1 </dev/null &
    echo $! >"$PIDFILE"
  fi
  local ok=0
  for _ in $(seq 1 60); do
    if answers; then ok=1; break; fi
    sleep 0.5
  done
  if [ "$ok" != 1 ]; then
    log "Podman's API did not answer within 30 s; the end of $LOG:"
    tail -n 20 "$LOG" >&2 || true
    exit 1
  fi
  for image in $IMAGES; do
    if ! podman image exists "$image"; then
      log "loading $image from the main engine"
      docker image inspect "$image" >/dev/null 2>&1 || { log "the main engine has no $image: run scripts/setup.sh first"; exit 1; }
      docker save "$image" | podman load -q >/dev/null
    fi
  done
  log "ready: podman $(podman version --format '{{.Server.Version}}' 2>/dev/null || podman --version)"
  print_env
}

print_env() { printf 'export DOCKER_HOST=unix://%s\n' "$SOCKET"; }

stop() {
  local pid
  if pid=$(running_pid); then
    log "stopping podman system service $pid"
    kill "$pid"
    for _ in $(seq 1 40); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.25
    done
  fi
  rm -f "$PIDFILE" "$SOCKET"
}

case "${1:-}" in
  start) start ;;
  env)
    if ! running_pid >/dev/null || ! answers; then
      log "not running: start it with $0 start"
      exit 1
    fi
    print_env
    ;;
  stop) stop ;;
  *)
    echo "usage: $0 start|env|stop" >&2
    exit 2
    ;;
esac
