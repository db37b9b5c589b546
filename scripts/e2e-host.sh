#!/usr/bin/env bash
# Runs the end-to-end suite against another GenAIcode than the repository's 0.9.5: every
# plugin scenario through that host's real dispatcher.
#
#   GENAICODE_1X_PACKAGE=/path/to/genaicode-1.0.1.tgz npm run test:e2e:1x
#   bash scripts/e2e-host.sh /path/to/genaicode-1.0.1.tgz   (or a built package folder)
#
# GenAIcode's 1.x line has no npm release: build it from its repository's 1.x branch as its
# README says, and pack it (npm pack). The package is installed once into
# .genaicode-hosts/<name>/ (its dependencies from the npm registry), then reused.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
package=${1:-${GENAICODE_1X_PACKAGE:-}}
if [ -z "$package" ]; then
  echo "[e2e-host] no host package given: set GENAICODE_1X_PACKAGE to a packed GenAIcode 1.x (.tgz) or its folder" >&2
  exit 2
fi
[ -e "$package" ] || { echo "[e2e-host] $package does not exist" >&2; exit 2; }
package=$(cd "$(dirname "$package")" && pwd)/$(basename "$package")

stamp=$( (sha256sum "$package" 2>/dev/null || echo "$package") | cut -c1-16)
dir="$root/.genaicode-hosts/$stamp"
if [ ! -f "$dir/node_modules/genaicode/package.json" ]; then
  echo "[e2e-host] installing $package into $dir" >&2
  rm -rf "$dir"
  mkdir -p "$dir"
  # The same override a user needs: a nested sharp@0.32 has no prebuilt binary here.
  printf '{ "name": "genaicode-e2e-host", "private": true, "overrides": { "sharp": "0.33.5" } }\n' >"$dir/package.json"
  printf 'onnxruntime-node-install-cuda=skip\n' >"$dir/.npmrc"
  (cd "$dir" && PUPPETEER_SKIP_DOWNLOAD=1 npm install --no-audit --no-fund --ignore-scripts --loglevel=error "$package")
fi
version=$(node -p "require('$dir/node_modules/genaicode/package.json').version")
echo "[e2e-host] genaicode $version from $dir" >&2
cd "$root"
export NODE_OPTIONS="${NODE_OPTIONS:+$NODE_OPTIONS }--experimental-vm-modules"
# The harness self-test checks 0.9.5's own facts; every plugin scenario runs.
GENAICODE_E2E_HOST="$dir/node_modules/genaicode" npx jest test/e2e --testPathIgnorePatterns /node_modules/ harness-selftest "${@:2}"
