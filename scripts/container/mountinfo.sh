# shellcheck shell=sh
# Prints the container's mount table (/proc/self/mountinfo) with builtins only, so the
# sandbox can check that each bind mount is the very host folder it checked.
while IFS= read -r line; do
  printf '%s\n' "$line"
done < /proc/self/mountinfo
