#!/bin/sh
# The toolchain check of genaicode-docker/php, run inside the image in a copy of this
# folder (docker/build-offline.sh before an image counts as built, and the integration test).
set -eu
for f in Greet.php GreetTest.php; do php -l "$f"; done
php assert.php
phpcs --standard=PSR12 Greet.php GreetTest.php
phpunit --do-not-cache-result --bootstrap Greet.php GreetTest.php
echo "hello-php: ok"
