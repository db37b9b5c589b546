#!/usr/bin/env bash
# Builds the golden images without a registry, from Debian packages, under the same
# names as the Dockerfiles next to this script (docs/images.md lists what each one has):
#   sandbox-minimal (alias minimal)  genaicode-docker/sandbox-minimal:latest  busybox sh and applets
#   sandbox-python                   genaicode-docker/sandbox-python:latest   Debian 12, python3, bash, curl
#   python nodejs java go ruby php   genaicode-docker/<language>:latest       Debian 12, the language's
#                                    toolchain, test framework and linters, build-essential, cmake,
#                                    git, vim, nano (all-languages: these six)
#   dotnet powershell                need a registry (Microsoft's packages are not in Debian): one line
#                                    says so and they are skipped
# An argument may also be an image name (genaicode-docker/go:latest). No argument: the two
# sandbox images (what the demo needs).
#
# Idempotent: an image that is present is left alone (--force rebuilds it), unless a language
# image carries another recipe label (genaicode-docker.recipe) than this script would put on
# it: then it was built by an older recipe and is rebuilt. The language images share one
# Debian root (debootstrap of bookworm with the common tools), cached in
# ${GENAICODE_DOCKER_CACHE:-/var/cache/genaicode-docker}; each is a copy of it plus its
# packages, imported with docker import. An image counts as built only when its own
# toolchain compiles and tests docker/<language>/hello inside it, with no network
# (docker/<language>/hello/check.sh); else it is removed.
#
# Progress, one line per step on stderr, for a caller to draw a progress bar from:
#   [build-offline] <image> step <n>/<total>: <what>
#   [build-offline] <image> built in <seconds> s
#   [build-offline] <image> present
#   [build-offline] <image> needs a registry: build docker/<name>/Dockerfile where one is reachable
# Other lines (errors, "installing debootstrap") start with [build-offline] too.
#
# Exit status: 0 built or present; 1 a build failed; 2 bad arguments; 3 only images that need
# a registry were asked for.
# Usage: docker/build-offline.sh [--force] [--jobs N] [name ...]
#   --jobs N  language images built at the same time (default 2)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
log() { printf '[build-offline] %s\n' "$*" >&2; }

# Bump when the steps below change in a way the package lists do not show.
RECIPE_VERSION=1
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
CACHE=${GENAICODE_DOCKER_CACHE:-/var/cache/genaicode-docker}
# In every language image: build tools, git, editors and the usual command-line tools.
COMMON_PKGS="bash ca-certificates curl git make cmake build-essential pkg-config vim nano procps less
  file unzip zip xz-utils jq openssh-client"
LANGUAGES=(python nodejs java go ruby php)
REGISTRY_ONLY=(dotnet powershell)
lang_pkgs() {
  case "$1" in
    python) echo "python3 python3-pip python3-venv python3-dev python3-pytest flake8 black mypy pylint" ;;
    nodejs) echo "nodejs npm" ;;
    java) echo "openjdk-17-jdk-headless maven junit5 checkstyle" ;;
    go) echo "golang-go go-staticcheck gopls" ;;
    ruby) echo "ruby ruby-dev ruby-minitest ruby-rspec rake rubocop bundler" ;;
    php) echo "php-cli php-xml php-mbstring phpunit php-codesniffer composer" ;;
  esac
}

force=0
jobs=2
wanted=()
registry=()
want() { local w; for w in "${wanted[@]}"; do [ "$w" = "$1" ] && return; done; wanted+=("$1"); }
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  a=${args[i]}
  case "$a" in
    --force) force=1; continue ;;
    --jobs) i=$((i + 1)); jobs=${args[i]:-}; [[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { log "--jobs needs a number"; exit 2; }; continue ;;
    --jobs=*) jobs=${a#--jobs=}; [[ "$jobs" =~ ^[1-9][0-9]*$ ]] || { log "--jobs needs a number"; exit 2; }; continue ;;
  esac
  # An image name means its short name.
  a=${a#genaicode-docker/}; a=${a%:latest}
  case "$a" in
    minimal|sandbox-minimal) want sandbox-minimal ;;
    sandbox-python) want sandbox-python ;;
    python|nodejs|java|go|ruby|php) want "$a" ;;
    all-languages) for l in "${LANGUAGES[@]}"; do want "$l"; done ;;
    dotnet|powershell) registry+=("$a") ;;
    *) log "unknown argument: ${args[i]} (expected --force, --jobs N, sandbox-minimal, sandbox-python, all-languages or one of: ${LANGUAGES[*]} ${REGISTRY_ONLY[*]})"; exit 2 ;;
  esac
