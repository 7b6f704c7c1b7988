#!/usr/bin/env bash
# The telemetry sampler's accuracy on a live clock and thread: a writer thread changes fixture
# sensor files (a ramping INA3221 rail, a RAPL counter wrapping every 0.2 s) while the sampler
# measures a stage; its energy is compared with the writer's own log of every write, in the same
# run (bench/sampler_accuracy.cpp says how).
#
# Target: median relative error under 1 % for the power integral and for the counter. Prints
# every round, the medians and the worst; exits 1 when a median misses (2 when it cannot run).
#
#   ROUNDS=10 bash bench/sampler_accuracy.sh
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/lib/deadline.sh
BIN=${SAMPLER_ACCURACY:-build/bin/sampler_accuracy}
[ -x "$BIN" ] || { echo "build first: make build (it builds $BIN)" >&2; exit 2; }
echo "sampler accuracy against the writer's log, ${ROUNDS:-10} rounds (load: $(cut -d' ' -f1-3 /proc/loadavg))"
out=$(dl "$BIN" "${ROUNDS:-10}")
rc=$?
echo "$out"
[ "$rc" -le 1 ] || { echo "sampler_accuracy could not run (exit $rc)" >&2; exit 2; }
if [ "$rc" -ne 0 ] || grep -q 'MISSED' <<<"$out"; then
  echo "target (median error < 1 % for both): MISSED"
  exit 1
fi
echo "target (median error < 1 % for both): met"
