#!/usr/bin/env bash
# bench/lib/deadline.sh, which every bench sources: a child past its deadline ends the bench
# with one line and exit 2 (and the bench's EXIT trap runs); a child within it returns its own
# exit code; a background server that ignores SIGTERM is killed after the grace and reaped.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../tests/dist/checks.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A bench whose child hangs: BENCH_TIMEOUT=1 ends it within the deadline plus the kill grace.
cat > "$work/bench.sh" <<SH
set -euo pipefail
. "$here/lib/deadline.sh"
trap 'echo cleaned > "$work/trap"' EXIT
dl sleep 60
echo "not reached" > "$work/after"
SH
t0=$(date +%s)
BENCH_TIMEOUT=1 bash "$work/bench.sh" 2> "$work/hung.err"
rc=$?
check "a hung child: exit 2" [ "$rc" = 2 ]
check "a hung child: ended within 12 s" [ $(($(date +%s) - t0)) -le 12 ]
check "a hung child: one line naming it and the deadline" \
  grep -q "^bench.sh: sleep 60... ran past its deadline of 1 s (BENCH_TIMEOUT=)$" "$work/hung.err"
check "a hung child: one line only" [ "$(wc -l < "$work/hung.err")" = 1 ]
check "a hung child: the bench's EXIT trap ran" [ -f "$work/trap" ]
check "a hung child: the bench did not go on" [ ! -f "$work/after" ]

# Within the deadline: the child's own exit code, and its output.
( . "$here/lib/deadline.sh"; dl sh -c 'echo out; exit 3' > "$work/out"; echo $? > "$work/rc" )
check "within the deadline: the child's exit code" [ "$(cat "$work/rc")" = 3 ]
check "within the deadline: its output" [ "$(cat "$work/out")" = out ]

# stop_bg: a server that ignores SIGTERM is killed after STOP_GRACE and reaped; one that
# honours it stops at once; no pid, nothing.
(
  . "$here/lib/deadline.sh"
  sh -c 'trap "" TERM; while :; do sleep 0.1; done' & stubborn=$!
  sleep 0.2
  t0=$(date +%s)
  STOP_GRACE=1 stop_bg "$stubborn"
  echo "$(($(date +%s) - t0))" > "$work/stubborn_s"
  kill -0 "$stubborn" 2>/dev/null && echo alive > "$work/stubborn" || echo gone > "$work/stubborn"
  sleep 60 & polite=$!
  t0=$(date +%s)
  stop_bg "$polite"
  echo "$(($(date +%s) - t0))" > "$work/polite_s"
  stop_bg ""; echo $? > "$work/empty_rc"
)
check "stop_bg: a child that ignores SIGTERM is gone" [ "$(cat "$work/stubborn")" = gone ]
check "stop_bg: after the grace, not before it ended" [ "$(cat "$work/stubborn_s")" -le 3 ]
check "stop_bg: a child that honours SIGTERM stops at once" [ "$(cat "$work/polite_s")" -le 1 ]
check "stop_bg: no pid, nothing" [ "$(cat "$work/empty_rc")" = 0 ]

finish || exit 1
