# Runs a snippet that arrives on stdin: sh -c RUN_CODE run-code <python|bash> [clean-first]
# (or only kills what is left running: sh -c RUN_CODE run-code clean).
# The code never passes through a command line or a file: python3 reads its program from
# stdin (`python3 -`); bash reads it from fd 3 (the same stdin), with /dev/null as the
# script's own stdin, so a command in it that reads stdin cannot eat the rest of the script,
# and a full /tmp cannot stop it. After the snippet (and before it, when the last call did
# not end by itself: clean-first), every process an earlier
# snippet left running (setsid, double forks, nohup) is killed: nothing but the container's
# init (pid 1) and its keep-alive (init's oldest child running `sleep <ttl>`; under load it
# can start after this script) outlives a call.
scan_and_kill() {
  keep=""
  oldest=""
  for d in /proc/[0-9]*; do
    q=${d#/proc/}
    [ "$q" = 1 ] && continue
    s=""
    { read -r s < "$d/stat"; } 2>/dev/null || continue
    s=${s##*) }
    # shellcheck disable=SC2086 # split the stat fields; $2 is the parent, ${20} the start time
    set -- $s
    [ "$2" = 1 ] || continue
    cl=""
    { read -r cl < "$d/cmdline"; } 2> /dev/null
    case "$cl" in sleep[0-9]*) ;; *) continue ;; esac
    if [ -z "$oldest" ] || [ "${20}" -lt "$oldest" ]; then
      oldest=${20}
      keep=$q
    fi
  done
  left=""
  for d in /proc/[0-9]*; do
    q=${d#/proc/}
    case " 1 $keep $$ $PPID " in *" $q "*) continue ;; esac
    left="$left $q"
  done
  [ -n "$left" ] || return 1
  for q in $left; do killed=$((killed + 1)); done
  # shellcheck disable=SC2086 # a list of pids
  kill -s KILL $left 2> /dev/null
  return 0
}
# Again while something was found: a process can fork between the scan and the kill.
clean() {
  i=0
  while [ "$i" -lt 5 ] && scan_and_kill; do i=$((i + 1)); done
  return 0
}
killed=0
lang=$1
[ "${2:-}" = clean-first ] && clean
case "$lang" in
  # Only the clean-up (commands/disk-watch.ts: the writer left running when the disk limit
  # is passed between commands); prints how many it killed.
  clean) clean; echo "gone $killed"; exit 0 ;;
  # -I: the working folder (where an earlier snippet may have left a json.py) is not on
  # the import path, nor are PYTHON* variables or the user's site folder read.
  python) python3 -I - ;;
  bash) bash /dev/fd/3 3<&0 < /dev/null ;;
  *) echo "run-code: unknown language $lang" >&2; exit 125 ;;
esac
rc=$?
clean
exit "$rc"
