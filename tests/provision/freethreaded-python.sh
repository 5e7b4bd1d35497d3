#!/usr/bin/env bash
# freethreaded-python.sh - build free-threaded CPython (python3.Xt) from
# Debian's source package, for the tests; nothing is installed on the host.
#
# Usage: freethreaded-python.sh [--force] VERSION...
#        freethreaded-python.sh --list
#   e.g. freethreaded-python.sh 3.13 3.14 3.15
#
#   --force  build again even if the cached build runs
#   --list   only print the VERSIONs (3.13 and newer: free-threading exists
#            from 3.13) that sid or trixie lists a source package of
#
# For each VERSION prints one line on stdout and exits 0 either way:
#   provisioned <label> <wrapper>       label: python3.Xt-SUITE-amd64
#   unavailable python3.Xt: <reason>
# Progress goes to stderr; a failed build leaves its log (named in the
# reason).  Exit 2 on a usage error.
#
# Debian ships no free-threaded interpreter, but its pythonX.Y source package
# is CPython plus Debian's patches. `apt-get source` fetches it (hashes checked
# against the suite's signed Sources index) from the archive named in this
# machine's apt sources (debian-python.sh --archive): the newest version sid
# or trixie lists whose files the archive serves (an archive may list a
# source and not serve it: the next older version is tried), SUITE being the
# suite that lists it. dpkg-source unpacks it and applies Debian's patches,
# and CPython's own configure builds it for the host with --disable-gil (no
# PGO, no LTO, no JIT: about ten minutes on 2 cores).
#
# Cache, CACHE as in debian-python.sh:
#   CACHE/debian/src/                       apt config and Sources lists
#   CACHE/freethreaded/python3.Xt-SRCVER/   the install prefix of one build
#   CACHE/bin/python3.Xt-SUITE-amd64        a symlink to its bin/python3.Xt
# A build is reused until a newer source version can be fetched; the older
# prefix is then removed.
set -euo pipefail

PROG=${0##*/}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${PYPERFINJECT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pyperfinject}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
SUITES="sid trixie"
LIST_MAX_AGE_MIN=${PYPERFINJECT_LIST_MAX_AGE_MIN:-720}
CHECK_IMPORTS='import json, ctypes, threading, multiprocessing, hashlib, zlib, decimal, sys; assert not sys._is_gil_enabled()'

usage() { sed -n '2,18s/^# \{0,1\}//p' "$0"; }
die_usage() { echo "$PROG: $*" >&2; usage >&2; exit 2; }
log() { echo "$PROG: $*" >&2; }

force=0
list=0
versions=()
while [ $# -gt 0 ]; do
    case "$1" in
    -h | --help) usage; exit 0 ;;
    --force) force=1 ;;
    --list) list=1 ;;
    -*) die_usage "unknown option $1" ;;
    *) versions+=("$1") ;;
    esac
    shift
done
if [ "$list" -eq 1 ]; then
    [ "${#versions[@]}" -eq 0 ] || die_usage "--list takes no VERSION"
else
    [ "${#versions[@]}" -gt 0 ] || die_usage "no VERSION given"
fi
for v in "${versions[@]}"; do
    if ! [[ "$v" =~ ^3\.([0-9]+)$ ]] || [ "${BASH_REMATCH[1]}" -lt 13 ]; then
        die_usage "bad VERSION '$v' (want 3.13 or newer, e.g. 3.14)"
    fi
done

APTDIR=$CACHE/debian/src
APTCONF=$APTDIR/apt.conf
aptg() { apt-get -c "$APTCONF" "$@"; }

# A private apt configuration with the suites' deb-src entries. Sets REASON
# and returns 1 when the Sources indexes cannot be had.
apt_setup() {
    local uri
    if ! uri=$("$HERE/debian-python.sh" --archive 2>/dev/null); then
        REASON="no Debian archive found in this machine's apt sources (set PYPERFINJECT_DEBIAN_URI)"
        return 1
    fi
    mkdir -p "$APTDIR"/etc/sources.list.d "$APTDIR"/etc/empty "$APTDIR"/state/lists/partial \
        "$APTDIR"/cache/archives/partial "$APTDIR"/log
    [ -e "$APTDIR/state/status" ] || : >"$APTDIR/state/status"
    cat >"$APTDIR/etc/sources.list.d/debian.sources" <<EOF
Types: deb-src
URIs: $uri
Suites: $SUITES
Components: main
Signed-By: $KEYRING
EOF
    cat >"$APTCONF" <<EOF
APT::Sandbox::User "$(id -un)";
Acquire::Languages "none";
Dir::State "$APTDIR/state";
Dir::State::Lists "$APTDIR/state/lists";
Dir::State::status "$APTDIR/state/status";
Dir::Cache "$APTDIR/cache";
Dir::Log "$APTDIR/log";
Dir::Etc::SourceList "/dev/null";
Dir::Etc::SourceParts "$APTDIR/etc/sources.list.d";
Dir::Etc::Preferences "/dev/null";
Dir::Etc::PreferencesParts "$APTDIR/etc/empty";
Dir::Etc::Trusted "/dev/null";
Dir::Etc::TrustedParts "$APTDIR/etc/empty";
EOF
    local fresh
    fresh=$(find "$APTDIR/state/lists" -maxdepth 1 -name '*_Sources*' -mmin -"$LIST_MAX_AGE_MIN" | wc -l)
    [ "$fresh" -lt "$(wc -w <<<"$SUITES")" ] || return 0
    log "apt-get update ($SUITES sources from $uri)"
    local out
    if ! out=$(aptg -q update 2>&1) || grep -q '^E:' <<<"$out" ||
        ! compgen -G "$APTDIR/state/lists/*_Sources*" >/dev/null; then
        REASON="apt-get update failed for the $SUITES sources: $(grep -E '^(E|W):' <<<"$out" | head -n 1)"
        return 1
    fi
}

