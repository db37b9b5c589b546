# shellcheck shell=sh disable=SC2034 # o and p are read by the script this one is put before
# Defines `counters`: sets $o to the container's OOM kills and $p to the forks its process
# limit refused, from the cgroup files. Shell builtins only, no fork: it works in any image
# with /bin/sh, and while a fork bomb has the process limit exhausted.
# Only the files a command cannot write are read: with cgroup v1 the controllers are
# read-only mounts under /sys/fs/cgroup, which is itself a writable tmpfs where a command
# could plant a v2-named file; so the v2 files are read only where the v1 ones do not
# exist (with cgroup v2, /sys/fs/cgroup is the read-only cgroup2 mount itself).
counters() {
  o=0
  p=0
  f=/sys/fs/cgroup/memory/memory.oom_control
  [ -e "$f" ] || f=/sys/fs/cgroup/memory.events
  [ -r "$f" ] && while read -r k v; do [ "$k" = oom_kill ] && o=$v; done < "$f"
  f=/sys/fs/cgroup/pids/pids.events
  [ -e /sys/fs/cgroup/pids ] || f=/sys/fs/cgroup/pids.events
  [ -r "$f" ] && while read -r k v; do [ "$k" = max ] && p=$v; done < "$f"
}
