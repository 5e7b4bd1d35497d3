#!/usr/bin/env bash
# interpreters.sh - print the test matrix: the Python interpreters found here.
#
# Usage: interpreters.sh [--provision] [--check]
#   --provision  first provision Debian interpreters with debian-python.sh
#                (cached, so cheap once done):
#                  amd64: every python3.X >= 3.12 that sid has, plus its -dbg
#                  arm64: bookworm's 3.11 and sid's newest python3.X
#                and free-threaded builds of Debian's CPython sources with
#                freethreaded-python.sh (3.13 and newer, where the archive
#                serves the source; built once, about ten minutes each)
#                its report lines go to stderr
#   --check      list only interpreters that run (`-c pass`); slower, arm64
#                ones start under qemu
#
# Prints one interpreter a line: LABEL<TAB>COMMAND<TAB>KIND
#   pyenv-3.9.18          $(pyenv root)/versions/3.9.18/bin/python   pyenv
#   debian-3.11           /usr/bin/python3.11                        debian
#   debian-3.11-dbg       /usr/bin/python3.11-dbg                    debian-dbg
#   sid-3.14              CACHE/bin/python3.14-sid-amd64             sid
#   sid-3.14-dbg          CACHE/bin/python3.14-dbg-sid-amd64         sid-dbg
#   arm64-bookworm-3.11   CACHE/bin/python3.11-bookworm-arm64        arm64
#   sid-3.13t             CACHE/bin/python3.13t-sid-amd64            ft
# (other suites: trixie-3.13 / trixie; arm64 -dbg ones: arm64-dbg).
# pyenv versions are whatever is installed, 2.7 included: the tests use it to
# check that the library stays inert.  CACHE is as in debian-python.sh.
# Nothing found is not an error: the output is then empty.  Exit 2 on a
# usage error.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${PYPERFINJECT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pyperfinject}

usage() { sed -n '2,29s/^# \{0,1\}//p' "$0"; }

provision=0
check=0
for arg in "$@"; do
    case "$arg" in
    -h | --help) usage; exit 0 ;;
    --provision) provision=1 ;;
    --check) check=1 ;;
    *) echo "interpreters.sh: unknown argument '$arg'" >&2; usage >&2; exit 2 ;;
    esac
done

# ------------------------------------------------------------- provisioning
if [ "$provision" -eq 1 ]; then
    dp=$HERE/debian-python.sh
    mapfile -t amd64 < <("$dp" --list --arch amd64 --suite sid |
        awk -F'[.-]' '$1 == 3 && $2 >= 12')
    if [ "${#amd64[@]}" -gt 0 ]; then
        "$dp" --arch amd64 --suite sid "${amd64[@]}" >&2
    else
        echo "interpreters.sh: no sid amd64 interpreters to provision" >&2
    fi
    newest=$("$dp" --list --arch arm64 --suite sid | grep -v -- -dbg | tail -n 1 || true)
    "$dp" --arch arm64 --suite bookworm 3.11 >&2
    if [ -n "$newest" ]; then
        "$dp" --arch arm64 --suite sid "$newest" >&2
    else
        echo "interpreters.sh: no sid arm64 interpreter to provision" >&2
    fi
    if [ "$(uname -m)" = x86_64 ]; then
        mapfile -t ft < <("$HERE/freethreaded-python.sh" --list)
        [ "${#ft[@]}" -eq 0 ] || "$HERE/freethreaded-python.sh" "${ft[@]}" >&2
    fi
fi

# ---------------------------------------------------------------- discovery
declare -A listed=()
emit() { # LABEL COMMAND KIND
    [ -z "${listed[$1]:-}" ] || return 0
    if [ "$check" -eq 1 ] && ! timeout 120 "$2" -c pass >/dev/null 2>&1; then
        return 0
    fi
    listed[$1]=1
    printf '%s\t%s\t%s\n' "$1" "$2" "$3"
}

# pyenv: `pyenv root`, $PYENV_ROOT and the default ~/.pyenv, each once
pyenv_roots=()
pyenv_bin=$(command -v pyenv || true)
if [ -z "$pyenv_bin" ]; then
    for c in "${PYENV_ROOT:-}/bin/pyenv" "$HOME/.pyenv/bin/pyenv"; do
        if [ -x "$c" ]; then pyenv_bin=$c; break; fi
    done
fi
if [ -n "$pyenv_bin" ]; then
    r=$("$pyenv_bin" root 2>/dev/null || true)
    [ -z "$r" ] || pyenv_roots+=("$r")
fi
pyenv_roots+=("${PYENV_ROOT:-}" "$HOME/.pyenv")
declare -A seen_root=()
for r in "${pyenv_roots[@]}"; do
    if [ -z "$r" ] || [ ! -d "$r/versions" ]; then continue; fi
    real=$(cd "$r" && pwd -P)
    [ -z "${seen_root[$real]:-}" ] || continue
    seen_root[$real]=1
    while IFS= read -r ver; do
        py=$r/versions/$ver/bin/python
        [ -x "$py" ] || continue
        emit "pyenv-$ver" "$py" pyenv
    done < <(find "$r/versions/" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -V)
done

# the host's Debian interpreters
for py in /usr/bin/python3.*; do
    name=${py##*/}
    [[ "$name" =~ ^python(3\.[0-9]+)(-dbg)?$ ]] || continue
    [ -x "$py" ] || continue
    if [ -n "${BASH_REMATCH[2]}" ]; then
        emit "debian-${BASH_REMATCH[1]}-dbg" "$py" debian-dbg
    else
        emit "debian-${BASH_REMATCH[1]}" "$py" debian
    fi
done

# wrappers made by debian-python.sh: python3.X[-dbg]-SUITE-ARCH; links made by
# freethreaded-python.sh: python3.Xt-SUITE-amd64
if [ -d "$CACHE/bin" ]; then
    while IFS= read -r name; do
        w=$CACHE/bin/$name
        if [[ "$name" =~ ^python(3\.[0-9]+t)-([a-z][a-z0-9]*)-amd64$ ]]; then
            [ -x "$w" ] || continue
            emit "${BASH_REMATCH[2]}-${BASH_REMATCH[1]}" "$w" ft
            continue
        fi
        [[ "$name" =~ ^python(3\.[0-9]+)(-dbg)?-([a-z][a-z0-9]*)-(amd64|arm64)$ ]] || continue
        [ -x "$w" ] || continue # also drops dangling symlinks
        v=${BASH_REMATCH[1]} dbg=${BASH_REMATCH[2]} suite=${BASH_REMATCH[3]} arch=${BASH_REMATCH[4]}
        if [ "$arch" = arm64 ]; then
            emit "arm64-$suite-$v$dbg" "$w" "arm64$dbg"
        else
            emit "$suite-$v$dbg" "$w" "$suite$dbg"
        fi
    done < <(find "$CACHE/bin/" -mindepth 1 -maxdepth 1 -printf '%f\n' |
        # order: amd64 before arm64, then suite, version, plain before -dbg
        awk -F- '{ print $NF "\t" $(NF-1) "\t" substr($1, 7) "\t" ($2 == "dbg") "\t" $0 }' |
        sort -t "$(printf '\t')" -k1,1 -k2,2 -k3,3V -k4,4n | cut -f5)
fi
exit 0
