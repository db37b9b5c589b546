# shellcheck shell=sh disable=SC2154 # o and p are set by counters (counters.sh, put before this)
# Runs one command ("$@") between a header and a trailer on stderr (after counters.sh):
#   header  \036<wrapper pid>:<oom kills>:<refused forks>\036   before the command's first byte
#   trailer \036<oom kills>:<refused forks>\036                   after its last
# The engine starts each exec as a process group leader, so the wrapper's pid is also the
# group of everything the command starts: a timeout kills that tree (kill-tree.sh). The
# counters before and after say whether this command hit the memory or process limit.
# First of all, the exec's mark (GENAICODE_DOCKER_EXEC=<rss kB>:<cpu s>, exec-marks.ts): its
# hard and soft limits on RSS and CPU time, lowered for good, inherited by all the command
# starts; its kill takes every process at or below them. A mark that cannot be set (limits
# below it) runs nothing: the kill could not find the command.
# shellcheck disable=SC3045 # -m and -t: dash and busybox ash both have them (and set hard and soft)
if [ -n "${GENAICODE_DOCKER_EXEC-}" ] && ! { ulimit -m "${GENAICODE_DOCKER_EXEC%%:*}" && ulimit -t "${GENAICODE_DOCKER_EXEC#*:}"; } 2>/dev/null; then
  echo "genaicode-docker: this container's limits on RSS or CPU time are below the exec's mark; the command was not run" >&2
  exit 125
fi
counters
printf '\036%s:%s:%s\036' "$$" "$o" "$p" >&2
"$@"
rc=$?
# Whatever the command left running in its group (`cmd &` without setsid) is stopped, so
# a finished command leaves nothing behind that keeps its output open or fills the process
# limit: SIGTERM to the group (the wrapper ignores it), then to each member left, then
# SIGKILL, until /proc shows none. Daemons started with setsid are left alone on purpose.
trap '' TERM
kill -s TERM 0 2>/dev/null
n=0
while [ "$n" -lt 40 ]; do
  left=""
  for d in /proc/[0-9]*; do
    q=${d#/proc/}
    [ "$q" = "$$" ] && continue
    s=""
    { read -r s < "$d/stat"; } 2>/dev/null || continue
    s=${s##*) }
    # shellcheck disable=SC2086 # split the stat fields: state, ppid, pgrp
    set -- $s
    [ "$3" = "$$" ] && [ "$1" != Z ] && left="$left $q"
  done
  [ -z "$left" ] && break
  n=$((n + 1))
  # shellcheck disable=SC2086 # a list of pids
  if [ "$n" -gt 20 ]; then kill -s KILL $left 2>/dev/null; else kill -s TERM $left 2>/dev/null; fi
done
counters
printf '\036%s:%s\036' "$o" "$p" >&2
exit "$rc"
