# shellcheck shell=sh
# Kills the process tree of a command: every process in its process group, every
# descendant (by parent id), and every process whose environment carries the command's
# marker variable, which catches daemons that left with setsid and were re-parented to
# init, where no parent or group walk can find them. The tree is frozen with SIGSTOP
# first (a stopped process cannot fork), re-scanned until no new member appears, then
# killed with SIGKILL and checked again. Builtins only (works at the process limit).
# A process that left all three (setsid, a double fork, `env -i`) is still the command's
# when it started after the command's wrapper and carries none of the markers of the other
# commands running now ($3, exact NAME=value pairs the host made; a marker the process
# made up itself spares nothing): the start time (in clock ticks since boot, field 22 of
# /proc/<pid>/stat) is the last link.
# Prints `gone <n>` when no live member is left, `left <pids>` otherwise (exit 1).
# Arguments: $1 the command's process id (0 if unknown), $2 its marker (NAME=value),
# $3 the markers of the other commands running now, space-separated (may be empty),
# $4 the keep-alive's seconds (its command line is `sleep <seconds>`): never killed.
r=$1; k=$2; o=${3:-}; ka=${4:-}; frozen=" "; n=0; round=0
# No process id (0): the marker alone. Taken as an id, 0 would be the parent of every
# process an exec started (their parent is outside the container) and kill them all.
[ "$r" = 0 ] && r=none
scan() {
  s=""; marked=""; others=" "; rstart=""; keep=""; kstart=""
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    [ "$p" = "$$" ] && continue
    l=""
    { read -r l < "$d/stat"; } 2>/dev/null || continue
    # The runtime's own process starting another exec (runc init): never a command's, and one
    # left stopped holds the container's lock in the engine for good (no inspect, no removal).
    case "$l" in *" (runc:["*) continue ;; esac
    l=${l##*) }
    # shellcheck disable=SC2086 # split the stat fields: state, ppid, pgrp, ..., starttime
    set -- $l
    s="$s $p:$2:$3:${20}:$1"
    [ "$p" = "$r" ] && rstart=${20}
    # The container's keep-alive: init's child running `sleep <ttl>` ($4), the oldest such
    # (a later look-alike is a command's). Under load it can start after a command's wrapper.
    if [ "$2" = 1 ] && [ -n "$ka" ]; then
      cl=""
      { read -r cl < "$d/cmdline"; } 2>/dev/null
      if [ "$cl" = "sleep$ka" ] && { [ -z "$kstart" ] || [ "${20}" -lt "$kstart" ]; }; then
        keep=$p; kstart=${20}
      fi
    fi
    # read drops the NUL separators; the marker value has a fixed length, so a match is exact.
    m=""
    { read -r m < "$d/environ"; } 2>/dev/null
    case "$m" in
      *"$k"*) marked="$marked$p "; continue ;;
    esac
    for om in $o; do
      case "$m" in *"$om"*) others="$others$p "; break ;; esac
    done
  done
  # Exec roots other than this command's (a helper, the file mover, the lease watch, another
  # command, an exec the engine is still setting up: their parent is outside the container,
  # so their ppid reads 0) and every process under them are never this command's: a command
  # cannot move a process under another exec. Freezing one would be worse than sparing it:
  # a stopped `runc init` holds the engine's lock on the container (no inspect, no removal).
  f=" "
  for e in $s; do
    p=${e%%:*}; x=${e#*:}; pp=${x%%:*}
    [ "$pp" = 0 ] && [ "$p" != "$r" ] && [ "$p" != 1 ] && f="$f$p "
  done
  c=1
  while [ "$c" = 1 ]; do
    c=0
    for e in $s; do
      p=${e%%:*}; x=${e#*:}; pp=${x%%:*}
      case "$f" in *" $p "*) continue;; esac
      case "$f" in *" $pp "*) f="$f$p "; c=1;; esac
    done
  done
  t=" $r $marked"; c=1
  # Started after the wrapper, not process 1, not another command's, not under another
  # exec: this command's too (a daemon that left every link is re-parented to process 1).
  if [ -n "$rstart" ]; then
    for e in $s; do
      p=${e%%:*}; x=${e#*:}; x=${x#*:}; x=${x#*:}; st0=${x%%:*}
      [ "$p" = 1 ] && continue
      [ "$p" = "$keep" ] && continue
      case "$others" in *" $p "*) continue;; esac
      case "$f" in *" $p "*) continue;; esac
      case "$t" in *" $p "*) continue;; esac
      [ "$st0" -ge "$rstart" ] 2>/dev/null && t="$t$p "
    done
  fi
  while [ "$c" = 1 ]; do
    c=0
    for e in $s; do
      p=${e%%:*}; x=${e#*:}; pp=${x%%:*}; x=${x#*:}; pg=${x%%:*}
      [ "$p" = "$keep" ] && continue
      case "$t" in *" $p "*) continue;; esac
      case "$t" in *" $pp "*) t="$t$p "; c=1; continue;; esac
      [ "$pg" = "$r" ] && { t="$t$p "; c=1; }
    done
  done
  live=""
  for e in $s; do
    p=${e%%:*}; st=${e##*:}
    case "$t" in *" $p "*) [ "$st" = Z ] || live="$live $p";; esac
  done
}
while [ $round -lt 50 ]; do
  round=$((round+1))
  scan
  [ -z "$live" ] && { echo "gone $n"; exit 0; }
  new=""
  for p in $live; do case "$frozen" in *" $p "*) ;; *) new="$new $p"; frozen="$frozen$p ";; esac; done
  # shellcheck disable=SC2086 # lists of pids
  if [ -n "$new" ]; then kill -s STOP $new 2>/dev/null; continue; fi
  for p in $live; do n=$((n+1)); done
  # shellcheck disable=SC2086 # a list of pids
  kill -s KILL $live 2>/dev/null
  frozen=" "
done
scan
[ -z "$live" ] && { echo "gone $n"; exit 0; }
echo "left$live"; exit 1
