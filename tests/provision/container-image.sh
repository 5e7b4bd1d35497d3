#!/usr/bin/env bash
# container-image.sh - the local base image the container tests build from.
#
# Usage: container-image.sh [--force]
#   Prints one line on stdout and exits 0 either way:
#     image <name>          the image exists in podman's store (built if needed)
#     unavailable: <reason> podman or debootstrap missing, or the build failed
#
# There is no registry to pull from: the image is a Debian minbase rootfs
# (debootstrap --variant=minbase, the machine's own release, plus python3,
# the standard library included, as in python:*-slim images) made with the archive URI of this machine's apt sources
# (tests/provision/debian-python.sh --archive), imported with `podman
# import`. The rootfs tarball is cached in CACHE/containers/ and the image is
# named after a hash of its inputs (this script, release, packages, archive),
# so it is built again only when one of them changes (--force: always).
# CONTAINERS_CONF must name the engine configuration (tests/containers/run.sh
# writes it). Progress goes to stderr.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${PYPERFINJECT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pyperfinject}
# python3: `python3` and its standard library, as the documented image
# runs; bash and coreutils (pyperf-run) are in minbase.
PACKAGES=python3
force=0
case "${1:-}" in
--force) force=1 ;;
"") ;;
-h | --help) sed -n '2,18s/^# \{0,1\}//p' "$0"; exit 0 ;;
*) echo "container-image: unknown option $1" >&2; exit 2 ;;
esac

unavailable() { echo "unavailable: $*"; exit 0; }
command -v podman >/dev/null || unavailable "podman is not installed"
command -v debootstrap >/dev/null || unavailable "debootstrap is not installed"
# shellcheck source=/dev/null
release=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ -n "$release" ] || unavailable "no VERSION_CODENAME in /etc/os-release"
archive=$(bash "$HERE/debian-python.sh" --archive) || unavailable "no Debian archive in this machine's apt sources"

key=$( { cat "$0"; echo "$release $PACKAGES $archive"; } | sha256sum | cut -c1-12)
name=localhost/pyperfinject-base:$key
if [ "$force" -eq 0 ] && podman image exists "$name" 2>/dev/null; then
    echo "image $name"
    exit 0
fi

dir=$CACHE/containers
tarball=$dir/base-$key.tar
mkdir -p "$dir"
if [ "$force" -eq 1 ] || [ ! -s "$tarball" ]; then
    rootfs=$(mktemp -d "$dir/rootfs.XXXXXX")
    trap 'rm -rf "$rootfs"' EXIT
    echo "container-image: debootstrap $release into $rootfs (a few minutes)" >&2
    log=$dir/debootstrap-$key.log
    if ! debootstrap --variant=minbase --include="$PACKAGES" "$release" "$rootfs" "$archive" >"$log" 2>&1; then
        unavailable "debootstrap $release failed: $(tail -n 1 "$log")"
    fi
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
    rm -f "$dir"/base-*.tar.tmp
fi
# older bases of this cache are replaced, not kept
find "$dir" -maxdepth 1 -name 'base-*.tar' ! -name "base-$key.tar" -delete
if ! out=$(podman import "$tarball" "$name" 2>&1 >/dev/null); then
    unavailable "podman import failed: $(tail -n 1 <<<"$out")"
fi
echo "image $name"
