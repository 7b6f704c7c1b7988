# Sourced by the benches: a deadline for every child process a bench waits on, so that a
# device, a driver or a server that stops answering ends the bench with one line and exit 2
# (cannot run) instead of hanging it. Servers a bench starts in the background live as long as
# the bench, whose EXIT trap stops them.
#
#   dl CMD ARGS...   CMD under `timeout`: BENCH_TIMEOUT seconds (default 1800), SIGKILL 10 s
#                    after SIGTERM; returns CMD's exit code otherwise.
BENCH_TIMEOUT=${BENCH_TIMEOUT:-1800}
dl() {
  local rc=0
  timeout --kill-after=10 "$BENCH_TIMEOUT" "$@" || rc=$?
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    echo "$(basename "$0"): $(basename "$1") ${*:2:3}... ran past its deadline of $BENCH_TIMEOUT s (BENCH_TIMEOUT=)" >&2
    exit 2
  fi
  return "$rc"
}

#   stop_bg PID      stops a background child the bench started (a server): SIGTERM, then
#                    SIGKILL if it is still there STOP_GRACE seconds later (10), and reaps it.
stop_bg() {
  [ -n "${1:-}" ] || return 0
  kill "$1" 2>/dev/null || return 0
  for _ in $(seq 1 $((${STOP_GRACE:-10} * 10))); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$1" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}
