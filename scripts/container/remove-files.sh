# shellcheck shell=sh
# Removes the files (never the folders) named by its arguments, as the container's user:
# sh -c REMOVE_FILES_SCRIPT sh <absolute path>... The host deleted them from the project, and
# the container's own copies (an overlay's upper layer) would hide that. A folder is left:
# what the host removed under it is named one file at a time.
for p do
  [ -d "$p" ] || rm -f -- "$p"
done
