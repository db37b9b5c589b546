# Runs a snippet that arrives on stdin: sh -c RUN_CODE run-code <interpreter> <file name>.
# The code never passes through a command line: it is written to a new folder under /tmp,
# run with no stdin of its own, and the folder is removed afterwards (a kept-alive sandbox
# would otherwise fill its /tmp). The exit code is the snippet's (128 + N after signal N).
d=$(mktemp -d /tmp/code.XXXXXX) || exit 125
cat > "$d/$2" || { rm -rf "$d"; exit 125; }
"$1" "$d/$2" < /dev/null
rc=$?
rm -rf "$d"
exit "$rc"
