#!/usr/bin/env bash
# Podman's Docker-compatible API on a socket of its own, for users and tests that want Podman:
#   podman.sh start   install Podman from Debian's archive if missing (root), start its API
#                     service (idempotent: a running service is reused only when it answers
#                     _ping, version and a container list within a bound, and restarted when
#                     not), load the sandbox images into it from the main engine, and print
#                     the DOCKER_HOST that points a client at it
#   podman.sh env     print that DOCKER_HOST only (the service must be running)
#   podman.sh stop    stop the service (SIGTERM, then SIGKILL if it has not ended in 10 s; idempotent)
# Each takes --rootless (after the command): the same for a rootless service, run by the user
# GENAICODE_PODMAN_USER (default gcd-rootless: made with a subordinate id range if missing, as
# rootless Podman needs) on a socket of its own, its images in that user's own store.
# Rootful by default. Its settings are a containers.conf of ours (CONTAINERS_CONF), so the machine's own
# /etc/containers is not changed: `default_ulimits = []`, without which every container fails
# setting RLIMIT_NOFILE here. Offline: images come from the main engine (docker save | podman load).
set -euo pipefail

ROOTLESS=0
[ "${2:-}" = --rootless ] && ROOTLESS=1
RUSER=${GENAICODE_PODMAN_USER:-gcd-rootless}
if [ "$ROOTLESS" = 1 ]; then
  STATE=${GENAICODE_PODMAN_DIR:-/var/lib/genaicode-docker-podman-rootless}
else
  STATE=${GENAICODE_PODMAN_DIR:-/var/lib/genaicode-docker-podman}
fi
SOCKET=$STATE/podman.sock
# Rootless, the socket is in a folder of the service's user (who makes it); the state folder and
# its files (pid, lock, log) stay root's: a file the user could replace, root would write through.
[ "$ROOTLESS" = 1 ] && SOCKET=$STATE/run/podman.sock
PIDFILE=$STATE/service.pid
LOG=$STATE/service.log
IMAGES=${GENAICODE_PODMAN_IMAGES:-genaicode-docker/sandbox-minimal:latest genaicode-docker/sandbox-python:latest}
LOCK=$STATE/lock
# How long one health request may take (seconds): a wedged service answers nothing, ever.
HEALTH_TIMEOUT=${GENAICODE_PODMAN_HEALTH_TIMEOUT:-10}
export CONTAINERS_CONF=$STATE/containers.conf

log() { printf '[podman] %s\n' "$*" >&2; }

# Podman itself (PM, set by podman_as), as root or (--rootless) as the service's user: setpriv
# runs it in place (no process of its own in between, so a service's pid is Podman's), with
# that user's XDG_RUNTIME_DIR and HOME, which rootless Podman keeps its state and store under.
PM=(podman)
podman_as() {
  [ "$ROOTLESS" = 1 ] || return 0
  local uid
  uid=$(id -u "$RUSER")
  PM=(setpriv --reuid="$uid" --regid="$(id -g "$RUSER")" --init-groups --reset-env
    env XDG_RUNTIME_DIR="/run/user/$uid" HOME="$(getent passwd "$RUSER" | cut -d: -f6)"
    CONTAINERS_CONF="$CONTAINERS_CONF" PATH="$PATH" podman)
}
pm() { "${PM[@]}" "$@"; }

# The rootless service's user, with what rootless Podman needs: a subordinate uid and gid range
# (newuidmap, from uidmap), slirp4netns for a networked container, a runtime folder of its own.
rootless_user() {
  [ "$(id -u)" = 0 ] || { log "--rootless sets up its user as root"; exit 1; }
  if ! command -v newuidmap >/dev/null 2>&1 || ! command -v slirp4netns >/dev/null 2>&1; then
    log "installing uidmap and slirp4netns from the Debian archive"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends uidmap slirp4netns >/dev/null
  fi
  if ! id "$RUSER" >/dev/null 2>&1; then
    log "creating the user $RUSER for rootless Podman"
    useradd --create-home --shell /usr/sbin/nologin "$RUSER"
  fi
  grep -q "^$RUSER:" /etc/subuid || usermod --add-subuids 100000-165535 "$RUSER"
  grep -q "^$RUSER:" /etc/subgid || usermod --add-subgids 100000-165535 "$RUSER"
  local uid
  uid=$(id -u "$RUSER")
  install -d -m 0700 -o "$RUSER" -g "$RUSER" "/run/user/$uid"
  chown root:root "$STATE" # (an older set-up gave it to the user)
  install -d -m 0755 -o "$RUSER" -g "$RUSER" "$STATE/run"
}

running_pid() {
  [ -f "$PIDFILE" ] || return 1
  local pid
  pid=$(cat "$PIDFILE")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && grep -q podman "/proc/$pid/cmdline" 2>/dev/null && echo "$pid"
}

