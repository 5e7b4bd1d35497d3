#!/usr/bin/env bash
# deps.sh - install the Debian packages the libpyperfinject test suite needs.
#
# Usage: deps.sh [--strict] [GROUP...]
#   GROUP: core | aarch64 | provision | programs | containers | consumers | all
#          (default: all)
#     core       build + unit/integration test tools for the host
#     aarch64    cross compiler, arm64 libc headers and qemu-user (qemu-aarch64)
#     provision  what tests/provision/debian-python.sh and
#                freethreaded-python.sh need beyond apt, dpkg, gcc and make
#     programs   real programs the hardening suite runs under the library
#                (Twisted's and gevent's process spawning, on Debian's python3)
#     containers a real container engine and a base image (tests/containers)
#     consumers  the programs pyperf-run's output is read by, and what drives
#                them headless (tests/wrapper, tests/docs): Chromium, hotspot
#                under Xvfb, bpftrace, go tool pprof, man; and the debuggers
#                that read the library's GDB JIT entries (gdb, gcore, lldb)
#
# As root: runs `apt-get update` once if the package lists are missing or
# stale, then `apt-get install -y --no-install-recommends` for what is missing.
# Not root: prints one line naming the missing packages and exits 0, so the
# test runner can report skips.  Exit status is 0 unless --strict is given
# and something is still missing afterwards (or on a usage error: 2).
# Fast and idempotent: a single dpkg-query when everything is installed.
set -euo pipefail

# libclang-rt-dev: clang's sanitizer and libFuzzer runtimes (only recommended
# by clang); llvm: llvm-symbolizer, for readable sanitizer reports.
readonly GROUP_CORE="libcmocka-dev libunwind-dev python3.11-dbg shellcheck clang libclang-rt-dev llvm linux-perf valgrind"
readonly GROUP_AARCH64="gcc-aarch64-linux-gnu binutils-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user"
# dpkg-dev and the -dev packages: freethreaded-python.sh unpacks Debian's
# CPython source package and builds it with the modules the tests import.
readonly GROUP_PROVISION="debian-archive-keyring dpkg-dev pkgconf libssl-dev zlib1g-dev libffi-dev libbz2-dev liblzma-dev libzstd-dev libsqlite3-dev libreadline-dev libncurses-dev uuid-dev libexpat1-dev libgdbm-dev"
readonly GROUP_PROGRAMS="python3-twisted python3-gevent"
# catatonit: podman run --init; debootstrap: the base image (no registry).
readonly GROUP_CONTAINERS="podman runc catatonit debootstrap"
readonly GROUP_CONSUMERS="chromium linux-perf shellcheck pkgconf groff-base util-linux hotspot xvfb xauth xdotool x11-utils imagemagick bpftrace golang-go gdb lldb"
# Lists older than this many minutes are refreshed before installing.
readonly STALE_MINUTES=$((24 * 60))

usage() {
    sed -n '2,24s/^# \{0,1\}//p' "$0"
}

strict=0
groups=()
for arg in "$@"; do
    case "$arg" in
    -h | --help) usage; exit 0 ;;
    --strict) strict=1 ;;
    core | aarch64 | provision | programs | containers | consumers | all) groups+=("$arg") ;;
    *) echo "deps: unknown group '$arg'" >&2; usage >&2; exit 2 ;;
    esac
done
[ "${#groups[@]}" -gt 0 ] || groups=(all)

wanted=()
for g in "${groups[@]}"; do
    case "$g" in
    core) read -r -a p <<<"$GROUP_CORE" ;;
    aarch64) read -r -a p <<<"$GROUP_AARCH64" ;;
    provision) read -r -a p <<<"$GROUP_PROVISION" ;;
    programs) read -r -a p <<<"$GROUP_PROGRAMS" ;;
    containers) read -r -a p <<<"$GROUP_CONTAINERS" ;;
    consumers) read -r -a p <<<"$GROUP_CONSUMERS" ;;
    all) read -r -a p <<<"$GROUP_CORE $GROUP_AARCH64 $GROUP_PROVISION $GROUP_PROGRAMS $GROUP_CONTAINERS $GROUP_CONSUMERS" ;;
    esac
    wanted+=("${p[@]}")
done
# de-duplicate, keep order
mapfile -t wanted < <(printf '%s\n' "${wanted[@]}" | awk '!seen[$0]++')

# Print the subset of "$@" that is not installed (one dpkg-query call).
missing_of() {
    local installed
    installed=$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' "$@" 2>/dev/null |
        awk '$2 == "installed" { print $1 }' || true)
    local pkg
    for pkg in "$@"; do
        grep -qxF "$pkg" <<<"$installed" || printf '%s\n' "$pkg"
    done
}

mapfile -t missing < <(missing_of "${wanted[@]}")
[ "${#missing[@]}" -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "deps: missing: ${missing[*]} (run as root or: apt-get install -y --no-install-recommends ${missing[*]})"
    [ "$strict" -eq 0 ] || exit 1
    exit 0
fi

export DEBIAN_FRONTEND=noninteractive
lists=/var/lib/apt/lists

lists_stale() {
    # missing lists, or no Packages index younger than STALE_MINUTES
    compgen -G "$lists/*_Packages*" >/dev/null || return 0
    [ -z "$(find "$lists" -maxdepth 1 -name '*_Packages*' -mmin -"$STALE_MINUTES" -print -quit)" ]
}

updated=0
apt_update() {
    [ "$updated" -eq 0 ] || return 0
    updated=1
    echo "deps: apt-get update" >&2
    apt-get update -qq >&2 || echo "deps: apt-get update failed" >&2
}

install() {
    # quiet on success; show the tail of apt/dpkg's output on failure
    local log rc=0
    log=$(mktemp)
    apt-get install -y -q --no-install-recommends "$@" >"$log" 2>&1 || rc=$?
    [ "$rc" -eq 0 ] || tail -n 20 "$log" >&2
    rm -f "$log"
    return "$rc"
}

if lists_stale; then apt_update; fi
echo "deps: installing: ${missing[*]}" >&2
if ! install "${missing[@]}"; then
    # an old list may name versions that are gone: refresh once and retry
    apt_update
    install "${missing[@]}" || true
fi

mapfile -t missing < <(missing_of "${wanted[@]}")
if [ "${#missing[@]}" -gt 0 ]; then
    echo "deps: missing: ${missing[*]} (apt-get install failed)"
    [ "$strict" -eq 0 ] || exit 1
fi
exit 0
