#!/usr/bin/env bash
# Makes sure a container engine answers `docker info`. Idempotent:
# - an engine that already answers (yours, a remote DOCKER_HOST, Podman) is used as is;
# - otherwise, on a Debian machine where we are root, Docker Engine is installed from
#   Debian's archive (if missing) and dockerd is started in the background.
set -euo pipefail

log() { printf '[ensure-engine] %s\n' "$*" >&2; }

if docker info >/dev/null 2>&1; then
  exit 0
fi

if [ -n "${DOCKER_HOST:-}" ]; then
  log "DOCKER_HOST=$DOCKER_HOST is set but the engine there does not answer; start it, or unset DOCKER_HOST."
  exit 1
fi

if [ "$(id -u)" != 0 ]; then
  log "No Docker engine answers and this script can only start one as root."
  log "Start Docker yourself (e.g. 'sudo systemctl start docker') and run this again."
  exit 1
fi

if ! command -v dockerd >/dev/null 2>&1; then
  log "installing Docker Engine (docker.io) from the Debian archive"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq docker.io >/dev/null
fi

if ! pgrep -x dockerd >/dev/null 2>&1; then
  log "starting dockerd (log: /var/log/dockerd.log)"
  # setsid: the daemon must outlive the shell (and the CI step) that started it.
  # cd /: a daemon keeps the folder it started in, which may be a clone deleted later.
  (cd / && exec setsid dockerd) >/var/log/dockerd.log 2>&1 < /dev/null &
fi

for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then
    log "engine ready: $(docker version --format '{{.Server.Version}} (API {{.Server.APIVersion}})')"
    exit 0
  fi
  sleep 0.5
done
log "dockerd did not answer within 30 s; see /var/log/dockerd.log:"
tail -n 20 /var/log/dockerd.log >&2 || true
exit 1
