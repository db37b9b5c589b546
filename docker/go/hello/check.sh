#!/bin/sh
# The toolchain check of genaicode-docker/go, run inside the image in a copy of this
# folder (docker/build-offline.sh before an image counts as built, and the integration test).
# No network: nothing is fetched, the module has no dependencies.
set -eu
export GOFLAGS=-mod=mod GOPROXY=off GOCACHE=/tmp/gocache GOPATH=/tmp/gopath
go version
test -z "$(gofmt -l .)"
go vet ./...
go test ./...
# Debian names it go-staticcheck, the Dockerfile's image staticcheck.
if command -v staticcheck >/dev/null 2>&1; then staticcheck ./...; else go-staticcheck ./...; fi
echo "hello-go: ok"
