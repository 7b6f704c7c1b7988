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
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${SAMPLER_ACCURACY:-build/bin/sampler_accuracy}
[ -x "$BIN" ] || { echo "build first: make build (it builds $BIN)" >&2; exit 2; }
echo "sampler accuracy against the writer's log, ${ROUNDS:-10} rounds (load: $(cut -d' ' -f1-3 /proc/loadavg))"
exec "$BIN" "${ROUNDS:-10}"
