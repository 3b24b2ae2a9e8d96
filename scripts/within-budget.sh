#!/usr/bin/env bash
# within-budget.sh NAME SECONDS COMMAND...: runs COMMAND as the step NAME. Past SECONDS the step and
# everything it started is stopped (TERM, then KILL 30 s later) and named: "step NAME ran past its
# budget of SECONDS s", exit 1. `make test` runs each of its steps this way (.ci/run runs `make test`).
set -u
name=$1 budget=$2
shift 2
started=$SECONDS
# timeout puts COMMAND in a process group of its own and signals that whole group. It runs in the
# background so that this script can pass on a Ctrl-C or a TERM, which reach only the foreground group.
timeout --kill-after=30 "$budget" "$@" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null' INT TERM HUP
while :; do
  wait "$child"
  status=$?
  kill -0 "$child" 2>/dev/null || break # not a trapped signal that ended the wait: the step ended
done
took=$((SECONDS - started))
if [ "$status" -eq 124 ] || { [ "$status" -eq 137 ] && [ "$took" -ge "$budget" ]; }; then
  echo "step $name ran past its budget of $budget s" >&2
  exit 1
fi
echo "step $name: $status after $took s (budget $budget s)"
exit "$status"
