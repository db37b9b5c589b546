# shellcheck shell=sh disable=SC2154 # o and p are set by counters (counters.sh, put before this)
# Prints the counters (after counters.sh) in the trailer's form on stdout, for a command
# that was killed before its own trailer: \036<oom kills>:<refused forks>\036
counters
printf '\036%s:%s\036' "$o" "$p"