done
[ ${#wanted[@]} -gt 0 ] || [ ${#registry[@]} -gt 0 ] || wanted=(sandbox-minimal sandbox-python)

for r in "${registry[@]}"; do
  log "genaicode-docker/$r:latest needs a registry: build docker/$r/Dockerfile where one is reachable"
done
[ ${#wanted[@]} -gt 0 ] || exit 3

need_pkg() { # command, Debian package
  command -v "$1" >/dev/null 2>&1 && return 0
  [ "$(id -u)" = 0 ] || { log "$1 is missing: install the Debian package $2"; exit 1; }
  log "installing $2"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null 2>&1 || {
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2" >/dev/null; }
}

present() { [ "$force" = 0 ] && docker image inspect "$1" >/dev/null 2>&1; }

# A freshly imported image must run, or it is removed: a broken image must not pass for present next time.
check_runs() { # image, command...
  local img=$1; shift
  if ! docker run --rm --network none "$img" "$@" >/dev/null 2>&1; then
    docker image rm -f "$img" >/dev/null 2>&1 || true
    log "$img was built but does not run '$*'; removed it"; exit 1
  fi
}

work=$(mktemp -d)
# Nothing mounted in a root may outlive the script, and rm never crosses into a mount.
unmount_under() { # folder
  local m
  awk -v p="$1/" 'index($2, p) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
}
cleanup() { unmount_under "$work"; rm -rf --one-file-system "$work"; }
trap cleanup EXIT

build_minimal() {
  local img=genaicode-docker/sandbox-minimal:latest start=$SECONDS
  if present "$img"; then log "$img present"; return; fi
  log "$img step 1/3: root from busybox-static"
  # The image has no libc: only a statically linked busybox runs in it.
  local bb; bb=$(command -v busybox || true)
  if [ -z "$bb" ] || ! file -L "$bb" 2>/dev/null | grep -q 'statically linked'; then
    [ "$(id -u)" = 0 ] || { log "a statically linked busybox is needed: install the Debian package busybox-static"; exit 1; }
    log "installing busybox-static"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq busybox-static >/dev/null 2>&1 || {
      apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq busybox-static >/dev/null; }
    bb=/bin/busybox
  fi
  local root=$work/minimal
  mkdir -p "$root"/{bin,etc,tmp,root,workspace,proc,sys,dev}
  chmod 1777 "$root/tmp"
  cp "$bb" "$root/bin/busybox"
  for applet in $("$root/bin/busybox" --list); do
    [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' > "$root/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' > "$root/etc/group"
  log "$img step 2/3: docker import"
  tar -C "$root" -c . | docker import \
    -c 'ENV PATH=/bin' -c 'WORKDIR /workspace' -c 'CMD ["/bin/sh"]' \
    -c 'LABEL org.opencontainers.image.title=genaicode-docker/sandbox-minimal' \
    - "$img" >/dev/null
  log "$img step 3/3: check that it runs"
  check_runs "$img" /bin/sh -c 'ls / >/dev/null && sleep 0'
  log "$img built in $((SECONDS - start)) s"
}

build_sandbox_python() {
  local img=genaicode-docker/sandbox-python:latest start=$SECONDS
  if present "$img"; then log "$img present"; return; fi
  need_pkg debootstrap debootstrap
  local root=$work/sandbox-python
  log "$img step 1/3: debootstrap bookworm (python3, bash, curl)"
  debootstrap --variant=minbase --include=python3,bash,curl,ca-certificates \
    bookworm "$root" "$MIRROR" >"$work/debootstrap.log" 2>&1 || {
      tail -n 30 "$work/debootstrap.log" >&2; exit 1; }
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  mkdir -p "$root/workspace"
  log "$img step 2/3: docker import"
  tar -C "$root" -c . | docker import \
    -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    -c 'ENV LANG=C.UTF-8' -c 'WORKDIR /workspace' -c 'CMD ["sleep", "infinity"]' \
    -c 'LABEL org.opencontainers.image.title=genaicode-docker/sandbox-python' \
    - "$img" >/dev/null
  log "$img step 3/3: check that it runs"
  check_runs "$img" /bin/bash -c 'python3 -c "import json, sqlite3" && curl --version >/dev/null'
  log "$img built in $((SECONDS - start)) s"
}

# ---------------------------------------------------------------------------------------
# The language images.

words() { printf '%s' "$*" | tr -s '[:space:]' ' ' | sed 's/^ //; s/ $//'; } # one line, single spaces
base_recipe() { printf 'v%s|%s|%s\n' "$RECIPE_VERSION" "$MIRROR" "$(words "$COMMON_PKGS")" | sha256sum | cut -c1-16; }
recipe() { printf '%s|%s\n' "$(base_recipe)" "$(words "$(lang_pkgs "$1")")" | sha256sum | cut -c1-16; }
recipe_of() { docker image inspect --format '{{ index .Config.Labels "genaicode-docker.recipe" }}' "$1" 2>/dev/null || true; }

# Runs a command in a root with /proc mounted, no service started, apt quiet.
in_root() { # root, command...
  local root=$1; shift
  mount -t proc proc "$root/proc"
  local rc=0
  DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 chroot "$root" "$@" || rc=$?
  umount "$root/proc"
  return "$rc"
}

# The shared root: debootstrap minbase, Debian's updates and security archives, the common
# tools, no documentation. Built once per recipe, kept in $CACHE (under a lock: one builder
# at a time makes it).
ensure_base() { # image whose step 1 this is
  local img=$1 base; base=$CACHE/base-$(base_recipe)
  if [ -d "$base" ]; then
    log "$img step 1/4: base root (cached in $base)"
    BASE=$base; return
  fi
  log "$img step 1/4: base root: debootstrap bookworm and the common tools (once, cached in $CACHE)"
  need_pkg debootstrap debootstrap
  local tmp=$base.tmp
  unmount_under "$tmp"; rm -rf --one-file-system "$tmp"
  debootstrap --variant=minbase bookworm "$tmp" "$MIRROR" >"$work/debootstrap.log" 2>&1 || {
    tail -n 30 "$work/debootstrap.log" >&2; exit 1; }
  local mirror_root=${MIRROR%/debian}
  cat > "$tmp/etc/apt/sources.list" <<EOF
deb $MIRROR bookworm main
deb $MIRROR bookworm-updates main
deb $mirror_root/debian-security bookworm-security main
EOF
  # As in Debian's slim images: no manuals, documentation or translations (copyrights stay).
  cat > "$tmp/etc/dpkg/dpkg.cfg.d/genaicode-docker-nodoc" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/lintian/*
EOF
  find "$tmp/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
  # The folders stay: update-alternatives links manuals into them (openjdk fails without man1).
  find "$tmp/usr/share/man" "$tmp/usr/share/info" -mindepth 1 -not -type d -delete
  find "$tmp/usr/share/locale" -mindepth 1 -not -name locale.alias -delete 2>/dev/null || true
  # No service starts in a root (an image never runs an init).
  printf '#!/bin/sh\nexit 101\n' > "$tmp/usr/sbin/policy-rc.d"
  chmod 755 "$tmp/usr/sbin/policy-rc.d"
  in_root "$tmp" /bin/sh -c "apt-get update -qq && apt-get upgrade -y -qq && apt-get install -y -qq --no-install-recommends $(words "$COMMON_PKGS")" \
    >"$work/base-apt.log" 2>&1 || { tail -n 30 "$work/base-apt.log" >&2; exit 1; }
  rm -rf "$tmp"/var/cache/apt/archives/*.deb
  # Roots of older recipes are not needed any more.
  local old
  for old in "$CACHE"/base-*; do
    [ -d "$old" ] && [ "$old" != "$tmp" ] && { unmount_under "$old"; rm -rf --one-file-system "$old"; }
  done
  mv "$tmp" "$base"
  BASE=$base
}

# Builds one language image: a copy of the base root, its packages, docker import, the check.
# Runs in a subshell, with its own clean-up, so that several can run at once.
build_language() ( # language, start (SECONDS)
  lang=$1 start=$2
  img=genaicode-docker/$lang:latest
  root=$work/$lang
  trap 'unmount_under "$root"; rm -rf --one-file-system "$root"' EXIT
  trap 'exit 130' INT TERM
  pkgs=$(words "$(lang_pkgs "$lang")")
  [ -n "${BASE:-}" ] || ensure_base "$img"
  [ "$lang" = "${first:-}" ] || log "$img step 1/4: base root (cached in $BASE)"
  cp -a "$BASE" "$root"
  log "$img step 2/4: apt-get install $pkgs"
  in_root "$root" /bin/sh -c "apt-get update -qq && apt-get install -y -qq --no-install-recommends $pkgs" \
    >"$work/$lang-apt.log" 2>&1 || { tail -n 30 "$work/$lang-apt.log" >&2; log "$img: apt-get install failed"; exit 1; }
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/cache/apt/*.bin "$root"/var/lib/apt/lists/* \
    "$root"/var/log/apt/* "$root"/var/cache/debconf/*-old "$root"/root/.cache
  rm -f "$root/usr/sbin/policy-rc.d"
  mkdir -p "$root/workspace"
  chmod 1777 "$root/tmp"
  log "$img step 3/4: docker import"
  tar -C "$root" -c . | docker import \
    -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    -c 'ENV LANG=C.UTF-8' -c 'WORKDIR /workspace' -c 'CMD ["sleep", "infinity"]' \
    -c "LABEL org.opencontainers.image.title=genaicode-docker/$lang" \
    -c "LABEL genaicode-docker.recipe=$(recipe "$lang")" \
    - "$img" >/dev/null
  rm -rf --one-file-system "$root"
  log "$img step 4/4: check: docker/$lang/hello compiled and tested inside it, no network"
  if ! out=$(check_hello "$lang" "$img" 2>&1); then
    docker image rm -f "$img" >/dev/null 2>&1 || true
    printf '%s\n' "$out" | tail -n 30 >&2
    log "$img was built but docker/$lang/hello/check.sh failed in it; removed it"
    exit 1
  fi
  log "$img built in $((SECONDS - start)) s"
)

# docker/<language>/hello copied into a new container of the image (on stdin: no bind mount)
# and its check.sh run there.
check_hello() { # language, image
  tar -C "$here/$1/hello" -c . | docker run -i --rm --network none "$2" \
    /bin/sh -c 'mkdir -p /tmp/hello && cd /tmp/hello && tar -x && exec sh ./check.sh'
}

build_languages() { # language...
  local todo=() lang img label
  for lang in "$@"; do
    img=genaicode-docker/$lang:latest
    if [ "$force" = 0 ] && docker image inspect "$img" >/dev/null 2>&1; then
      label=$(recipe_of "$img")
      if [ "$label" = "$(recipe "$lang")" ]; then log "$img present"; continue; fi
      log "$img was built by another recipe (${label:-none}, now $(recipe "$lang")): rebuilding it"
    fi
    todo+=("$lang")
  done
  [ ${#todo[@]} -gt 0 ] || return 0
  [ "$(id -u)" = 0 ] || { log "building ${todo[*]} needs root (debootstrap, chroot)"; exit 1; }
  need_pkg debootstrap debootstrap
  mkdir -p "$CACHE"
  exec 9>"$CACHE/lock"
  flock 9
  # The first image's step 1 (and its time) is the shared root.
  first=${todo[0]}
  local start=$SECONDS
  ensure_base "genaicode-docker/$first:latest"
  local pids=() failed=0 pid
  for lang in "${todo[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
    if [ "$lang" = "$first" ]; then build_language "$lang" "$start" & else build_language "$lang" "$SECONDS" & fi
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
  exec 9>&-
  [ "$failed" = 0 ] || { log "some images were not built (see above)"; exit 1; }
}

languages=()
for w in "${wanted[@]}"; do
  case "$w" in
    sandbox-minimal) build_minimal ;;
    sandbox-python) build_sandbox_python ;;
    *) languages+=("$w") ;;
  esac
done
[ ${#languages[@]} -eq 0 ] || build_languages "${languages[@]}"
