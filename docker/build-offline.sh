#!/usr/bin/env bash
# Builds the golden images without a registry, from Debian packages, under the same
# names and with the same tools as the Dockerfiles next to this script promise:
#   genaicode-docker/sandbox-minimal:latest  busybox sh and coreutils applets
#   genaicode-docker/sandbox-python:latest   Debian 12, python3, bash, curl
# Idempotent: an image that is already present is left alone (use --force to rebuild).
# Usage: docker/build-offline.sh [--force] [minimal|python ...]
set -euo pipefail

log() { printf '[build-offline] %s\n' "$*" >&2; }
force=0
wanted=()
for a in "$@"; do
  case "$a" in
    --force) force=1 ;;
    minimal|python) wanted+=("$a") ;;
    *) log "unknown argument: $a (expected --force, minimal or python)"; exit 2 ;;
  esac
done
[ ${#wanted[@]} -gt 0 ] || wanted=(minimal python)

need_pkg() { # command, Debian package
  command -v "$1" >/dev/null 2>&1 && return 0
  [ "$(id -u)" = 0 ] || { log "$1 is missing: install the Debian package $2"; exit 1; }
  log "installing $2"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null 2>&1 || {
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null; }
}

present() { [ "$force" = 0 ] && docker image inspect "$1" >/dev/null 2>&1; }

# A freshly imported image must run, or it is removed: a broken image must not pass for present next time.
check_runs() { # image, command...
  local img=$1; shift
  if ! docker run --rm --network none "$img" "$@" >/dev/null 2>&1; then
    docker image rm -f "$img" >/dev/null 2>&1 || true
    log "$img was built but does not run '$*'; removed it"; exit 1
  fi
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

build_minimal() {
  local img=genaicode-docker/sandbox-minimal:latest
  if present "$img"; then log "$img present"; return; fi
  # The image has no libc: only a statically linked busybox runs in it.
  local bb; bb=$(command -v busybox || true)
  if [ -z "$bb" ] || ! file -L "$bb" 2>/dev/null | grep -q 'statically linked'; then
    [ "$(id -u)" = 0 ] || { log "a statically linked busybox is needed: install the Debian package busybox-static"; exit 1; }
    log "installing busybox-static"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq busybox-static >/dev/null 2>&1 || {
      apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq busybox-static >/dev/null; }
    bb=/bin/busybox
  fi
  local root=$work/minimal
  mkdir -p "$root"/{bin,etc,tmp,root,workspace,proc,sys,dev}
  chmod 1777 "$root/tmp"
  cp "$bb" "$root/bin/busybox"
  for applet in $("$root/bin/busybox" --list); do
    [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' > "$root/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' > "$root/etc/group"
  tar -C "$root" -c . | docker import \
    -c 'ENV PATH=/bin' -c 'WORKDIR /workspace' -c 'CMD ["/bin/sh"]' \
    -c 'LABEL org.opencontainers.image.title=genaicode-docker/sandbox-minimal' \
    - "$img" >/dev/null
  check_runs "$img" /bin/sh -c 'ls / >/dev/null && sleep 0'
  log "$img built"
}

build_python() {
  local img=genaicode-docker/sandbox-python:latest
  if present "$img"; then log "$img present"; return; fi
  need_pkg debootstrap debootstrap
  local root=$work/python
  log "debootstrap bookworm (python3, bash, curl): about a minute"
  debootstrap --variant=minbase --include=python3,bash,curl,ca-certificates \
    bookworm "$root" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" >"$work/debootstrap.log" 2>&1 || {
      tail -n 30 "$work/debootstrap.log" >&2; exit 1; }
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  mkdir -p "$root/workspace"
  tar -C "$root" -c . | docker import \
    -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    -c 'ENV LANG=C.UTF-8' -c 'WORKDIR /workspace' -c 'CMD ["sleep", "infinity"]' \
    -c 'LABEL org.opencontainers.image.title=genaicode-docker/sandbox-python' \
    - "$img" >/dev/null
  check_runs "$img" /bin/bash -c 'python3 -c "import json, sqlite3" && curl --version >/dev/null'
  log "$img built"
}

for w in "${wanted[@]}"; do "build_$w"; done
