#!/usr/bin/env bash
# The arm64 and agent jobs of `stagebench bundle` (docs/lab.md) under user-mode emulation, as a
# device cloud would run them: each job made by this machine's stagebench from DIST, unpacked in
# a fresh folder and its run.sh run by dash in an empty environment, the stagebench behind
# STAGEBENCH_PREFIX (qemu-aarch64 -cpu CPU; -L the arm64 sysroot for the dist, none for the
# static agents). Each must exit 0 with a result document whose test is ok and a manifest
# whose hashes hold (`stagebench ingest` into a store). Only correctness: timings under
# emulation mean nothing.
#
# Usage: tests/dist/bundle_qemu.sh [DIST]   (default: dist; make dist ARCH=arm64 fills it with
# the arm64 tarball and the agents). Jobs whose stagebench DIST lacks are said and skipped.
# Exit 0 when every check passed; prints "N passed, N failed" last.
set -uo pipefail
cd "$(dirname "$0")/../.."
DIST=$(cd "${1:-dist}" && pwd) || { echo "bundle_qemu.sh: no folder ${1:-dist}" >&2; exit 1; }
QEMU=$(command -v qemu-aarch64) || { echo "bundle_qemu.sh: qemu-aarch64 not found (scripts/setup-deps.sh)" >&2; exit 1; }
HOST_SB=$(realpath "${HOST_SB:-build/bin/stagebench}") || { echo "bundle_qemu.sh: no build/bin/stagebench (make build)" >&2; exit 1; }

source tests/dist/checks.sh

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$HOST_SB" synth --preset tiny -o "$TMP/tiny.gguf" >/dev/null 2>&1 || { echo "synth failed" >&2; exit 1; }

declare -A CPU=([arm64]=cortex-a76 [agent-armv8.0]=cortex-a53 [agent-armv8.2]=cortex-a76 [agent-armv8.6]=max)
ran=0
for target in arm64 agent-armv8.0 agent-armv8.2 agent-armv8.6; do
  case $target in
    arm64) ls "$DIST"/stagebench-*-linux-arm64.tar.gz >/dev/null 2>&1 || { echo "skip $target: no arm64 tarball in $DIST"; continue; }
           prefix="$QEMU -L $(bash scripts/sysroot.sh) -cpu ${CPU[$target]}" ;;
    *) [ -f "$DIST/stagebench-agent-${target#agent-}" ] || { echo "skip $target: no stagebench-agent-${target#agent-} in $DIST"; continue; }
       prefix="$QEMU -cpu ${CPU[$target]}" ;;
  esac
  ran=$((ran + 1))
  job="$TMP/$target.tar.gz" dir="$TMP/$target"
  check "$target: bundle writes the job" "$HOST_SB" bundle -o "$job" --target "$target" \
    --dist "$DIST" -m "$TMP/tiny.gguf" -- run -m "$TMP/tiny.gguf" -p 8 -n 2 -r 1 -t 2
  mkdir -p "$dir" && tar -xzf "$job" -C "$dir"
  check "$target: run.sh measures under dash, env -i, qemu (exit 0)" \
    env -i PATH=/usr/bin:/bin "STAGEBENCH_PREFIX=$prefix" dash "$dir/run.sh"
  check "$target: the document's test is ok" \
    python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d['tests'][0]['status'] != 'ok')" \
    "$dir/results/result.json"
  check "$target: ingest checks its manifest and stores it" \
    "$HOST_SB" ingest "$dir/results" --db "$TMP/lab.sqlite"
done
[ "$ran" -gt 0 ] || { echo "bundle_qemu.sh: nothing of $DIST to bundle (make dist ARCH=arm64)" >&2; exit 1; }
finish
