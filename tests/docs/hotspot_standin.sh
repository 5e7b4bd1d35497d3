#!/bin/sh
# hotspot_standin.sh: stands in for the hotspot GUI in tests/docs/run.py. It
# runs hotspot's own parser the way hotspot 1.3.0 does (on the last
# argument, --max-frames 1024, in the environment it was given) and writes
# its output to $STANDIN_OUT; the other arguments are kept in
# $STANDIN_OUT.args.
: "${STANDIN_OUT:?}" "${STANDIN_PARSER:?}"
for last; do :; done
printf '%s\n' "$@" >"$STANDIN_OUT.args"
exec "$STANDIN_PARSER" --input "$last" --max-frames 1024 --output "$STANDIN_OUT"
