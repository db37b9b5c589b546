# File operations inside the working folder: sh -c FILE_OP file-op <op> <workdir> <path> [args].
# Every path is checked against the container's real file system at the moment of use: the
# folder is entered (cd -P) and its real path checked, the file is opened first and the
# real path of the open descriptor checked, and new files are created in the checked folder
# by relative name (noclobber: O_EXCL), then renamed. A symlink or `..` that leads out of the working
# folder is refused (exit 3, the real path on stderr), however it was made or swapped.
# Exit codes: 3 outside, 4 not found, 5 wrong type (a folder, a file), 6 cannot write.
#   read <wd> <path> <first> <last> <maxbytes>   header line, then lines first..last (text)
#   get  <wd> <path>                             the file's bytes
#   write <wd> <path>                            stdin to the file; prints "new=0|1"
#   list <wd> <path> <depth>                     "<type> <size> <name>\0" per entry
op=$1
wd=$2
p=$3
# After `cd -P` the shell's PWD is the physical path (read without a subshell: every fork counts).
cd -P -- "$wd" 2> /dev/null || { echo "the working folder $wd does not exist" >&2; exit 4; }
rwd=$PWD
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
    lines=$(wc -l < "$f")
    lastnl=$(tail -c 1 < "$f" | wc -l)
    n1=$(head -c 8192 < "$f" | wc -c)
    n2=$(head -c 8192 < "$f" | tr -d '\000' | wc -c)
    printf 'size=%s lines=%s lastnl=%s nul=%s\n' "$size" "$lines" "$lastnl" $((n1 - n2))
    [ "$n1" = "$n2" ] || exit 0
    sed -n "$4,$5p;$5q" < "$f" | head -c "$6"
    ;;
  get)
    enter "$dir"
    open_file "$base"
    cat < "/proc/$$/fd/3"
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
    # Created exclusively (noclobber: O_EXCL, never through a link) in the checked folder.
    tmp=".gcd-write.$$"
    set -C
    cat > "$tmp" || { rm -f -- "$tmp" 2> /dev/null; printf 'cannot write %s in %s (a read-only file system, or a full one?)\n' "$base" "$here" >&2; exit 6; }
    set +C
    mv -f -- "$tmp" "$base" || { rm -f -- "$tmp"; printf 'cannot replace %s\n' "$p" >&2; exit 6; }
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
