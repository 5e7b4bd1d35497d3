#!/usr/bin/env bash
# debian-python.sh - provision Debian-built CPython interpreters for the tests,
# without installing them on the host.
#
# Usage: debian-python.sh [--arch amd64|arm64] [--suite SUITE] [--force] VERSION[-dbg]...
#        debian-python.sh --list [--arch amd64|arm64] [--suite SUITE]
#   e.g. debian-python.sh 3.14 3.14-dbg 3.15
#        debian-python.sh --arch arm64 3.11
#
#   --arch   Debian architecture (default amd64); arm64 runs under qemu-aarch64
#   --suite  Debian suite (default sid; a VERSION sid doesn't have falls back
#            to trixie, then bookworm - e.g. 3.11 comes from bookworm)
#   --force  rebuild the wrapper even if the existing one works
#   --list   only print the VERSIONs (3.X and 3.X-dbg) the suite has for the
#            arch, one a line (suite default sid); no VERSION arguments
#   --archive only print the Debian archive URI taken from this machine's
#            apt sources (for debootstrap: tests/provision/container-image.sh)
#
# For each interpreter prints one line on stdout and exits 0 either way:
#   provisioned <label> <wrapper>        label: pythonVERSION[-dbg]-SUITE-ARCH
#   unavailable <label>: <reason>
# Progress and apt's messages go to stderr.  Exit 2 on a usage error.
#
# How: a private apt configuration per suite/arch (own sources list, lists,
# status and cache; the archive URI is taken from this machine's own apt
# sources; trust from /usr/share/keyrings/debian-archive-keyring.gpg)
# downloads the interpreter packages plus their run-time Depends closure
# (apt-cache depends, first usable alternative, a few packages pruned, see
# PRUNE), on amd64 also CPython's own test package (libpythonX.Y-testsuite,
# about 5 MiB: the regression tests and test_perf_profiler run under the
# preload; too slow under qemu, so not for arm64), and unpacks them with dpkg-deb into a private sysroot.  No maintainer
# script runs and nothing touches the host's dpkg database.
#
# Layout, CACHE=${PYPERFINJECT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pyperfinject}:
#   CACHE/debian/SUITE-ARCH/   apt config, lists, downloaded .debs
#   CACHE/sysroot/SUITE-ARCH/  unpacked packages (shared by the versions)
#   CACHE/bin/LABEL            the wrapper to run (a symlink, see below)
#
# The wrapper execs the sysroot's own dynamic loader (with --library-path
# pointing into the sysroot and --inhibit-cache) on SYSROOT/usr/bin/pythonX.Y,
# so a sid python with a newer glibc than the host's runs unmodified:
#   * LD_PRELOAD from the caller's environment is honoured by that loader, so
#     it reaches the python process (and the children it execs).
#   * /proc/self/exe of that process is the loader, not python, and its comm
#     is "ld-linux-x86-64" (arm64: the qemu-aarch64 binary).  Tools that key on
#     the executable's name or build-id see the loader.
#   * sys.executable: the loader is given --argv0 CACHE/bin/LABEL, so
#     sys.executable is the wrapper and subprocess/multiprocessing (spawn,
#     forkserver) re-enter through it.  CACHE/bin/LABEL is a symlink to the
#     script SYSROOT/usr/bin/pyperfinject-LABEL; CPython resolves that symlink
#     to find its prefix (SYSROOT/usr), so no PYTHONHOME is set and nothing
#     leaks into other pythons the tested one may start.
#   * arm64: run as "qemu-aarch64 -L SYSROOT SYSROOT/lib/ld-linux-aarch64.so.1
#     ...".  LD_PRELOAD then must name an arm64 .so (the guest loader loads
#     it); the wrapper moves it from qemu's own environment into the guest's
#     (-E) so the x86-64 qemu process does not try to load it.  Set
#     PYPERFINJECT_GUEST_PRELOAD instead of LD_PRELOAD to keep it away from
#     the wrapper's own /bin/sh too (which otherwise prints a loader error).
set -euo pipefail