# Every CPython source package of 3.13 or newer in the suites: one line
# "X.Y VERSION SUITE", newest version first.
all_sources() {
    local suite file
    # shellcheck disable=SC2016 # $(CODENAME) and $(FILENAME) are apt's own templates
    aptg indextargets --format '$(CODENAME) $(FILENAME)' 'Created-By: Sources' 2>/dev/null |
        while read -r suite file; do
            [ -e "$file" ] || continue
            /usr/lib/apt/apt-helper cat-file "$file" | awk -v suite="$suite" '
                /^Package: / { p = $2 }
                /^Version: / && p ~ /^python3\.[0-9]+$/ {
                    v = substr(p, 7); split(v, n, ".")
                    if (n[2] >= 13) print v, $2, suite
                }'
        done | sort -k1,1V -k2,2Vr -u
}

# Fetches and builds python$1t from source version $2 into $3. Returns 1
# with REASON set; 2 when the archive does not serve that version's files.
build() {
    local ver=$1 srcver=$2 prefix=$3
    local work=$CACHE/freethreaded/build-$ver logf=$CACHE/freethreaded/build-python${ver}t.log
    rm -rf "$work" "$prefix.partial"
    mkdir -p "$work"
    : >"$logf"
    if ! (cd "$work" && aptg -q source --download-only "python$ver=$srcver") >>"$logf" 2>&1; then
        rm -rf "$work"
        REASON="the archive does not serve python$ver $srcver ($(grep -m1 -o 'Failed to fetch [^ ]*' "$logf" || echo "see $logf"))"
        return 2
    fi
    log "building python${ver}t from Debian's python$ver $srcver (log: $logf)"
    # The .dsc's hashes were checked by apt against the signed index.
    if ! (cd "$work" && dpkg-source --no-check -x ./*.dsc src) >>"$logf" 2>&1; then
        REASON="dpkg-source could not unpack python$ver $srcver (see $logf)"
        return 1
    fi
    local jobs
    jobs=$(nproc 2>/dev/null || echo 2)
    if ! (cd "$work/src" &&
        ./configure --prefix="$prefix.partial" --disable-gil --without-ensurepip &&
        make -j"$jobs" &&
        make install) >>"$logf" 2>&1; then
        REASON="the build of python${ver}t failed (see $logf)"
        return 1
    fi
    # CPython finds its prefix from the binary's own path: the move is
    # harmless. The build tree (about 500 MiB) is not kept.
    mv "$prefix.partial" "$prefix"
    rm -rf "$work"
}

if ! apt_setup; then
    if [ "$list" -eq 1 ]; then log "$REASON"; exit 0; fi
    for v in "${versions[@]}"; do echo "unavailable python${v}t: $REASON"; done
    exit 0
fi
sources=$(all_sources)

if [ "$list" -eq 1 ]; then
    awk '{ print $1 }' <<<"$sources" | sort -uV
    exit 0
fi

mkdir -p "$CACHE/bin" "$CACHE/freethreaded"
for v in "${versions[@]}"; do
    candidates=$(awk -v v="$v" '$1 == v { print $2, $3 }' <<<"$sources")
    if [ -z "$candidates" ]; then
        echo "unavailable python${v}t: neither of $SUITES lists a python$v source package"
        continue
    fi
    done_label=''
    reasons=()
    while read -r srcver suite; do
        prefix=$CACHE/freethreaded/python${v}t-$srcver
        python=$prefix/bin/python${v}t
        if [ "$force" -eq 1 ] || ! "$python" -c "$CHECK_IMPORTS" >/dev/null 2>&1; then
            rm -rf "$prefix"
            rc=0
            build "$v" "$srcver" "$prefix" || rc=$?
            if [ "$rc" -eq 2 ]; then
                reasons+=("$REASON")
                continue # an older version may be served
            elif [ "$rc" -ne 0 ]; then
                reasons+=("$REASON")
                break
            fi
            if ! out=$("$python" -c "$CHECK_IMPORTS" 2>&1); then
                reasons+=("the built python${v}t fails its checks: ${out##*$'\n'}")
                break
            fi
        fi
        label=python${v}t-$suite-amd64
        # Links to other builds of this version, and their prefixes, go.
        for l in "$CACHE"/bin/python"${v}"t-*-amd64; do
            [ -L "$l" ] || continue
            old=$(readlink "$l")
            [ "$l" = "$CACHE/bin/$label" ] || rm -f "$l"
            case "$old" in
            "$CACHE"/freethreaded/python"${v}"t-*/bin/*)
                [ "$old" = "$python" ] || rm -rf "${old%/bin/*}" ;;
            esac
        done
        ln -sfn "$python" "$CACHE/bin/$label"
        echo "provisioned $label $CACHE/bin/$label"
        done_label=$label
        break
    done <<<"$candidates"
    if [ -z "$done_label" ]; then
        joined=$(printf '%s; ' "${reasons[@]}")
        echo "unavailable python${v}t: ${joined%; }"
    fi
done
exit 0
