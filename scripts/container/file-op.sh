# File operations inside the working folder: sh -c FILE_OP file-op <op> <workdir> <path> [args].
# Every path is checked against the container's real file system at the moment of use: the
# folder is entered (cd -P) and its real path checked, the file is opened first and the
# real path of the open descriptor checked, and a written file, staged by the engine in the
# working folder itself, is renamed into the checked folder by relative name. A symlink or
# `..` that leads out of the working folder is refused (exit 3, the real path on stderr),
# however it was made or swapped.
# Exit codes: 3 outside, 4 not found, 5 wrong type (a folder, a pipe, a file), 6 cannot write, 7 too large,
# 2 a request it cannot read.
# What it prints and its exit codes are read by src/files/file-op-protocol.ts (and `serve` by
# src/files/mover-protocol.ts): change both sides together (test/unit/files/*-protocol.test.ts
# run this script and parse its output).
#   read <wd> <path> <first> <last> <maxbytes>   header line, then lines first..last (text)
#   get  <wd> <path> <maxbytes>                  the file's bytes (exit 7 when larger)
#   serve <wd>                                   the mover of written files, long-lived: see place_staged
#   list <wd> <path> <depth>                     "<type> <size> <name>\0" per entry
op=$1
wd=$2
p=$3
# Enter the working folder: it must be itself, not a link to elsewhere (one swapped in from
# inside). After `cd -P` the shell's PWD is the physical path (read without a subshell:
# every fork counts). Checked once per operation, and by the mover once per request.
enter_workdir() {
  cd -P -- "$wd" 2> /dev/null || { echo "the working folder $wd does not exist" >&2; exit 4; }
  [ "$PWD" = "$wd" ] || { printf 'the working folder %s leads to %s\n' "$wd" "$PWD" >&2; exit 3; }
}
enter_workdir
# The path asked for ($p), taken from the working folder when relative: its folder and name.
split_path() {
  case "$p" in /*) ;; *) p="$wd/$p" ;; esac
  dir=${p%/*}
  base=${p##*/}
  [ -n "$dir" ] || dir=/
}
split_path
inside() {
  case "$1" in "$wd" | "$wd"/*) return 0 ;; esac
  return 1
}
outside() {
  printf 'outside the working folder: %s\n' "$1" >&2
  exit 3
}
# Enter a folder by its path and check where we really are.
enter() {
  cd -P -- "$1" 2> /dev/null || { printf 'no such folder: %s\n' "$1" >&2; exit 4; }
  here=$PWD
  inside "$here" || outside "$here"
}
# Open a file of the current folder on fd 3 and check the real path of what was opened.
open_file() {
  [ -e "$1" ] || { printf 'no such file: %s\n' "$p" >&2; exit 4; }
  # Not a pipe or a device: opening one could block for ever (the host's timeout ends it anyway).
  [ -f "$1" ] || { printf 'not a file: %s\n' "$p" >&2; exit 5; }
  exec 3< "$1" || exit 5
  real=$(readlink "/proc/$$/fd/3")
  inside "$real" || outside "$real"
  [ -f "/proc/$$/fd/3" ] || { printf 'not a file: %s\n' "$p" >&2; exit 5; }
}
# Moves <wd>/<staged>, put there by the engine's archive API (which writes as root, following
# links), to the file $p after the checks every operation makes, as the container user: its
# permissions apply. An existing file keeps its mode and owner. Prints "new=0|1". However it
# ends, the staged copy is gone after it. Runs in a subshell of its own (it exits).
place_staged() {
  st=$wd/$1
  trap 'rm -f -- "$st" 2> /dev/null' EXIT
  if [ ! -d "$dir" ]; then
    # The deepest folder that exists must be inside before anything is created under it.
    d=$dir
    while [ ! -d "$d" ]; do d=${d%/*}; [ -n "$d" ] || d=/; done
    (enter "$d") || exit $?
    mkdir -p -- "$dir" 2> /dev/null || { printf 'cannot create the folder %s (read-only file system?)\n' "$dir" >&2; exit 6; }
  fi
  enter "$dir"
  if [ -L "$base" ]; then
    t=$(readlink -f -- "$base") || { printf 'a link that leads nowhere: %s\n' "$p" >&2; exit 4; }
    inside "$t" || outside "$t"
    enter "${t%/*}"
    base=${t##*/}
  fi
  [ -d "$base" ] && { printf 'a folder, not a file: %s\n' "$p" >&2; exit 5; }
  new=1
  [ -e "$base" ] && new=0
  # What this user may not do is refused here, as its own write would be.
  if [ "$new" = 1 ]; then
    [ -w . ] || { printf 'cannot create %s in %s (read-only, or not writable by the container user)\n' "$base" "$here" >&2; exit 6; }
  else
    [ -f "$base" ] || { printf 'not a file: %s\n' "$p" >&2; exit 5; }
    if [ ! -w "$base" ] || [ ! -w . ]; then
      printf 'cannot write %s (read-only, or not writable by the container user)\n' "$p" >&2
      exit 6
    fi
  fi
  if [ ! -f "$st" ] || [ -L "$st" ]; then
    printf 'the staged copy of %s is gone\n' "$p" >&2
    exit 6
  fi
  # One stat for both (a fork is most of a move's time): the staged copy, then the file.
  # shellcheck disable=SC2046 # split: mode and owner of each
  set -- $(stat -c '%a %u:%g' -- "$st" "$base" 2> /dev/null)
  # The owner the host asked the engine for is what a greeting said, which a process of this
  # user can forge: the copy must be this user's own (ids read by this process itself).
  if [ "$2" != "$uid:$gid" ]; then
    printf 'the staged copy of %s is owned by %s, not by the container user (%s)\n' "$p" "${2:-nobody}" "$uid:$gid" >&2
    exit 6
  fi
  # Staged 0600 (the engine sets a mode following links: a copy swapped for a link while it
  # extracts can only tighten what it leads to); a new file is 0644, an existing one keeps
  # its mode and owner, changed only where they differ.
  [ "$new" = 1 ] && set -- "$1" "$2" 644 "$2"
  [ "$1" = "$3" ] || chmod "$3" "$st" 2> /dev/null
  [ "$2" = "$4" ] || chown "$4" "$st" 2> /dev/null
  # -T: the name is replaced, never a folder (or a link to one) written into.
  mv -fT -- "$st" "$base" 2> /dev/null || {
    printf 'cannot write %s in %s (a read-only file system, or a full one?)\n' "$base" "$here" >&2
    exit 6
  }
  trap - EXIT
  printf 'new=%s\n' "$new"
}
case "$op" in
  read)
    enter "$dir"
    open_file "$base"
    f=/proc/$$/fd/3
    size=$(stat -L -c %s "$f")
    # Lines are counted in the first GiB at most (a 20 GB file would take minutes).
    partial=0
    if [ "$size" -gt 1073741824 ]; then
      lines=$(head -c 1073741824 < "$f" | wc -l)
      partial=1
    else
      lines=$(wc -l < "$f")
    fi
    lastnl=$(tail -c 1 < "$f" | wc -l)
    n1=$(head -c 8192 < "$f" | wc -c)
    n2=$(head -c 8192 < "$f" | tr -d '\000' | wc -c)
    printf 'size=%s lines=%s lastnl=%s nul=%s partial=%s\n' "$size" "$lines" "$lastnl" $((n1 - n2)) "$partial"
    [ "$n1" = "$n2" ] || exit 0
    sed -n "$4,$5p;$5q" < "$f" | head -c "$6"
    ;;
  get)
    enter "$dir"
    open_file "$base"
    size=$(stat -L -c %s "/proc/$$/fd/3")
    [ "$size" -le "$4" ] || { printf 'larger than %s bytes (%s)\n' "$4" "$size" >&2; exit 7; }
    head -c "$4" < "/proc/$$/fd/3"
    ;;
  serve)
    # One per container, for as long as it is used: a write costs no new command in the
    # container (starting one takes the engine about as long as extracting 10 MB).
    # Requests on stdin, a line each; a path's bytes other than [A-Za-z0-9._/-] are escaped
    # as \0ooo (octal), so no name can break a line or a field:
    #   place <id> <staged> <path>     place_staged, in a subshell
    #   discard <id> <staged>          removes the staged copy
    # Answers on stdout, each "<id>\0<exit>\0<text>\0" (the text: what it printed, both
    # streams; no path holds a NUL). The first, id 0, is "<uid> <gid>" of this user, read
    # without a fork: what the engine's writes are made to be owned by. The input's end ends it.
    while read -r k _ e _; do
      case "$k" in Uid:) uid=$e ;; Gid:) gid=$e ;; esac
    done < "/proc/$$/status"
    printf '%s\000%s\000%s %s\000' 0 0 "$uid" "$gid"
    cd /
    while read -r kind id st enc; do
      # The staged name is ours: ".gcd-write-" and hex, nothing that could lead elsewhere.
      case "$kind" in place | discard) ;; *) kind=bad ;; esac
      case "$id" in "" | *[!0-9]*) kind=bad ;; esac
      case "${st#.gcd-write-}" in "$st" | "" | *[!0-9a-f]*) kind=bad ;; esac
      case "$kind" in
        bad)
          printf '%s\000%s\000%s\000' 0 2 "file-op: a request it cannot read"
          continue
          ;;
        discard)
          rm -f -- "$wd/$st"
          printf '%s\000%s\000\000' "$id" $?
          continue
          ;;
      esac
      # Decoded only when escaped (a fork saved for plain names).
      case "$enc" in
        *\\*) p=$(printf '%bx' "$enc") && p=${p%x} ;;
        *) p=$enc ;;
      esac
      split_path
      out=$(
        exec 2>&1
        enter_workdir
        place_staged "$st"
      )
      printf '%s\000%s\000%s\000' "$id" $? "$out"
    done
    ;;
  list)
    enter "$p"
    find . -mindepth 1 -maxdepth "$4" -exec sh -c '
      for f do
        if [ -L "$f" ]; then t=link; elif [ -d "$f" ]; then t=dir; elif [ -f "$f" ]; then t=file; else t=other; fi
        s=0
        [ "$t" = file ] && s=$(stat -c %s -- "$f")
        printf "%s %s %s\0" "$t" "$s" "${f#./}"
      done' sh {} + | head -c 1048576
    ;;
  *)
    echo "file-op: unknown operation $op" >&2
    exit 2
    ;;
esac
