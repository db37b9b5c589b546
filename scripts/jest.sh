#!/usr/bin/env bash
# Runs the test suites in phases, and fails if any failed:
#  1. every file but the sweep tests, in parallel;
#  2. test/integration/sandbox/sweep.test.ts and cli-background-orphans.test.ts alone: they set up
#     containers whose owner is gone on purpose, which a start-up sweep of another file's CLI or
#     genaicode child would remove.
#  3. test/integration/sandbox/frozen-engine.test.ts alone; then the other engines and hosts below.
# Options go to every jest run (e.g. --ci, --silent); to run some files, call jest itself.
# Each phase's output is also kept, and the failures of the phases that failed are printed
# again at the end, where a CI log's tail shows them.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
export NODE_OPTIONS="${NODE_OPTIONS:+$NODE_OPTIONS }--experimental-vm-modules"
SWEEP=test/integration/sandbox/sweep.test.ts
# Kills a background job's supervisor on purpose and looks at the orphan it leaves: alone too, with the sweep tests.
ORPHANS=test/integration/cli/cli-background-orphans.test.ts
# Wedges containers on purpose (their engine lock held, their keep-alive frozen; the test ends
# them from the host at its end): meanwhile the engine holds up calls that look at every
# container (docker rmi), so it runs alone too, after the sweep tests.
FROZEN=test/integration/sandbox/frozen-engine.test.ts

# Podman first (installed from Debian's archive if missing, its API started, the sandbox images
# loaded; idempotent): phase 5 runs on it, and one file of phase 1 runs the Kubernetes Pod the
# adapter generates with `podman kube play`.
LOGS=$(mktemp -d)
declare -A rc
# Runs one phase, its output on the terminal and in $LOGS/<name>.log.
phase() {
  local name=$1
  shift
  "$@" 2>&1 | tee "$LOGS/$name.log"
}

echo "[jest.sh] Podman's API and images (scripts/engine/podman.sh)"
podman_env=$(bash scripts/engine/podman.sh start)
podman_up=$?
# Rootless Podman too (its own user and socket): test/integration/engine/podman-rootless.test.ts
# in phase 1 runs on it, and phase 6 runs the engine-facing files there where it can.
echo "[jest.sh] rootless Podman's API and images (scripts/engine/podman.sh start --rootless)"
rootless_env=$(bash scripts/engine/podman.sh start --rootless)
rootless_up=$?

phase parallel npx jest "$@" --testPathIgnorePatterns "/node_modules/" "/${SWEEP//./\\.}\$" "/${ORPHANS//./\\.}\$" "/${FROZEN//./\\.}\$"
rc[parallel]=$?
echo "[jest.sh] then ${SWEEP} and ${ORPHANS} alone"
phase sweep npx jest --runInBand "$@" "$SWEEP" "$ORPHANS"
rc[sweep]=$?
echo "[jest.sh] then ${FROZEN} alone"
# --forceExit: a request the engine never answered (bounded by us, not closed by it) must not hold jest.
phase frozen npx jest --runInBand --forceExit "$@" "$FROZEN"
rc[frozen]=$?

# 3. With GENAICODE_1X_PACKAGE (a packed GenAIcode 1.x: it has no npm release), every
#    end-to-end scenario again through that host's dispatcher (scripts/e2e-host.sh).
rc[host1x]=0
if [ -n "${GENAICODE_1X_PACKAGE:-}" ]; then
  echo "[jest.sh] then the end-to-end suite on GenAIcode 1.x (${GENAICODE_1X_PACKAGE})"
  phase host1x bash scripts/e2e-host.sh "$GENAICODE_1X_PACKAGE" "$@"
  rc[host1x]=$?
else
  echo "[jest.sh] the end-to-end suite ran on GenAIcode 0.9.5 only: set GENAICODE_1X_PACKAGE to a packed 1.x to run it there too (docs/hosts.md)"
fi

# 4. The engine-facing files again on a remote engine: a second dockerd on loopback over TLS
#    (scripts/engine/second-engine.sh, idempotent and offline), through DOCKER_HOST and friends.
#    Not starting is a failure, never a skip. Host folders are refused there by design, so the
#    files that mount them are not in this list (test/integration/engine/remote-engine.test.ts
#    checks the refusal).
REMOTE_FILES=(test/integration/commands/exec-basics.test.ts test/integration/commands/output-capture.test.ts
  test/integration/files/archive-writes.test.ts test/integration/engine/remote-engine.test.ts)
