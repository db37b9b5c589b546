#!/usr/bin/env bash
# Regenerate the corpus of real tool output under bench/corpus/out/.
#
#   bash bench/corpus/make-corpus.sh            # every item
#   bash bench/corpus/make-corpus.sh ITEM...    # just these items
#
# For each item: copy src/ITEM to /tmp/gcd-corpus/ITEM, run the item's setup (if any, output
# not recorded), then run its command with `bash -c` and record cmd, stdout, stderr (raw bytes)
# and the exit code in out/ITEM/. out/ITEM/needed is hand-written and never touched here; at
# the end every needed line is checked against the item's stdout/stderr.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
SRC=$HERE/src
OUT=$HERE/out
SCRATCH=/tmp/gcd-corpus
BIN=$REPO/node_modules/.bin

ITEMS=(
  python-traceback
  pytest-failures
  unittest-failures
  gcc-warnings-then-errors
  make-keep-going
  cmake-configure-error
  cargo-build-error
  cargo-test-failures
  rust-panic
  node-crash
  node-test-tap
  jest-failures
  tsc-errors
  eslint-errors
  javac-errors
  java-exception
  asan-heap-overflow
  valgrind-invalid-read
  segfault
  assert-abort
  cat-mixed-binary
  long-build-log
  python-long-log-middle-errors
  bash-set-e
  exit0-file-listing
  pytest-all-passed
  node-test-spec
  tsc-pretty
  big-log-warnings
  pytest-param
  doctest
  cpp-template
  jest-snap
  make-recipe-tool
  exit0-pytest-levels
  exit0-node-spec
  cat-gzip-glued
)

declare -A CMD=(
  [python-traceback]='python3 report.py'
  [pytest-failures]='python3 -m pytest'
  [unittest-failures]='python3 -m unittest -v'
  [gcc-warnings-then-errors]='gcc -Wall -Wextra -c ringbuf.c -o ringbuf.o'
  [make-keep-going]='make -k'
  [cmake-configure-error]='cmake -S . -B build'
  [cargo-build-error]='cargo build --offline'
  [cargo-test-failures]='cargo test --offline'
  [rust-panic]='cargo run --offline'
  [node-crash]='node export.js'
  [node-test-tap]='node --test --test-reporter=tap'
  [jest-failures]="$BIN/jest --config jest.config.js --rootDir . --ci --colors=false"
  [tsc-errors]="$BIN/tsc --noEmit --pretty false -p ."
  [eslint-errors]="$BIN/eslint --config eslint.config.js ."
  [javac-errors]='javac -d out src/com/example/billing/*.java'
  [java-exception]='java Main'
  [asan-heap-overflow]='gcc -g -fsanitize=address -o scores main.c reader.c && ./scores'
  [valgrind-invalid-read]='gcc -g -O0 -o prog prog.c && valgrind --error-exitcode=1 ./prog'
  [segfault]='./prog'
  [assert-abort]='gcc -g -o prog main.c && ./prog'
  [cat-mixed-binary]='cat logs/*'
  [long-build-log]='make'
  [python-long-log-middle-errors]='python3 sync.py'
  [bash-set-e]='./deploy.sh staging'
  [exit0-file-listing]='find . -type f | sort'
  [pytest-all-passed]='python3 -m pytest -v'
  [node-test-spec]='node --test --test-reporter=spec'
  [tsc-pretty]="$BIN/tsc -p . --pretty"
  [big-log-warnings]='make -k'
  [pytest-param]='python3 -m pytest -q'
  [doctest]='python3 -m doctest stats.py'
  [cpp-template]='g++ -c main.cpp'
  [jest-snap]="$BIN/jest --rootDir . --config '{}' --ci"
  [make-recipe-tool]='make'
  [exit0-pytest-levels]='python3 -m pytest -v'
  [exit0-node-spec]='node --test --test-reporter=spec'
  [cat-gzip-glued]='cat logs/*'
)

