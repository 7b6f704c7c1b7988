#!/usr/bin/env bash
# The telemetry sampler's own CPU cost: `stagebench sensors` sampling for DURATION seconds at
# 10 Hz and at 100 Hz, CPU time (user + sys from /usr/bin/time) minus that of a zero-duration
# run (start-up and discovery), as a percentage of one core. Target: under 1 % at 10 Hz.
#
#   DURATION=10 SYSFS_ROOT=/sys bash bench/sampler_cost.sh
#   SYSFS_ROOT=tests/fixtures/telemetry/android-snapdragon/sys bash bench/sampler_cost.sh
set -euo pipefail
cd "$(dirname "$0")/.."
SB=${STAGEBENCH:-build/bin/stagebench}
DURATION=${DURATION:-10}
ROOT=${SYSFS_ROOT:-/sys}
[ -x "$SB" ] || { echo "build first: make build (or set STAGEBENCH)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "needs GNU time at /usr/bin/time" >&2; exit 2; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT

# CPU seconds (user + sys) of: sensors --duration $1 --hz $2
cpu_s() {
  /usr/bin/time -f "%U %S" -o "$work/time" \
    "$SB" sensors --sysfs-root "$ROOT" --duration "$1" --hz "$2" -o json > "$work/out.json" 2>/dev/null
  awk '{ printf "%.3f", $1 + $2 }' "$work/time"
}

base=$(cpu_s 0 10)
metrics=$(grep -c '"metric":' "$work/out.json" || true)
echo "sampler CPU cost over ${DURATION} s on $ROOT ($metrics metrics; start-up ${base} s CPU subtracted)"
for hz in 10 100; do
  total=$(cpu_s "${DURATION}s" "$hz")
  awk -v t="$total" -v b="$base" -v d="$DURATION" -v hz="$hz" 'BEGIN {
    c = t - b; if (c < 0) c = 0;
    printf "  %3d Hz: %.2f %% of one core (%.3f s CPU in %s s)\n", hz, 100 * c / d, c, d }'
done