echo "[jest.sh] then the engine-facing files on the second (TLS) engine"
if remote_env=$(bash scripts/engine/second-engine.sh start); then
  # shellcheck disable=SC2016 # expanded by the inner shell
  phase remote bash -c 'eval "$1" && shift && npx jest "$@"' _ "$remote_env" "$@" "${REMOTE_FILES[@]}"
  rc[remote]=$?
else
  echo "[jest.sh] the second engine did not start (see above)" >&2
  rc[remote]=1
fi

# 5. The engine-facing files again on Podman's Docker API (scripts/engine/podman.sh: Debian's
#    podman, its service on a socket of its own, images loaded from the main engine), with
#    GENAICODE_DOCKER_TEST_ENGINE=podman so that Docker-only shapes are not asserted there.
PODMAN_FILES=(test/integration/commands/exec-basics.test.ts test/integration/commands/output-capture.test.ts
  test/integration/files/archive-writes.test.ts test/integration/files/container-files.test.ts
  test/integration/sandbox/lifecycle.test.ts)
# The writable and scratch project (its overlay a named volume there): rootful Podman only,
# where this runs as root (docs/engines.md says why).
ROOTFUL_FILES=("${PODMAN_FILES[@]}" test/integration/project/project-overlay.test.ts)
echo "[jest.sh] then the engine-facing files on Podman"
if [ "$podman_up" -eq 0 ]; then
  # shellcheck disable=SC2016 # expanded by the inner shell
  phase podman bash -c 'eval "$1" && shift && GENAICODE_DOCKER_TEST_ENGINE=podman npx jest "$@"' _ "$podman_env" "$@" "${ROOTFUL_FILES[@]}"
  rc[podman]=$?
else
  echo "[jest.sh] Podman's API did not start (see above)" >&2
  rc[podman]=1
fi

# 6. The same files on rootless Podman. On cgroups v1 a rootless engine cannot enforce a
#    container's limits and every start is refused (phase 1 tests that refusal); the files run
#    there with engine.rootlessWithoutLimits, the operator's way to accept that, which these
#    files' tests do not depend on. The writable and scratch project on rootless Podman need the
#    engine's own user: podman-rootless.test.ts (phase 1) runs the CLI as that user.
rc[rootless]=0
if [ "$rootless_up" -ne 0 ]; then
  echo "[jest.sh] rootless Podman's API did not start (see above)" >&2
  rc[rootless]=1
else
  rootless_socket=${rootless_env#export DOCKER_HOST=unix://}
  cgroups=$(curl -fsS --max-time 10 --unix-socket "$rootless_socket" http://d/v1.40/info | grep -o '"CgroupVersion":"[0-9]"' || true)
  without_limits=()
  if [ "$cgroups" != '"CgroupVersion":"2"' ]; then
    echo "[jest.sh] rootless Podman runs on cgroups v1 here (${cgroups:-no CgroupVersion in its info}): it cannot enforce limits, so the files run with GENAICODE_DOCKER_ROOTLESS_WITHOUT_LIMITS=1 (docs/engines.md)"
    without_limits=(GENAICODE_DOCKER_ROOTLESS_WITHOUT_LIMITS=1)
  fi
  echo "[jest.sh] then the engine-facing files on rootless Podman"
  # shellcheck disable=SC2016 # expanded by the inner shell
  phase rootless env "${without_limits[@]}" bash -c 'eval "$1" && shift && GENAICODE_DOCKER_TEST_ENGINE=podman npx jest "$@"' _ "$rootless_env" "$@" "${PODMAN_FILES[@]}"
  rc[rootless]=$?
fi

failed=()
for p in parallel sweep frozen host1x remote podman rootless; do
  [ "${rc[$p]}" -ne 0 ] && failed+=("$p (exit ${rc[$p]})")
done
if [ "${#failed[@]}" -ne 0 ]; then
  for p in parallel sweep frozen host1x remote podman rootless; do
    [ "${rc[$p]}" -eq 0 ] || [ ! -f "$LOGS/$p.log" ] && continue
    echo "[jest.sh] the failures of phase $p again (its whole output: $LOGS/$p.log):" >&2
    # Jest repeats them under "Summary of all failing tests" when several files ran: that copy
    # only; else each failing test's block, from its "●" line, capped.
    if grep -q '^Summary of all failing tests' "$LOGS/$p.log"; then
      sed -n '/^Summary of all failing tests/,$p' "$LOGS/$p.log" | head -200 >&2
    else
      awk '/^  ● / && !/● Console/ { n = 40 } n > 0 { print; n-- }' "$LOGS/$p.log" | head -200 >&2
    fi
  done
  echo "[jest.sh] FAILED: ${failed[*]}" >&2
  exit 1
fi
rm -rf "$LOGS"
