#!/bin/sh
# The toolchain check of genaicode-docker/nodejs, run inside the image in a copy of this
# folder (docker/build-offline.sh before an image counts as built, and the integration test).
set -eu
node greet.mjs
node --test --test-reporter=tap greet.test.mjs
echo "npm $(npm --version)"
echo "hello-nodejs: ok"
