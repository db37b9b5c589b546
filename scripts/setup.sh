#!/usr/bin/env bash
# One idempotent set-up for the demo, the tests, the benchmarks and CI:
#   1. a container engine that answers (yours is used as is; else Docker Engine is
#      installed from Debian's archive and started, see ensure-engine.sh);
#   2. the sandbox images, built offline from Debian packages when missing;
#   3. with --test: the six language images (python, nodejs, java, go, ruby, php) the
#      integration tests check, and the tools the tests use (a loopback registry, shellcheck).
# Nothing is changed on a machine where all of it is already there.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")

bash "$here/ensure-engine.sh"
bash "$root/docker/build-offline.sh" sandbox-minimal sandbox-python

if [ "${1:-}" = "--test" ]; then
  # A few minutes once (docs/images.md), then cached: present images are left alone.
  bash "$root/docker/build-offline.sh" all-languages
  if ! command -v docker-registry >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
      echo "[setup] installing docker-registry (loopback registry for the pull tests)" >&2
      export DEBIAN_FRONTEND=noninteractive
      apt-get install -y -qq docker-registry >/dev/null 2>&1 || {
        apt-get update -qq >/dev/null && apt-get install -y -qq docker-registry >/dev/null; }
    else
      echo "[setup] docker-registry is missing: install the Debian package docker-registry (the pull tests need it)" >&2
      exit 1
    fi
  fi
  # The Debian package starts a registry service on :5000 where systemd runs; the tests start their own.
  if ! command -v shellcheck >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
      echo "[setup] installing shellcheck (npm run lint checks the shell scripts)" >&2
      export DEBIAN_FRONTEND=noninteractive
      apt-get install -y -qq shellcheck >/dev/null 2>&1 || {
        apt-get update -qq >/dev/null && apt-get install -y -qq shellcheck >/dev/null; }
    else
      echo "[setup] shellcheck is missing: install the Debian package shellcheck (npm run lint needs it)" >&2
      exit 1
    fi
  fi
fi
