#!/bin/sh
# The toolchain check of genaicode-docker/java, run inside the image in a copy of this
# folder (docker/build-offline.sh before an image counts as built, and the integration test).
set -eu
junit=/usr/share/java/junit-platform-console-standalone.jar
javac -d out Hello.java HelloTest.java
java -cp out Hello
java -ea -cp out HelloTest
javac -d out -cp "$junit:out" HelloJUnitTest.java
java -jar "$junit" --disable-banner --disable-ansi-colors --details=summary --class-path out --select-class HelloJUnitTest
# Maven cannot fetch its plugins without a network: its presence is what is checked here.
mvn -B --version 2>&1 | sed 's/\x1b\[[0-9;]*m//g' | head -n 1
echo "hello-java: ok"
