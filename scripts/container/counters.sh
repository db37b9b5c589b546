# shellcheck shell=sh disable=SC2034 # o and p are read by the script this one is put before
# Defines `counters`: sets $o to the container's OOM kills and $p to the forks its process
# limit refused, from the cgroup files (v1 or v2). Shell builtins only, no fork: it works
# in any image with /bin/sh, and while a fork bomb has the process limit exhausted.
counters() {
  o=0
  p=0
  for f in /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events; do
    [ -r "$f" ] && while read -r k v; do [ "$k" = oom_kill ] && o=$v; done < "$f"
  done
  for f in /sys/fs/cgroup/pids/pids.events /sys/fs/cgroup/pids.events; do
    [ -r "$f" ] && while read -r k v; do [ "$k" = max ] && p=$v; done < "$f"
  done
}
