# shellcheck shell=sh
# The lease of a container whose project is an overlay: its owner (the plugin process)
# touches a host file, bound read-only here, while it lives. When the file is older than the
# lease, the owner is gone (killed, no exit hook): every process this user may signal is
# ended, the keep-alive with them, so the container stops and the engine removes it; the
# next sweep then applies or discards what it left. The look is repeated for ever: a
# command's tree kill may take the `sleep`, `date` or `stat` of one look (never this loop,
# which is older), and a look that did not get both times is no verdict.
# Arguments: $1 the lease file, $2 the lease in seconds, $3 the seconds between looks.
f=$1; lease=$2; every=$3
while :; do
  sleep "$every"
  now=$(date +%s) || continue
  t=$(stat -c %Y "$f" 2>/dev/null) || continue
  case "$now$t" in *[!0-9]* | '') continue ;; esac
  if [ $((now - t)) -gt "$lease" ]; then
    # `kill -TERM -1`, not `kill -s TERM -1`: dash (Debian's sh) takes a -1 after -s TERM for
    # an option and signals nothing; this form works in dash and busybox alike.
    kill -TERM -1 2>/dev/null
    sleep 2
    kill -KILL -1 2>/dev/null
    exit 0
  fi
done
