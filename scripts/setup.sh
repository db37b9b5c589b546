#!/usr/bin/env bash
# One idempotent set-up for the demo, the tests, the benchmarks and CI:
#   1. a container engine that answers (yours is used as is; else Docker Engine is
#      installed from Debian's archive and started, see ensure-engine.sh);
#   2. the sandbox images, built offline from Debian packages when missing;
#   3. with --test: the six language images (python, nodejs, java, go, ruby, php) the
#      integration tests check, and the tools the tests use (a loopback registry, shellcheck,
#      an sshd).
# Nothing is changed on a machine where all of it is already there.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")

bash "$here/ensure-engine.sh"
bash "$root/docker/build-offline.sh" sandbox-minimal sandbox-python

if [ "${1:-}" = "--test" ]; then
  # A few minutes once (docs/images.md), then cached: present images are left alone.
  bash "$root/docker/build-offline.sh" all-languages
  # need FILE PACKAGE WHY: installs the Debian package PACKAGE (as root) when FILE is missing.
  need() {
    [ -x "$1" ] && return 0
    if [ "$(id -u)" = 0 ]; then
      echo "[setup] installing $2 ($3)" >&2
      export DEBIAN_FRONTEND=noninteractive
      apt-get install -y -qq --no-install-recommends "$2" >/dev/null 2>&1 || {
        apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends "$2" >/dev/null; }
    else
      echo "[setup] $1 is missing: install the Debian package $2 ($3)" >&2
      exit 1
    fi
  }
  # The Debian package starts a registry service on :5000 where systemd runs; the tests start their own.
  need /usr/bin/docker-registry docker-registry 'a loopback registry for the pull tests'
  need /usr/bin/shellcheck shellcheck 'npm run lint checks the shell scripts'
  # No sshd is started by it here (no systemd); the test starts its own on loopback.
  need /usr/sbin/sshd openssh-server 'the ssh-forwarded engine test runs a real sshd on loopback'
fi
