#!/usr/bin/env bash
# tests/tools/hook-shape.sh LIBRARY - checks that the eval-frame hooks enter
# the trampoline by a jump: no frame of the library's stays between CPython's
# evaluator and the trampoline, the shape perf's unwinding is tested with
# (docs/design.md; docs/reliability.md, F12). x86-64 objects only.
# Prints one line; exit 0 when the shape holds, 1 when not, 2 when it cannot tell.
set -uo pipefail
lib=${1:?usage: hook-shape.sh LIBRARY}
command -v objdump >/dev/null || { echo "objdump is not installed"; exit 2; }
[ -f "$lib" ] || { echo "$lib is not built"; exit 2; }
dis=$(objdump -d --no-show-raw-insn "$lib" 2>/dev/null)
bad="" seen=0
for fn in hook_tstate_frame_throw hook_tstate_frame_throw_jit hook_frame_throw; do
    body=$(awk -v f="<$fn>:" '$2 == f {on = 1; next} on && /^$/ {exit} on' <<<"$dis")
    [ -n "$body" ] || continue
    seen=$((seen + 1))
    if ! grep -qE 'jmp +\*%r' <<<"$body" || grep -qE 'call +\*%' <<<"$body"; then
        bad+=" $fn"
    fi
done
if [ "$seen" -eq 0 ]; then
    echo "no hook symbols in $lib (stripped?)"
    exit 2
elif [ -n "$bad" ]; then
    echo "these hooks call the trampoline instead of jumping to it:$bad"
    exit 1
fi
echo "the hooks jump into the trampoline ($seen checked)"
