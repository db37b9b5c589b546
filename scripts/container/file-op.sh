# File operations inside the working folder: sh -c FILE_OP file-op <op> <workdir> <path> [args].
# Every path is checked against the container's real file system at the moment of use: the
# folder is entered (cd -P) and its real path checked, the file is opened first and the
# real path of the open descriptor checked, and new files are created in the checked folder
# by relative name (noclobber: O_EXCL), then renamed. A symlink or `..` that leads out of the working
# folder is refused (exit 3, the real path on stderr), however it was made or swapped.
# Exit codes: 3 outside, 4 not found, 5 wrong type (a folder, a pipe, a file), 6 cannot write, 7 too large.
#   read <wd> <path> <first> <last> <maxbytes>   header line, then lines first..last (text)
#   get  <wd> <path> <maxbytes>                  the file's bytes (exit 7 when larger)
#   write <wd> <path>                            stdin to the file; prints "new=0|1"
#   list <wd> <path> <depth>                     "<type> <size> <name>\0" per entry
op=$1
wd=$2
p=$3
# After `cd -P` the shell's PWD is the physical path (read without a subshell: every fork counts).
cd -P -- "$wd" 2> /dev/null || { echo "the working folder $wd does not exist" >&2; exit 4; }
rwd=$PWD
# The working folder must be itself, not a link to elsewhere (one swapped in from inside).
[ "$rwd" = "$wd" ] || { printf 'the working folder %s leads to %s\n' "$wd" "$rwd" >&2; exit 3; }
case "$p" in /*) ;; *) p="$wd/$p" ;; esac
inside() {
  case "$1" in "$rwd" | "$rwd"/*) return 0 ;; esac
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
dir=${p%/*}
base=${p##*/}
[ -n "$dir" ] || dir=/
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
  write)
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
    # A new name nobody can guess, created exclusively (noclobber: O_EXCL, so never through a
    # link or into a pipe someone planted) in the checked folder.
    tmp=$(mktemp -u ./.gcd-write.XXXXXXXXXX) || exit 6
    set -C
    cat > "$tmp" || {
      [ -f "$tmp" ] && [ ! -L "$tmp" ] && rm -f -- "$tmp"
      printf 'cannot write %s in %s (a read-only file system, or a full one?)\n' "$base" "$here" >&2
      exit 6
    }
    set +C
    # An existing file keeps its mode and owner.
    if [ "$new" = 0 ] && [ -f "$base" ]; then
      chmod "$(stat -c %a -- "$base")" "$tmp" 2> /dev/null
      chown "$(stat -c %u:%g -- "$base")" "$tmp" 2> /dev/null
    fi
    # -T: the name is replaced, never a folder (or a link to one) written into.
    mv -fT -- "$tmp" "$base" || { rm -f -- "$tmp"; printf 'cannot replace %s\n' "$p" >&2; exit 6; }
    printf 'new=%s\n' "$new"
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