# One request through the socket, bounded: prints the body, fails on no answer or an error status.
api() { curl -fsS --max-time "$HEALTH_TIMEOUT" --unix-socket "$SOCKET" "http://d$1" 2>/dev/null; }

answers() { [ "$(api /_ping)" = OK ]; }

# Whether the service does real work: _ping alone is answered by a service whose runtime is
# wedged (a stale lock, a store it lost), so its version and a container list (which takes the
# runtime's locks) must come back too, each within HEALTH_TIMEOUT.
# Whether the service's working folder was deleted since it started (see start).
cwd_gone() {
  local cwd
  cwd=$(readlink "/proc/$1/cwd" 2>/dev/null) || return 1
  [[ "$cwd" == *" (deleted)" ]]
}

healthy() {
  answers || return 1
  api /v1.40/version | grep -q '"ApiVersion"' || return 1
  api '/v1.40/containers/json?limit=1' | grep -q '^\[' || return 1
}

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

# One start or stop at a time (held until this script ends): two callers at once would each
# start a service on the same socket, or one stop the service the other just started.
lock() {
  mkdir -p "$STATE"
  exec 9>"$LOCK"
  flock 9
}

start() {
  install
  command -v curl >/dev/null 2>&1 || { log "curl is missing (Debian package curl)"; exit 1; }
  mkdir -p "$STATE"
  if [ ! -f "$CONTAINERS_CONF" ]; then
    printf '[containers]\ndefault_ulimits = []\n' >"$CONTAINERS_CONF"
  fi
  lock
  if [ "$ROOTLESS" = 1 ]; then
    rootless_user
    podman_as
  fi
  local pid
  if pid=$(running_pid) && cwd_gone "$pid"; then
    log "podman system service $pid runs in a folder that was deleted (its containers cannot start: conmon needs it): restarting it"
    stop
  elif pid=$(running_pid) && ! healthy; then
    log "podman system service $pid does not answer on unix://$SOCKET within ${HEALTH_TIMEOUT} s: restarting it"
    stop
  fi
  if ! running_pid >/dev/null; then
    rm -f "$SOCKET"
    log "starting podman system service on unix://$SOCKET (log: $LOG)"
    # setsid: the service outlives the shell (and the CI step) that started it.
    # 9>&-: the service must not hold the start lock for its whole life.
    # cd /: its working folder is every conmon's, and a folder that is deleted later (a clone
    # that started it) makes each container start fail ("Failed to get working directory").
    (cd / && exec setsid "${PM[@]}" system service --time=0 "unix://$SOCKET") >"$LOG" 2>&1 </dev/null 9>&- &
    echo $! >"$PIDFILE"
  fi
  local ok=0
  local deadline=$((SECONDS + 30))
  while [ "$SECONDS" -lt "$deadline" ]; do
    if healthy; then ok=1; break; fi
    sleep 0.5
  done
  if [ "$ok" != 1 ]; then
    log "Podman's API did not answer within 30 s; the end of $LOG:"
    tail -n 20 "$LOG" >&2 || true
    exit 1
  fi
  # As Docker's socket: root and the docker group, so that a user who may drive Docker here may
  # drive this rootful Podman too (the same trust: either is root on this machine).
  if [ "$ROOTLESS" = 0 ] && getent group docker >/dev/null; then
    chgrp docker "$SOCKET" && chmod 660 "$SOCKET"
  fi
  for image in $IMAGES; do
    if ! pm image exists "$image"; then
      log "loading $image from the main engine"
      docker image inspect "$image" >/dev/null 2>&1 || { log "the main engine has no $image: run scripts/setup.sh first"; exit 1; }
      docker save "$image" | pm load -q >/dev/null
    fi
  done
  log "ready: podman $(pm version --format '{{.Server.Version}}' 2>/dev/null || podman --version)$([ "$ROOTLESS" = 1 ] && echo " (rootless, user $RUSER)")"
  print_env
}

print_env() { printf 'export DOCKER_HOST=unix://%s\n' "$SOCKET"; }

stop() {
  local pid
  if pid=$(running_pid); then
    log "stopping podman system service $pid"
    # SIGCONT too: a stopped process keeps a SIGTERM pending until it runs again.
    kill -TERM "$pid" 2>/dev/null || true
    kill -CONT "$pid" 2>/dev/null || true
    for _ in $(seq 1 40); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.25
    done
    if kill -0 "$pid" 2>/dev/null; then
      log "podman system service $pid did not end on SIGTERM within 10 s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      for _ in $(seq 1 40); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.25
      done
    fi
  fi
  rm -f "$PIDFILE" "$SOCKET"
}

case "${1:-}" in
  start) start ;;
  env)
    if ! running_pid >/dev/null || ! healthy; then
      log "not running: start it with $0 start"
      exit 1
    fi
    print_env
    ;;
  stop)
    lock
    stop
    ;;
  *)
    echo "usage: $0 start|env|stop" >&2
    exit 2
    ;;
esac
