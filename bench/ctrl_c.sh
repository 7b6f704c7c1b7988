#!/usr/bin/env bash
# Ctrl-C latency: how long the longest loops of stagebench take to answer one SIGINT once they
# measure (issue #40): ops and decompose inside thousands of decode steps (--decode-tokens
# 4096), ops with --plain-reps 100000, run inside a prefill of a huge prompt (-p 30000, one
# llama.cpp graph per batch, ended by its abort callback) and inside a decode of -n 100000
# tokens. Each case starts the command on the tiny synthetic model, waits until its stderr
# says it is measuring plus DELAY seconds, sends SIGINT and times the exit.
#
# Target: every case exits within 5 s of the signal (the README's bound), with exit 1 (the
# interrupt's code). Prints one row per case and exits 1 when one misses (non-zero as well
# when it cannot run).
#
#   DELAY=2 THREADS=1 LIMIT=5 bash bench/ctrl_c.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib/deadline.sh
DELAY=${DELAY:-2}; THREADS=${THREADS:-1}; LIMIT=${LIMIT:-5}
SB=build/bin/stagebench
[ -x "$SB" ] || { echo "build first: make build" >&2; exit 2; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
model="$work/model.gguf"
dl "$SB" synth --preset tiny -o "$model" >&2

missed=0
echo "| case | answer s | exit | target |"
echo "| --- | ---: | ---: | --- |"
# case NAME MARKER ARGS...: MARKER is a text of stderr that says the measuring began.
case_() {
  local name=$1 marker=$2; shift 2
  "$SB" "$@" -m "$model" -t "$THREADS" --out "$work/out.json" > /dev/null 2> "$work/err" &
  local pid=$! waited=0
  until grep -q -- "$marker" "$work/err" 2>/dev/null; do
    sleep 0.1; waited=$((waited + 1))
    if [ "$waited" -gt 600 ] || ! kill -0 "$pid" 2>/dev/null; then
      echo "$name: never began measuring" >&2; kill -9 "$pid" 2>/dev/null || true
      missed=1; return
    fi
  done
  sleep "$DELAY"
  local t0 t1 rc
  t0=$(date +%s.%N)
  kill -INT "$pid"
  # A hang must not hang the bench: 60 s, then SIGKILL.
  ( sleep 60; kill -9 "$pid" 2>/dev/null ) & local guard=$!
  set +e; wait "$pid"; rc=$?; set -e
  kill "$guard" 2>/dev/null || true
  t1=$(date +%s.%N)
  local s; s=$(python3 -c "print(f'{$t1 - $t0:.2f}')")
  local ok; ok=$(python3 -c "print('met' if $t1 - $t0 <= $LIMIT and $rc == 1 else 'MISSED')")
  [ "$ok" = met ] || missed=1
  echo "| $name | $s | $rc | $ok (<= $LIMIT s, exit 1) |"
}

case_ "ops --decode-tokens 4096" "tracing node by node" ops -p 16 --stage decode \
  --decode-tokens 4096 --replay 0
case_ "decompose --decode-tokens 4096" "tracing node by node" decompose -p 16 --stage decode \
  --decode-tokens 4096
case_ "ops --plain-reps 100000" "tracing node by node" ops -p 64 --stage prefill \
  --plain-reps 100000 --replay 0
# run's stages are inside the warm-up and the repetitions once the model is loaded (--membw off:
# the bandwidth probe before is not a stage).
case_ "run -p 30000" "loading the model" run -p 30000 -n 1 -r 1 --membw off
case_ "run -n 100000" "loading the model" run -p 16 -n 100000 -r 1 --membw off
exit "$missed"
