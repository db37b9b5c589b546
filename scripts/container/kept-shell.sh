# shellcheck shell=sh disable=SC2154 # o and p are set by counters (counters.sh, put before this)
# The kept shell: one long-lived shell per container that runs the model's commands one
# after another, so that the working folder and the exported variables carry over from one
# command to the next (src/commands/kept-shell.ts writes its requests and reads its frames).
#
# Each command runs in a subshell of this one (a fork, no exec: about a millisecond), never
# in this shell itself: `exit`, `exec`, `set -e`, `trap`, `ulimit` or a killed command end
# the subshell, not the shell. At its end (its EXIT trap, which `exit` and `set -e` run too)
# the subshell writes its state, its folder and `export -p`, to a file of this shell's, and
# this shell takes that state on: `cd` and the exports. A subshell that ended without writing
# it (killed, `exec`, its own EXIT trap, /tmp full) leaves the state as it was. (A pipe would
# need a descriptor the command does not inherit, or a daemon it starts would hold it open;
# closed for the command only, it is closed for its `exit` too.)
#
# A request on stdin, from the host only:
#   <nonce> <marker> <n>     then n lines, each `+` and one line of the command
# (the marker is the command's mark, GENAICODE_DOCKER_EXEC=<rss kB>:<cpu s>, below the shell's)
# The nonce (32 hex digits, new for each command) frames the answer, so that no output can
# end a command early by accident:
#   stdout  \037<nonce>b\037  the command's stdout  \037<nonce>e\037<exit>:<kept>:<folder>\0
#   stderr  \037<nonce>b\037  header, the command's stderr, trailer (as exec-wrapper.sh)  \037<nonce>e\037
# (\037, not the header's \036: the header's last byte is then never held back as the
# possible start of the end mark, and a timeout's kill reads the pid as soon as it is written.)
# <kept> is 1 when the state was taken on. The command's subshell lowers its limits to the
# marker's pair before its header, so a timeout's kill (kill-tree.sh) finds everything it started.
# Names of this shell's own variables start with __k, so an export of the command's cannot
# overwrite them unawares (only one that means to).
__kstate=/tmp/.genaicode-docker-shell.$$
# The shell's mark (GENAICODE_DOCKER_EXEC=<rss kB>:<cpu s>, exec-marks.ts), as exec-wrapper.sh
# sets a command's; each command's is below it (set in its subshell, __krun), so a command's
# kill never reaches the shell and the shell's reaches its commands.
# shellcheck disable=SC3045 # -m and -t: dash and busybox ash both have them (and set hard and soft)
{ ulimit -m "${GENAICODE_DOCKER_EXEC%%:*}" && ulimit -t "${GENAICODE_DOCKER_EXEC#*:}"; } || exit 3
# This shell's own messages (busybox prints `Killed` when a command's subshell dies of a
# signal) go nowhere: its frames go to the exec's stderr through fd 5, and each subshell
# gets that stderr back as its fd 2 (and not fd 5).
exec 5>&2 2>/dev/null
__knl='
'
# `kill $$` in a command names this shell: it is not the command's to end. Caught (not
# ignored) so that the subshells get the default action back.
trap ':' TERM INT HUP QUIT
__kquote() {
  __kq=$1 __kr=
  while :; do
    case "$__kq" in
      *\'*) __kr="$__kr${__kq%%\'*}'\\''"; __kq=${__kq#*\'} ;;
      *) break ;;
    esac
  done
  printf "'%s%s'" "$__kr" "$__kq"
}
__ksave() {
  __krc=$?
  {
    printf 'cd -- '
    __kquote "$PWD"
    printf '\n'
    unset GENAICODE_DOCKER_EXEC
    command export -p
  } > "$__kstate" 2>/dev/null
  exit "$__krc"
}
__krun() {
  __kx=${__kmark#*=}
  # shellcheck disable=SC3045 # as above
  { ulimit -m "${__kx%%:*}" && ulimit -t "${__kx#*:}"; } || exit 125
  read -r __kme __kx < /proc/self/stat
  counters
  printf '\036%s:%s:%s\036' "$__kme" "$o" "$p" >&2
  trap - TERM INT HUP QUIT
  export "${__kmark?}"
  trap __ksave EXIT
  __kc=$__kcmd
  unset __kcmd __kline __kn __kmark __kme __kx __ki __krc o p
  eval "$__kc" </dev/null
}
while IFS= read -r __kline; do
  __kn=${__kline%% *}
  __kline=${__kline#* }
  __kmark=${__kline%% *}
  __ki=${__kline#* }
  case "$__kn$__ki" in *[!0-9a-f]* | '') exit 2 ;; esac
  __kcmd=
  while [ "$__ki" -gt 0 ]; do
    IFS= read -r __kline || exit 2
    __kcmd="$__kcmd$__knl${__kline#+}"
    __ki=$((__ki - 1))
  done
  __kcmd=${__kcmd#"$__knl"}
  printf '\037%sb\037' "$__kn"
  printf '\037%sb\037' "$__kn" >&5
  : > "$__kstate"
  (
    exec 2>&5 5>&-
    __krun
  )
  __krc=$?
  # What the command left running in this shell's process group (`cmd &` without setsid) is
  # stopped, as exec-wrapper.sh does after a command: this shell is the only member that
  # stays. Daemons started with setsid are left alone on purpose.
  __ki=0
  while [ "$__ki" -lt 40 ]; do
    __kleft=
    for __kd in /proc/[0-9]*; do
      __kq=${__kd#/proc/}
      [ "$__kq" = "$$" ] && continue
      __ks=
      { read -r __ks < "$__kd/stat"; } 2>/dev/null || continue
      __ks=${__ks##*) }
      __kifs=$IFS
      IFS=' '
      # shellcheck disable=SC2086 # split the stat fields: state, ppid, pgrp
      set -- $__ks
      IFS=$__kifs
      [ "$3" = "$$" ] && [ "$1" != Z ] && __kleft="$__kleft $__kq"
    done
    [ -z "$__kleft" ] && break
    __ki=$((__ki + 1))
    # shellcheck disable=SC2086 # a list of pids
    if [ "$__ki" -gt 20 ]; then kill -s KILL $__kleft 2>/dev/null; else kill -s TERM $__kleft 2>/dev/null; fi
  done
  __kkept=0
  # shellcheck disable=SC1090 # the state the subshell wrote
  if [ -s "$__kstate" ]; then
    # A variable the command unset (or stopped exporting) is dropped here too: every export
    # of this shell goes before the command's are taken on. Read from a file, not `$(...)`:
    # no fork. A line of a multi-line value that looks like an export only unsets a variable
    # the state then exports again.
    command export -p > "$__kstate.x" 2>/dev/null
    while IFS= read -r __kq; do
      case "$__kq" in
        'export '*)
          __kq=${__kq#export }
          __kq=${__kq%%=*}
          case "$__kq" in __k* | GENAICODE_DOCKER_EXEC | '' | *[!A-Za-z0-9_]*) ;; *) unset "$__kq" ;; esac
          ;;
      esac
    done < "$__kstate.x"
    . "$__kstate" 2>/dev/null && __kkept=1
  fi
  counters
  printf '\036%s:%s\036\037%se\037' "$o" "$p" "$__kn" >&5
  printf '\037%se\037%s:%s:%s\000' "$__kn" "$__krc" "$__kkept" "$PWD"
done
