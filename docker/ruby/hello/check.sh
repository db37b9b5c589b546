#!/bin/sh
# The toolchain check of genaicode-docker/ruby, run inside the image in a copy of this
# folder (docker/build-offline.sh before an image counts as built, and the integration test).
set -eu
ruby -wc greet.rb
ruby greet.rb
ruby test_greet.rb
rubocop --cache false --format simple greet.rb test_greet.rb
echo "hello-ruby: ok"
