#!/usr/bin/env bash
# Runs the test suites in two phases, and fails if either failed:
#  1. every file but the sweep tests, in parallel;
#  2. test/integration/sweep.test.ts alone: it sets up containers whose owner is gone on
#     purpose, which a start-up sweep of another file's CLI or genaicode child would remove.
# Options go to both jest runs (e.g. --ci, --silent); to run some files, call jest itself.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
export NODE_OPTIONS="${NODE_OPTIONS:+$NODE_OPTIONS }--experimental-vm-modules"
SWEEP=test/integration/sweep.test.ts

npx jest "$@" --testPathIgnorePatterns "/node_modules/" "/${SWEEP//./\\.}\$"
parallel=$?
echo "[jest.sh] then ${SWEEP} alone"
npx jest --runInBand "$@" "$SWEEP"
alone=$?

if [ "$parallel" -ne 0 ] || [ "$alone" -ne 0 ]; then
  echo "[jest.sh] FAILED: parallel phase exit ${parallel}, ${SWEEP} exit ${alone}" >&2
  exit 1
fi
