# shellcheck shell=sh
# Kills everything a command started: every process whose hard limits on RSS and CPU time
# are at or below the command's mark (src/commands/exec-marks.ts). The command's shell lowered
# both to its mark before it ran anything, and without CAP_SYS_RESOURCE no process can raise
# a hard limit, so every process the command started, however it left (setsid, a double
# fork, `env -i`, a copied environment), is in that down-set, and no process of another exec
# is, unless it lowered its own limits on purpose. Also killed: a process still carrying the
# mark in its environment with limits no mark has (above $2): the command's shell between
# its exec's start and its `ulimit`. The container's init, keep-alive and helper execs keep
# the container's limits, above every mark.
# The set is frozen with SIGSTOP first (a stopped process cannot fork), re-scanned until no
# new member appears, then killed with SIGKILL and checked again. Builtins only (works at the
# process limit).
# Prints `gone <n>` when no live member is left, `left <pids>` otherwise (exit 1).
# Arguments: $1 the command's mark (NAME=<rss kB>:<cpu seconds>), $2 the CPU limit above
# every mark.
k=$1; v=${k#*=}; top=$2; frozen=" "; killed=" "; n=0; round=0
# Anything else than two numbers would select the wrong processes (a bare `1` matches every
# environment holding the digit): refused.
mr=${v%%:*}; mc=${v#*:}
for x in "$mr" "$mc" "$top"; do case "$x" in '' | *[!0-9]*) echo "bad mark"; exit 2 ;; esac; done
case "$k" in [A-Za-z_]*=*:*) ;; *) echo "bad mark"; exit 2 ;; esac
mr=$((mr * 1024))
scan() {
  live=""
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    [ "$p" = "$$" ] && continue
    [ "$p" = 1 ] && continue
    c=""; r=""
    # /proc/<pid>/limits: `Max cpu time <soft> <hard> seconds` ... `Max resident set <soft> <hard> bytes`.
    # A zombie's is empty: nothing left to kill.
    { while read -r a b x _ h _; do
      case "$a $b $x" in
        "Max cpu time") c=$h ;;
        "Max resident set") r=$h; break ;;
      esac
    done < "$d/limits"; } 2>/dev/null
    if [ -z "$c" ] || [ -z "$r" ]; then continue; fi
    if [ "$c" != unlimited ] && [ "$r" != unlimited ] && [ "$c" -le "$mc" ] && [ "$r" -le "$mr" ]; then
      :
    elif [ "$c" = unlimited ] || [ "$c" -gt "$top" ]; then
      # No mark applied yet: the command's own shell only if its environment says so (read
      # drops the NUL separators: the value is whole when no digit follows it, the next name's
      # first letter or the end).
      m=""
      { read -r m < "$d/environ"; } 2>/dev/null
      case "$m" in *"$k" | *"$k"[!0-9]*) ;; *) continue ;; esac
    else
      continue
    fi
    l=""
    { read -r l < "$d/stat"; } 2>/dev/null || continue
    # The runtime's own process starting another exec (runc init): never a command's, and one
    # left stopped holds the container's lock in the engine for good (no inspect, no removal).
    case "$l" in *" (runc:["*) continue ;; esac
    l=${l##*) }
    [ "${l%% *}" = Z ] || live="$live $p"
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
  # Counted once: a process killed in an earlier round can still be listed (not yet a zombie) on a loaded machine.
  for p in $live; do case "$killed" in *" $p "*) ;; *) n=$((n+1)); killed="$killed$p ";; esac; done
  # shellcheck disable=SC2086 # a list of pids
  kill -s KILL $live 2>/dev/null
  frozen=" "
done
scan
[ -z "$live" ] && { echo "gone $n"; exit 0; }
echo "left$live"; exit 1
