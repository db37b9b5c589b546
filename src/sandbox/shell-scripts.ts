/**
 * Shell snippets run inside containers. They use only POSIX shell builtins (no fork, no
 * external tools), so they work in any image with /bin/sh, and keep working when the
 * container's process limit is exhausted (a fork bomb) once the exec itself got in.
 */

/** Marks the start of the process id the wrapper writes before the command's first byte. */
export const PID_MARK = 0x1e;

/**
 * A shell function setting $o (OOM kills) and $p (forks refused by the process limit)
 * from the container's cgroup counters, cgroup v1 or v2, with builtins only.
 */
const READ_COUNTERS =
  'c() { o=0; p=0; ' +
  'for f in /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events; do [ -r "$f" ] && while read -r k v; do [ "$k" = oom_kill ] && o=$v; done < "$f"; done; ' +
  'for f in /sys/fs/cgroup/pids/pids.events /sys/fs/cgroup/pids.events; do [ -r "$f" ] && while read -r k v; do [ "$k" = max ] && p=$v; done < "$f"; done; }';

/** Before the command: the header `\x1e<pid>:<oom kills>:<refused forks>\x1e` on stderr, first of all. */
const BEFORE = `${READ_COUNTERS}; c; printf "\\036%s:%s:%s\\036" "$$" "$o" "$p" >&2`;

/**
 * After the command: anything it left running in its process group (`cmd &` without
 * setsid) is stopped, so a finished command leaves no stray processes behind (a
 * backgrounded child would otherwise keep the output open, a fork bomb the process limit
 * exhausted). SIGTERM to the group first (the wrapper ignores it), then, while members are
 * left, SIGTERM and finally SIGKILL to each, until /proc shows none: when the result comes
 * back, they are gone. With nothing left over this is one scan of /proc. Then the trailer
 * `\x1e<oom kills>:<refused forks>\x1e` on stderr, and the command's exit status.
 * Daemons started with setsid are left alone on purpose.
 */
const AFTER =
  'rc=$?; trap "" TERM; kill -s TERM 0 2>/dev/null; n=0; ' +
  'while [ $n -lt 40 ]; do l=""; ' +
  'for d in /proc/[0-9]*; do q=${d#/proc/}; [ "$q" = "$$" ] && continue; s=""; { read -r s < "$d/stat"; } 2>/dev/null || continue; ' +
  's=${s##*) }; set -- $s; [ "$3" = "$$" ] && [ "$1" != Z ] && l="$l $q"; done; ' +
  '[ -z "$l" ] && break; n=$((n+1)); if [ $n -gt 20 ]; then kill -s KILL $l 2>/dev/null; else kill -s TERM $l 2>/dev/null; fi; done; ' +
  'c; printf "\\036%s:%s\\036" "$o" "$p" >&2; exit $rc';

/**
 * Wraps a command between the header and the trailer. The wrapper's process id is also
 * the process group id of everything the command starts (the engine starts each exec as a
 * group leader): it lets a timeout kill the whole tree. The counters before and after say
 * exactly whether this command hit the memory or the process limit, with no extra exec.
 */
export function wrapShellCommand(command: string): string[] {
  return ['/bin/sh', '-c', `${BEFORE}; /bin/sh -c "$1"; ${AFTER}`, 'sh', command];
}

/** Same, for an argument vector run without a shell. */
export function wrapArgv(argv: readonly string[]): string[] {
  return ['/bin/sh', '-c', `${BEFORE}; "$@"; ${AFTER}`, 'sh', ...argv];
}

/** Parses a trailer at the very end of stderr; undefined when there is none. */
export function parseTrailer(tail: Buffer): { oomKills: number; pidsRefused: number; length: number } | undefined {
  const m = /\x1e(\d{1,12}):(\d{1,12})\x1e$/.exec(tail.toString('latin1'));
  return m ? { oomKills: Number(m[1]), pidsRefused: Number(m[2]), length: m[0].length } : undefined;
}

/**
 * Kills the process tree of a command: every process in its process group, every
 * descendant (by parent id), and every process whose environment carries the command's
 * marker variable: that catches daemons that left with setsid and were re-parented to
 * init, which no parent or group walk can find. The tree is
 * frozen with SIGSTOP first (a stopped process cannot fork), re-scanned until no new
 * member appears, then killed with SIGKILL and checked again.
 * Prints `gone <n>` when no live member is left, `left <pids>` otherwise (exit 1).
 * Arguments: $1 the command's process id (0 if unknown), $2 its marker (NAME=value).
 */
export const KILL_TREE_SCRIPT = `
r=$1; k=$2; frozen=" "; n=0; round=0
scan() {
  s=""; marked=""
  for d in /proc/[0-9]*; do
    p=\${d#/proc/}
    [ "$p" = "$$" ] && continue
    l=""
    { read -r l < "$d/stat"; } 2>/dev/null || continue
    l=\${l##*) }
    set -- $l
    s="$s $p:$2:$3:$1"
    # read drops the NUL separators; the marker value has a fixed length, so a match is exact.
    m=""
    { read -r m < "$d/environ"; } 2>/dev/null
    case "$m" in *"$k"*) marked="$marked$p ";; esac
  done
  t=" $r $marked"; c=1
  while [ "$c" = 1 ]; do
    c=0
    for e in $s; do
      p=\${e%%:*}; x=\${e#*:}; pp=\${x%%:*}; x=\${x#*:}; pg=\${x%%:*}
      case "$t" in *" $p "*) continue;; esac
      case "$t" in *" $pp "*) t="$t$p "; c=1; continue;; esac
      [ "$pg" = "$r" ] && { t="$t$p "; c=1; }
    done
  done
  live=""
  for e in $s; do
    p=\${e%%:*}; st=\${e##*:}
    case "$t" in *" $p "*) [ "$st" = Z ] || live="$live $p";; esac
  done
}
while [ $round -lt 50 ]; do
  round=$((round+1))
  scan
  [ -z "$live" ] && { echo "gone $n"; exit 0; }
  new=""
  for p in $live; do case "$frozen" in *" $p "*) ;; *) new="$new $p"; frozen="$frozen$p ";; esac; done
  if [ -n "$new" ]; then kill -s STOP $new 2>/dev/null; continue; fi
  for p in $live; do n=$((n+1)); done
  kill -s KILL $live 2>/dev/null
  frozen=" "
done
scan
[ -z "$live" ] && { echo "gone $n"; exit 0; }
echo "left$live"; exit 1
`;

/**
 * Prints the cgroup counters that explain a failure: memory OOM kills and refused forks
 * (process limit), for cgroup v1 and v2. Lines: `oom_kill N` and `pids_max N`.
 */
export const CGROUP_COUNTERS_SCRIPT = `
for f in /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events; do
  [ -r "$f" ] || continue
  while read -r k v; do [ "$k" = oom_kill ] && echo "oom_kill $v"; done < "$f"
done
for f in /sys/fs/cgroup/pids/pids.events /sys/fs/cgroup/pids.events; do
  [ -r "$f" ] || continue
  while read -r k v; do [ "$k" = max ] && echo "pids_max $v"; done < "$f"
done
`;

export function parseCounters(text: string): { oomKills?: number; pidsRefused?: number } {
  const out: { oomKills?: number; pidsRefused?: number } = {};
  for (const line of text.split('\n')) {
    const [k, v] = line.trim().split(/\s+/);
    const n = Number(v);
    if (!Number.isFinite(n)) continue;
    if (k === 'oom_kill') out.oomKills = n;
    if (k === 'pids_max') out.pidsRefused = n;
  }
  return out;
}