# Preparation that is not part of the recorded command.
setup_item() {
  case "$1" in
    cat-mixed-binary) gzip -n logs/app-2.log ;; # -> logs/app-2.log.gz, between the two text logs
    # A large gzip member between two small text logs; the last one's first line follows the
    # member's last bytes on the same line (it has no newline of its own).
    cat-gzip-glued) python3 gen.py && gzip -n logs/2-access.log ;;
    long-build-log) python3 gen.py ;;           # writes src/codec_001.c ... src/codec_400.c
    big-log-warnings) python3 gen.py ;;         # writes src/m1.c ... src/m120.c
    segfault) gcc -g -O0 -o prog prog.c ;;
    java-exception) javac Main.java ;;
    *) ;;
  esac
}

# The fixed environment every command runs in (nothing else leaks in from the caller).
# Used as: env "${FIXED_ENV[@]}" CARGO_TARGET_DIR=... bash -c CMD
FIXED_ENV=(
  -i HOME="$HOME" PATH="$PATH"
  LC_ALL=C.UTF-8 LANG=C.UTF-8 NO_COLOR=1 TERM=dumb CI=1 FORCE_COLOR=0 COLUMNS=80
  CARGO_TERM_COLOR=never
)
[[ -n ${PYENV_ROOT:-} ]] && FIXED_ENV+=(PYENV_ROOT="$PYENV_ROOT")

run_item() {
  local item=$1
  local cmd=${CMD[$item]}
  local dir=$SCRATCH/$item
  local out=$OUT/$item
  [[ -d $SRC/$item ]] || { echo "make-corpus: no source dir $SRC/$item" >&2; return 1; }

  rm -rf "$dir"
  mkdir -p "$SCRATCH"
  cp -a "$SRC/$item" "$dir"
  mkdir -p "$out"

  local log
  log=$(mktemp)
  if ! (cd "$dir" && env "${FIXED_ENV[@]}" CARGO_TARGET_DIR="$dir/target" \
    bash -c "$(declare -f setup_item); setup_item $item") >"$log" 2>&1; then
    echo "make-corpus: setup of $item failed:" >&2
    cat "$log" >&2
    rm -f "$log"
    return 1
  fi
  rm -f "$log"

  printf '%s\n' "$cmd" >"$out/cmd"
  # The subshell waits for the command itself (the `|| rc=$?` keeps bash from exec-ing it),
  # so its "Segmentation fault"-style job message goes to /dev/null, not into the recording;
  # a signal death gives rc = 128+N.
  (
    cd "$dir"
    ulimit -c 0
    rc=0
    env "${FIXED_ENV[@]}" CARGO_TARGET_DIR="$dir/target" \
      bash -c "$cmd" >"$out/stdout" 2>"$out/stderr" </dev/null || rc=$?
    printf '%s\n' "$rc" >"$out/exit"
  ) 2>/dev/null
  local rc
  rc=$(cat "$out/exit")
  printf '%-32s exit %-3s stdout %8s  stderr %8s\n' "$item" "$rc" \
    "$(wc -c <"$out/stdout")" "$(wc -c <"$out/stderr")"
}

# Every line of out/ITEM/needed must occur in one line of that item's stdout or stderr.
check_needed() {
  local bad=0 item line
  for item in "$@"; do
    local out=$OUT/$item
    if [[ ! -f $out/needed ]]; then
      echo "make-corpus: MISSING $out/needed" >&2
      bad=1
      continue
    fi
    while IFS= read -r line || [[ -n $line ]]; do
      [[ -z $line ]] && continue
      if ! grep -qaF -- "$line" "$out/stdout" "$out/stderr"; then
        echo "make-corpus: $item: needed line not found in output: $line" >&2
        bad=1
      fi
    done <"$out/needed"
  done
  if ((bad)); then
    echo "make-corpus: CHECK FAILED" >&2
    return 1
  fi
  echo "make-corpus: all needed lines found ($# items)"
}

main() {
  local items=("$@")
  ((${#items[@]})) || items=("${ITEMS[@]}")
  local item
  for item in "${items[@]}"; do
    if [[ -z ${CMD[$item]+x} ]]; then
      echo "make-corpus: unknown item '$item' (known: ${ITEMS[*]})" >&2
      exit 2
    fi
  done
  for item in "${items[@]}"; do
    run_item "$item"
  done
  check_needed "${items[@]}"
}

main "$@"
