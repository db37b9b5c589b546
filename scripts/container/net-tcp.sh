# shellcheck shell=sh
# Prints the container's TCP socket tables (/proc/net/tcp, then tcp6) with shell builtins
# only, so a wait for a port needs no tool in the image; processes/listening-ports.ts reads
# them. A helper exec shares the container's network namespace, so these are its sockets.
for f in /proc/net/tcp /proc/net/tcp6; do
  [ -r "$f" ] || continue
  while IFS= read -r l; do printf '%s\n' "$l"; done < "$f"
done
