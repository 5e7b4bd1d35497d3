#!/usr/bin/env bash
# build-app-image.sh - builds the Dockerfile of docs/containers.md as written,
# the way its text says: the build context is the application's directory
# (APP_PY as app.py) with this checkout as pyperfinject/; BASE is the local
# base image (tests/provision/container-image.sh; no registry here).
#
# Usage: build-app-image.sh APP_PY TAG
#   Exit 0: built as TAG. Exit 77: no engine or base image (the reason on
#   stdout). Otherwise the build failed (its log on stderr's tail).
# CONTAINERS_CONF: tests/containers/containers.conf unless set. The
# context is kept in build/containers-context-TAG/ for a look.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
[ $# -eq 2 ] || { sed -n '2,13s/^# \{0,1\}//p' "$0" >&2; exit 2; }
app=$1 tag=$2
export CONTAINERS_CONF=${CONTAINERS_CONF:-$HERE/containers.conf}

image=$(bash "$ROOT/tests/provision/container-image.sh")
case "$image" in
"image "*) base=${image#image } ;;
*) echo "no base image: ${image#unavailable: }"; exit 77 ;;
esac
if ! err=$(podman run --rm --network none "$base" true 2>&1); then
    echo "the engine cannot start a container: $(tail -n 1 <<<"$err")"
    exit 77
fi

ctx=$ROOT/build/containers-context-${tag//[^A-Za-z0-9._-]/_}
rm -rf "$ctx"
mkdir -p "$ctx/pyperfinject"
awk '/^```dockerfile$/ { on = 1; next } /^```$/ && on { exit } on' "$ROOT/docs/containers.md" >"$ctx/Containerfile"
cp "$app" "$ctx/app.py"
# The checkout: what git tracks (and new files not ignored), else all but
# build output.
if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
    (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard |
        while IFS= read -r -d '' f; do [ ! -e "$f" ] || printf '%s\0' "$f"; done |
        tar --null -T - -cf -) | tar -C "$ctx/pyperfinject" -xf -
else
    (cd "$ROOT" && tar --exclude='./build*' --exclude=./.git -cf - .) | tar -C "$ctx/pyperfinject" -xf -
fi
log=$ctx.log
if ! podman build --build-arg BASE="$base" -t "$tag" -f "$ctx/Containerfile" "$ctx" >"$log" 2>&1; then
    tail -n 15 "$log" >&2
    exit 1
fi
