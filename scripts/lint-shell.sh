#!/usr/bin/env bash
# Runs ShellCheck over every shell file the project runs: the set-up scripts, the image builder,
# CI, and the scripts that run inside containers (POSIX sh: they must work in any image; the
# golden images' toolchain checks too).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v shellcheck >/dev/null 2>&1; then
  echo "[lint-shell] shellcheck is missing: install the Debian package shellcheck (scripts/setup.sh --test does)" >&2
  exit 1
fi
shellcheck scripts/*.sh scripts/engine/*.sh docker/*.sh bench/corpus/make-corpus.sh .ci/run
shellcheck --shell=sh scripts/container/*.sh docker/*/hello/check.sh
