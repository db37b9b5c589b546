#!/bin/sh
# The toolchain check of genaicode-docker/python, run inside the image in a copy of this
# folder (docker/build-offline.sh before an image counts as built, and the integration test).
set -eu
python3 greet.py
python3 -m pytest -q -p no:cacheprovider
python3 -m flake8 --version >/dev/null && python3 -m flake8 .
python3 -m black --check --quiet .
echo "hello-python: ok"
