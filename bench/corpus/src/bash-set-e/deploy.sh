#!/usr/bin/env bash
set -euo pipefail

APP=shop-api
ENVIRONMENT=${1:-staging}
RELEASE_DIR=./releases
echo "deploying $APP to $ENVIRONMENT"

mkdir -p "$RELEASE_DIR"
version=$(grep -m1 '^version=' app.conf | cut -d= -f2)
echo "version $version"

artifact="$RELEASE_DIR/$APP-$version.tar"
tar -cf "$artifact" app.conf
echo "packed $artifact ($(wc -c < "$artifact") bytes)"

echo "uploading to $DEPLOY_HOST:/srv/$APP"
scp "$artifact" "$DEPLOY_HOST:/srv/$APP/"
echo "done"