PROG=${0##*/}
CACHE=${PYPERFINJECT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pyperfinject}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
# Depends that a python does not need to run (tkinter, package-management
# plumbing); pruning them keeps the X11/font stack out of the download.
PRUNE=${PYPERFINJECT_DEB_PRUNE:-'^(debconf|cdebconf|debconf-2\.0|perl-base|dpkg|install-info|init-system-helpers|sysvinit-utils|lsb-base|libtk[0-9.]+|libtcl[0-9.]+|tk[0-9.]+|tcl[0-9.]+|blt)$'}
# apt lists older than this are refreshed before downloading
LIST_MAX_AGE_MIN=${PYPERFINJECT_LIST_MAX_AGE_MIN:-720}
FALLBACK_SUITES="trixie bookworm"
CHECK_IMPORTS='import json, ssl, sqlite3, ctypes, multiprocessing, threading, hashlib, zlib, bz2, lzma, decimal, uuid'

usage() { sed -n '2,22s/^# \{0,1\}//p' "$0"; }
die_usage() { echo "$PROG: $*" >&2; usage >&2; exit 2; }
log() { echo "$PROG: $*" >&2; }

arch=amd64
suite=
force=0
list=0
archive=0
versions=()
while [ $# -gt 0 ]; do
    case "$1" in
    -h | --help) usage; exit 0 ;;
    --arch) [ $# -ge 2 ] || die_usage "--arch needs a value"; arch=$2; shift ;;
    --arch=*) arch=${1#--arch=} ;;
    --suite) [ $# -ge 2 ] || die_usage "--suite needs a value"; suite=$2; shift ;;
    --suite=*) suite=${1#--suite=} ;;
    --force) force=1 ;;
    --list) list=1 ;;
    --archive) archive=1 ;;
    -*) die_usage "unknown option $1" ;;
    *) versions+=("$1") ;;
    esac
    shift
done
case "$arch" in amd64 | arm64) ;; *) die_usage "unsupported --arch '$arch' (amd64|arm64)" ;; esac
[ -z "$suite" ] || [[ "$suite" =~ ^[a-z][a-z0-9-]*$ ]] || die_usage "bad --suite '$suite'"
if [ "$list" -eq 1 ] || [ "$archive" -eq 1 ]; then
    [ "${#versions[@]}" -eq 0 ] || die_usage "--list and --archive take no VERSION"
else
    [ "${#versions[@]}" -gt 0 ] || die_usage "no VERSION given"
fi
for v in "${versions[@]}"; do
    [[ "$v" =~ ^3\.[0-9]+(-dbg)?$ ]] || die_usage "bad VERSION '$v' (want e.g. 3.14 or 3.14-dbg)"
done
case "$CACHE" in *:*) die_usage "cache dir '$CACHE' must not contain ':'" ;; esac

case "$arch" in
amd64) triplet=x86_64-linux-gnu; loader_name=ld-linux-x86-64.so.2 loader_dirs="lib64 usr/lib64 lib/$triplet usr/lib/$triplet" ;;
arm64) triplet=aarch64-linux-gnu; loader_name=ld-linux-aarch64.so.1 loader_dirs="lib usr/lib lib/$triplet usr/lib/$triplet" ;;
esac

