#!/usr/bin/env bash
# tests/wrapper/hotspot_screenshot.sh - run inside an X server (xvfb-run):
# opens a recording with `pyperf-run hotspot`, waits until hotspot's parser
# has finished, shows the flame graph and saves a screenshot.
#
# Usage: hotspot_screenshot.sh PYPERF-RUN DIR PNG
#
# Prints what it saw: the window, the TMPDIR of the parser hotspot started
# and the maps there, the screenshot's size and colour count. Fails when
# hotspot shows no window, its parser sees no perf-PID.map, no flame graph
# is drawn within 30 s, or the private TMPDIR outlives hotspot. The clicks
# (Flame Graph tab, splitter, scrolling) assume hotspot 1.3.0's layout in a
# 1600x1000 window.
set -euo pipefail

W=$1 DIR=$2 PNG=$3
fail() { echo "hotspot_screenshot: $*" >&2; exit 1; }

log=$(mktemp)
"$W" hotspot "$DIR" >"$log" 2>&1 &
wp=$!
hp="" pp="" win=""
cleanup() {
    [ -z "$hp" ] || kill "$hp" 2>/dev/null || true
    wait "$wp" 2>/dev/null || true
    rm -f -- "$log"
}
trap cleanup EXIT

# hotspot is pyperf-run's child; its parser is hotspot's child.
for _ in $(seq 300); do
    [ -n "$hp" ] || hp=$(pgrep -x -P "$wp" hotspot 2>/dev/null | head -n 1 || true)
    [ -z "$hp" ] || [ -n "$pp" ] || pp=$(pgrep -P "$hp" -f perfparser 2>/dev/null | head -n 1 || true)
    [ -z "$pp" ] || break
    kill -0 "$wp" 2>/dev/null || { cat "$log"; fail "pyperf-run hotspot exited early"; }
    sleep 0.2
done
[ -n "$pp" ] || { cat "$log"; fail "hotspot started no parser within 60 s"; }
cat "$log"
tmp=$(tr '\0' '\n' <"/proc/$pp/environ" | sed -n 's/^TMPDIR=//p')
echo "parser: $(tr '\0' ' ' <"/proc/$pp/cmdline")"
echo "parser's TMPDIR: $tmp"
{ [ -n "$tmp" ] && [ -d "$tmp" ]; } || fail "the parser has no private TMPDIR"
maps=$(find "$tmp" -maxdepth 1 -name 'perf-*.map' | wc -l)
echo "maps there: $maps"
[ "$maps" -gt 0 ] || fail "no perf-PID.map in the parser's TMPDIR"

# Wait for the parser to finish and hotspot to show the results.
for _ in $(seq 600); do
    kill -0 "$pp" 2>/dev/null || break
    sleep 0.2
done
kill -0 "$pp" 2>/dev/null && fail "the parser did not finish within 120 s"
for _ in $(seq 100); do
    win=$(xdotool search --name ' - Hotspot$' 2>/dev/null | head -n 1 || true)
    [ -z "$win" ] || break
    sleep 0.2
done
[ -n "$win" ] || fail "no hotspot window"
echo "window: $(xwininfo -id "$win" | sed -n 's/^xwininfo: Window id: //p')"
sleep 3
xdotool windowsize "$win" 1600 1000 windowmove "$win" 0 0
sleep 1
xdotool mousemove 342 54 click 1                    # the Flame Graph tab
sleep 2
xdotool mousemove 800 755 mousedown 1 mousemove 800 850 mousemove 800 990 mouseup 1 # timeline down
sleep 1
xdotool mousemove 600 400 click 4 click 4 click 4   # scroll up to the Python frames
xdotool mousemove 1595 995                          # no hover highlight
# A flame graph's colour gradients make thousands of colours; hotspot's
# other views, a few hundred. It draws the graph after the parser is done.
colours=0
for _ in $(seq 15); do
    sleep 2
    import -window root "$PNG"
    [ -s "$PNG" ] || fail "no screenshot"
    colours=$(identify -format '%k' "$PNG")
    [ "$colours" -le 2000 ] || break
done
echo "screenshot: $PNG, $(identify -format '%wx%h' "$PNG"), $colours colours"
[ "$colours" -gt 2000 ] || fail "the screenshot has $colours colours: no flame graph drawn"

kill "$hp"
hp=""
wait "$wp" || true
[ ! -e "$tmp" ] || fail "$tmp is still there after hotspot exited"
echo "private TMPDIR removed after hotspot exited"