# ---------------------------------------------------------------- archive URI
# Prints "URI KEYRING" of the host's main Debian archive entry: Types has deb,
# Suites has the release codename (or, failing that, a plain suite name) and
# no -security/-updates suite.  PYPERFINJECT_DEBIAN_URI overrides.
host_archive() {
    if [ -n "${PYPERFINJECT_DEBIAN_URI:-}" ]; then
        echo "$PYPERFINJECT_DEBIAN_URI $KEYRING"
        return 0
    fi
    local codename=
    if [ -r /etc/os-release ]; then
        # shellcheck source=/dev/null
        codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
    fi
    local files=()
    [ ! -r /etc/apt/sources.list ] || files+=(/etc/apt/sources.list)
    local f
    for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
        [ ! -r "$f" ] || files+=("$f")
    done
    [ "${#files[@]}" -gt 0 ] || return 1
    awk -v codename="$codename" -v defkey="$KEYRING" '
        function plain(s) { return s ~ /^(sid|unstable|testing|stable|forky|trixie|bookworm|bullseye)$/ }
        function consider(types, uris, suites, key,   n, i, s, u, score) {
            if (types !~ /(^|[ \t])deb([ \t]|$)/) return
            n = split(uris, u, /[ \t]+/)
            for (i = 1; i <= n && u[i] !~ /^(https?|file):/; i++) ;
            if (i > n) return
            score = 0
            split(suites, s, /[ \t]+/)
            for (j in s) {
                if (codename != "" && s[j] == codename) score = 2
                else if (plain(s[j]) && score < 1) score = 1
            }
            if (score > best) { best = score; bu = u[i]; bk = (key ~ /^\// ? key : defkey) }
        }
        function flush() {
            if (enabled !~ /^(no|false)$/) consider(T, U, S, K)
            T = U = S = K = enabled = ""
        }
        FNR == 1 { flush() }
        FILENAME ~ /\.sources$/ {
            if ($0 ~ /^[ \t]*$/) { flush(); next }
            if ($0 ~ /^#/) next
            if (match($0, /^[A-Za-z-]+:/)) {
                field = tolower(substr($0, 1, RLENGTH - 1)); val = substr($0, RLENGTH + 1)
                gsub(/^[ \t]+|[ \t]+$/, "", val)
                if (field == "types") T = val
                else if (field == "uris") U = val
                else if (field == "suites") S = val
                else if (field == "signed-by") K = val
                else if (field == "enabled") enabled = tolower(val)
            }
            next
        }
        /^[ \t]*deb[ \t]/ {
            line = $0; key = ""
            if (match(line, /\[[^]]*\]/)) {
                opts = substr(line, RSTART + 1, RLENGTH - 2)
                line = substr(line, 1, RSTART - 1) substr(line, RSTART + RLENGTH)
                if (match(opts, /signed-by=[^ \t]+/)) key = substr(opts, RSTART + 10, RLENGTH - 10)
            }
            split(line, w, /[ \t]+/)
            consider(w[1], w[2], w[3], key)
        }
        END { flush(); if (best > 0) print bu, bk; else exit 1 }
    ' "${files[@]}"
}

if [ "$archive" -eq 1 ]; then
    a=$(host_archive) || { log "no Debian archive found in this machine's apt sources (set PYPERFINJECT_DEBIAN_URI)"; exit 1; }
    echo "${a% *}"
    exit 0
fi

# ------------------------------------------------------------ private apt
# Sets globals for SUITE-ARCH: APTDIR SYSROOT APTCONF.
select_suite() {
    local s=$1
    APTDIR=$CACHE/debian/$s-$arch
    SYSROOT=$CACHE/sysroot/$s-$arch
    APTCONF=$APTDIR/apt.conf
}

aptc() { apt-cache -c "$APTCONF" "$@"; }
aptg() { apt-get -c "$APTCONF" "$@"; }

declare -A UPDATED=() UPDATE_FAILED=()
# Creates the private apt config for suite $1 and refreshes its lists when
# missing/stale (or always when $2 = force).  Returns 1 with REASON set.
apt_setup() {
    local s=$1 mode=${2:-}
    select_suite "$s"
    if [ -z "${ARCHIVE_URI:-}" ]; then
        local a
        if ! a=$(host_archive); then
            REASON="no Debian archive found in this machine's apt sources (set PYPERFINJECT_DEBIAN_URI)"
            return 1
        fi
        ARCHIVE_URI=${a% *}
        ARCHIVE_KEY=${a#* }
        [ -r "$ARCHIVE_KEY" ] || ARCHIVE_KEY=$KEYRING
    fi
    mkdir -p "$APTDIR"/etc/sources.list.d "$APTDIR"/etc/empty "$APTDIR"/state/lists/partial \
        "$APTDIR"/cache/archives/partial "$APTDIR"/debs "$APTDIR"/log
    [ -e "$APTDIR/state/status" ] || : >"$APTDIR/state/status"
    local sandbox_user
    sandbox_user=$(id -un)
    cat >"$APTDIR/etc/sources.list.d/debian.sources.new" <<EOF
Types: deb
URIs: $ARCHIVE_URI
Suites: $s
Components: main
Signed-By: $ARCHIVE_KEY
EOF
    mv -f "$APTDIR/etc/sources.list.d/debian.sources.new" "$APTDIR/etc/sources.list.d/debian.sources"
    # -c files are read after /etc/apt/apt.conf.d, so #clear drops the host's
    # update/dpkg hooks; host proxy settings are kept.
    cat >"$APTCONF.new" <<EOF
#clear APT::Update::Pre-Invoke;
#clear APT::Update::Post-Invoke;
#clear APT::Update::Post-Invoke-Success;
#clear DPkg::Pre-Invoke;
#clear DPkg::Post-Invoke;
#clear APT::Default-Release;
#clear APT::Architectures;
APT::Architecture "$arch";
APT::Architectures { "$arch"; };
APT::Sandbox::User "$sandbox_user";
Acquire::Languages "none";
Dir::State "$APTDIR/state";
Dir::State::Lists "$APTDIR/state/lists";
Dir::State::status "$APTDIR/state/status";
Dir::Cache "$APTDIR/cache";
Dir::Cache::Archives "$APTDIR/cache/archives";
Dir::Log "$APTDIR/log";
Dir::Etc::SourceList "/dev/null";
Dir::Etc::SourceParts "$APTDIR/etc/sources.list.d";
Dir::Etc::Preferences "/dev/null";
Dir::Etc::PreferencesParts "$APTDIR/etc/empty";
Dir::Etc::Trusted "/dev/null";
Dir::Etc::TrustedParts "$APTDIR/etc/empty";
EOF
    mv -f "$APTCONF.new" "$APTCONF"

    [ -z "${UPDATED[$s]:-}" ] || return 0
    if [ -n "${UPDATE_FAILED[$s]:-}" ]; then REASON=${UPDATE_FAILED[$s]}; return 1; fi
    if [ "$mode" != force ] && [ -n "$(find "$APTDIR/state/lists" -maxdepth 1 -name '*_Packages*' -mmin -"$LIST_MAX_AGE_MIN" -print -quit)" ]; then
        return 0
    fi
    log "apt-get update ($s/$arch from $ARCHIVE_URI)"
    local out
    if ! out=$(aptg -q update 2>&1); then
        REASON="apt-get update failed for $s/$arch: $(grep -E '^(E|W):' <<<"$out" | head -n 1)"
        return 1
    fi
    # apt-get update exits 0 when a source is unreachable; look for lists
    if grep -q '^E:' <<<"$out" || ! compgen -G "$APTDIR/state/lists/*_Packages*" >/dev/null; then
        REASON="apt-get update failed for $s/$arch: $(grep -E '^(E|W):' <<<"$out" | head -n 1)"
        UPDATE_FAILED[$s]=$REASON
        return 1
    fi
    UPDATED[$s]=1
}

# Prints those of the given packages that have a candidate version.
with_candidate() {
    aptc policy "$@" 2>/dev/null | awk '
        /^[^ ]/ { pkg = $1; sub(/:$/, "", pkg); next }
        /^  Candidate:/ && $2 != "(none)" { print pkg }'
}

# Prints the run-time dependency closure of the given packages: Depends and
# Pre-Depends, for an or-group the first real alternative (else the first
# provider of a virtual one), skipping PRUNE.
closure() {
    local -A seen=()
    local frontier=() next=() p
    for p in "$@"; do seen[$p]=1; frontier+=("$p"); printf '%s\n' "$p"; done
    while [ "${#frontier[@]}" -gt 0 ]; do
        mapfile -t next < <(aptc depends --no-recommends --no-suggests --no-conflicts \
            --no-breaks --no-replaces --no-enhances "${frontier[@]}" 2>/dev/null |
            awk -v prune="$PRUNE" '
            function flush(   i, pick) {
                pick = ""
                for (i = 1; i <= n && pick == ""; i++)
                    if (alt[i] !~ /^</ && alt[i] !~ prune) pick = alt[i]
                for (i = 1; i <= n && pick == ""; i++)
                    if (prov[i] != "" && prov[i] !~ prune) pick = prov[i]
                if (pick != "") print pick
                n = 0; cont = 0; split("", alt); split("", prov)
            }
            /^[^ ]/ { flush(); indep = 0; next }
            /^ [ |](Pre)?Depends: / {
                if (!cont) flush()
                cont = (substr($0, 2, 1) == "|")
                name = $0; sub(/^ [ |](Pre)?Depends: /, "", name); sub(/:[a-z0-9]+$/, "", name)
                alt[++n] = name; prov[n] = ""; indep = 1
                next
            }
            /^    [^ ]/ { if (indep && n > 0 && prov[n] == "") { p = $1; sub(/:[a-z0-9]+$/, "", p); prov[n] = p }; next }
            /^  [^ ]/ { indep = 0 }
            END { flush() }')
        frontier=()
        for p in "${next[@]}"; do
            [ -z "${seen[$p]:-}" ] || continue
            seen[$p]=1
            frontier+=("$p")
            printf '%s\n' "$p"
        done
    done
}

# Downloads the candidate .debs of the given packages into APTDIR/debs (keeps
# what is there) and prints their paths.  Sets DL_BYTES to what was fetched.
fetch_debs() {
    local uris
    uris=$(aptg -q --print-uris download "$@" 2>/dev/null) || return 1
    local want=() files=() file size
    DL_BYTES=0
    while read -r _ file size _; do
        [ -n "$file" ] || continue
        files+=("$APTDIR/debs/$file")
        if [ ! -s "$APTDIR/debs/$file" ]; then
            want+=("${file%%_*}")
            DL_BYTES=$((DL_BYTES + size))
        fi
    done <<<"$uris"
    if [ "${#want[@]}" -gt 0 ]; then
        log "downloading ${#want[@]} packages ($((DL_BYTES / 1024 / 1024)) MiB) for $SUITE/$arch"
        local p
        for p in "${want[@]}"; do rm -f "$APTDIR/debs/${p}_"*.deb; done
        (cd "$APTDIR/debs" && aptg -q download "${want[@]}" >&2) || return 1
    fi
    printf '%s\n' "${files[@]}"
}

# Unpacks the given .debs into SYSROOT (each once) and makes it self-contained:
# merged-/usr symlinks and absolute symlinks rewritten relative to SYSROOT.
unpack_debs() {
    mkdir -p "$SYSROOT/usr/bin" "$SYSROOT/usr/sbin" "$SYSROOT/usr/lib" "$SYSROOT/usr/lib64"
    local d
    for d in bin sbin lib lib64; do
        [ -e "$SYSROOT/$d" ] || [ -L "$SYSROOT/$d" ] || ln -s "usr/$d" "$SYSROOT/$d"
    done
    local stamp=$SYSROOT/.unpacked deb base changed=0
    touch "$stamp"
    for deb in "$@"; do
        base=${deb##*/}
        grep -qxF "$base" "$stamp" && continue
        dpkg-deb --fsys-tarfile "$deb" |
            tar -x -C "$SYSROOT" --keep-directory-symlink --no-same-owner --warning=no-timestamp
        echo "$base" >>"$stamp"
        changed=1
    done
    [ "$changed" -eq 1 ] || return 0
    local link target
    while IFS= read -r -d '' link; do
        target=$(readlink "$link")
        ln -sfn "$(realpath -m --relative-to="$(dirname "$link")" "$SYSROOT$target")" "$link"
    done < <(find "$SYSROOT" -type l -lname '/*' -print0)
}

find_loader() {
    local d f
    for d in $loader_dirs; do
        f=$SYSROOT/$d/$loader_name
        if [ -f "$f" ] && [[ "$(readlink -f "$f")" == "$SYSROOT"/* ]]; then
            echo "$f"
            return 0
        fi
    done
    return 1
}

# Single-quotes $1 for /bin/sh.
sq() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

# Writes SYSROOT/usr/bin/pyperfinject-LABEL and the CACHE/bin/LABEL symlink.
make_wrapper() {
    local label=$1 python=$2 loader=$3 wrapper=$CACHE/bin/$1
    local script=$SYSROOT/usr/bin/pyperfinject-$label
    local libpath="$SYSROOT/usr/lib/$triplet:$SYSROOT/lib/$triplet:$SYSROOT/usr/lib:$SYSROOT/lib"
    local run
    run="$(sq "$loader") --inhibit-cache --library-path $(sq "$libpath") --argv0 $(sq "$wrapper") $(sq "$python") \"\$@\""
    local qsys
    qsys=$(sq "$SYSROOT")
    {
        cat <<EOF
#!/bin/sh
# $label: $(basename "$python") from Debian $SUITE/$arch, unpacked in $SYSROOT.
# Generated by tests/provision/debian-python.sh; run it as $wrapper
# (that symlink is how python finds its prefix and sys.executable).
EOF
        if [ "$arch" = amd64 ]; then
            cat <<EOF
# LD_PRELOAD from the environment is honoured by the explicit loader.
# PYPERFINJECT_GUEST_PRELOAD is added to it here, so it skips this shell.
if [ -n "\${PYPERFINJECT_GUEST_PRELOAD:-}" ]; then
    LD_PRELOAD=\$PYPERFINJECT_GUEST_PRELOAD\${LD_PRELOAD:+:\$LD_PRELOAD}
    export LD_PRELOAD
    unset PYPERFINJECT_GUEST_PRELOAD
fi
exec $run
EOF
        else
            cat <<EOF
# Under qemu-user the guest (arm64) loader does the preloading, so the
# object must be an arm64 .so.  It is taken out of the environment of the
# x86-64 qemu process and handed to the guest with -E (no commas in it).
pre=\${PYPERFINJECT_GUEST_PRELOAD:-}
if [ -n "\${LD_PRELOAD:-}" ]; then pre=\${pre:+\$pre:}\$LD_PRELOAD; fi
unset LD_PRELOAD PYPERFINJECT_GUEST_PRELOAD
if [ -n "\$pre" ]; then
    exec qemu-aarch64 -L $qsys -E "LD_PRELOAD=\$pre" $run
fi
exec qemu-aarch64 -L $qsys $run
EOF
        fi
    } >"$script.new"
    chmod 755 "$script.new"
    mv -f "$script.new" "$script"
    mkdir -p "$CACHE/bin"
    ln -sfn "$script" "$wrapper"
}

wrapper_works() {
    [ -x "$1" ] && timeout 120 "$1" -c 'import sys' >/dev/null 2>&1
}

# The test package is unpacked in sysroot $1 for python $2, or the suite has
# none for that version.
has_testsuite() {
    [ -f "$1/usr/lib/python$2/test/test_sys.py" ] || [ -f "$1/.no-testsuite-$2" ]
}

# ------------------------------------------------------------ per version
SUITE=
provision() {
    local v=$1 base=${1%-dbg} dbg=
    [ "$base" = "$1" ] || dbg=-dbg
    local suites=${suite:-sid $FALLBACK_SUITES} s label
    local first_label=python$v-${suite:-sid}-$arch

    # fast path: a working wrapper from an earlier run (with the test package
    # where one is wanted; sysroots made before it was are provisioned again)
    if [ "$force" -eq 0 ]; then
        for s in $suites; do
            label=python$v-$s-$arch
            if wrapper_works "$CACHE/bin/$label" &&
                { [ "$arch" != amd64 ] || has_testsuite "$CACHE/sysroot/$s-$arch" "$base"; }; then
                echo "provisioned $label $CACHE/bin/$label"
                return 0
            fi
        done
    fi
    if [ "$arch" = arm64 ] && ! command -v qemu-aarch64 >/dev/null; then
        echo "unavailable $first_label: qemu-aarch64 not installed (tests/provision/deps.sh aarch64)"
        return 0
    fi
    if [ ! -r "$KEYRING" ]; then
        echo "unavailable $first_label: $KEYRING missing (tests/provision/deps.sh provision)"
        return 0
    fi

    # pick the suite that has the interpreter
    local roots=() have=() reasons=()
    for s in $suites; do
        REASON=
        if ! apt_setup "$s"; then reasons+=("$REASON"); continue; fi
        mapfile -t have < <(with_candidate "python$base-minimal" "python$base")
        if [ "${#have[@]}" -eq 2 ]; then SUITE=$s; break; fi
        reasons+=("python$base not in $s/$arch")
    done
    if [ -z "$SUITE" ]; then
        echo "unavailable $first_label: $(printf '%s; ' "${reasons[@]}" | sed 's/; $//')"
        return 0
    fi
    label=python$v-$SUITE-$arch
    select_suite "$SUITE"

    roots=("python$base-minimal" "libpython$base-minimal" "libpython$base-stdlib" "python$base" "libpython$base")
    [ -z "$dbg" ] || roots+=("python$base-dbg" "libpython$base-dbg")
    [ "$arch" != amd64 ] || roots+=("libpython$base-testsuite")
    mapfile -t roots < <(with_candidate "${roots[@]}")
    if [ -n "$dbg" ] && ! printf '%s\n' "${roots[@]}" | grep -qx "python$base-dbg"; then
        echo "unavailable $label: python$base-dbg not in $SUITE for $arch"
        return 0
    fi
    local pkgs debs
    mapfile -t pkgs < <(closure "${roots[@]}" | grep -vE "$PRUNE" | sort -u)
    mapfile -t pkgs < <(with_candidate "${pkgs[@]}")
    log "$label: ${#pkgs[@]} packages: ${pkgs[*]}"
    if ! debs=$(fetch_debs "${pkgs[@]}"); then
        # the lists may name versions the archive has dropped: refresh once
        if ! apt_setup "$SUITE" force || ! debs=$(fetch_debs "${pkgs[@]}"); then
            echo "unavailable $label: download failed"
            return 0
        fi
    fi
    mapfile -t debs <<<"$debs"
    unpack_debs "${debs[@]}"

    local python=$SYSROOT/usr/bin/python$base loader
    [ -z "$dbg" ] || python=$SYSROOT/usr/bin/python${base}d
    if [ ! -x "$python" ]; then
        echo "unavailable $label: ${python#"$SYSROOT"} not in the unpacked packages"
        return 0
    fi
    if ! loader=$(find_loader); then
        echo "unavailable $label: no $loader_name in $SYSROOT"
        return 0
    fi
    if [ "$arch" = amd64 ] && ! printf '%s\n' "${roots[@]}" | grep -qx "libpython$base-testsuite"; then
        touch "$SYSROOT/.no-testsuite-$base" # nothing to fetch next time
    fi
    make_wrapper "$label" "$python" "$loader"
    local out
    if ! out=$(timeout 300 "$CACHE/bin/$label" -c "$CHECK_IMPORTS" 2>&1); then
        echo "unavailable $label: import check failed: $(tail -n 1 <<<"$out")"
        return 0
    fi
    echo "provisioned $label $CACHE/bin/$label"
}

mkdir -p "$CACHE"
exec 9>"$CACHE/.debian-python.lock"
flock 9
if [ "$list" -eq 1 ]; then
    if ! apt_setup "${suite:-sid}"; then
        log "$REASON"
        exit 0
    fi
    mapfile -t names < <(aptc pkgnames python3. | grep -E '^python3\.[0-9]+(-dbg)?$' || true)
    [ "${#names[@]}" -eq 0 ] || with_candidate "${names[@]}" | sed 's/^python//' | sort -V
    exit 0
fi
for v in "${versions[@]}"; do
    SUITE=
    provision "$v"
done
exit 0
