#!/usr/bin/env bash
# `ops` on a Vulkan device: the device's own op times (Vulkan timestamp queries; the pinned
# tree's ggml-cuda has no op timer, so a CUDA device has none to judge) against the calls the
# host saw. A call holds its op's work plus the submission and the fence, so the
# device's time is at most the call's; and a stage's device times are its own (a prefill's
# mat-mul over P rows takes longer on the device than a decode step's over one).
#
# ROUNDS runs of `stagebench ops -p P --decode-tokens N --device DEVICE` on the tiny synthetic
# model, one after another. Per round and stage: the device's time over the calls for the ops
# the device timer priced (all of them, and the mat-muls, most of the work), and the device's
# time of one mat-mul. Targets, on the medians over the rounds:
#   - per stage, Σ device ≤ 1.25 × Σ calls, for all ops and for the mat-muls;
#   - a prefill mat-mul's device time above a decode step's.
# Not per light op, and not in one round: on lavapipe the "device" clock is the CPU's, read by
# the driver's queue thread, so a preemption of that thread lands inside the op it interrupts,
# and the timer's pass runs at another moment than the traced calls; decode's ops often run
# longer in the pass (one command buffer, fusion off) than dispatched alone, even on an idle
# machine (one CI run: decode's device time 60.6 ms against 45.9 ms of calls). That is why this is a
# bench and not a test: tests/integration/gpu_test.cpp checks what holds under any load (every op
# on the device priced by its timer, per stage and per signature).
# Exits 1 on a miss, 2 when it cannot run.
#
#   GGML_VK_VISIBLE_DEVICES=0 bash bench/device_timer.sh   # lavapipe (a CPU-type device)
#   ROUNDS=5 P=512 N=16 bash bench/device_timer.sh          # a real GPU: Vulkan0 needs nothing
#   DEVICE=Vulkan1 bash bench/device_timer.sh               # the second Vulkan device
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib/deadline.sh
SB=${STAGEBENCH:-build/bin/stagebench}
[ -x "$SB" ] || { echo "build first: make build (or set STAGEBENCH)" >&2; exit 2; }
DEVICE=${DEVICE:-Vulkan0}
ROUNDS=${ROUNDS:-5}
P=${P:-32}
N=${N:-4}
. bench/lib/rounds.sh
need_rounds 3 "the targets are medians over rounds"
for v in P N; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || { echo "device_timer.sh: $v=${!v}: a whole number" >&2; exit 2; }
done
[ "$P" -ge 2 ] && [ "$N" -ge 1 ] || { echo "device_timer.sh: P=$P N=$N: P 2 or more, N 1 or more" >&2; exit 2; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
dl "$SB" devices >"$work/devices.txt" 2>&1 || { tail -3 "$work/devices.txt" >&2; exit 2; }
grep -q "^| $DEVICE " "$work/devices.txt" || {
  echo "device_timer.sh: no device $DEVICE here (stagebench devices; lavapipe needs GGML_VK_VISIBLE_DEVICES=0)" >&2
  exit 2
}
dl "$SB" synth --preset tiny --seed 7 -o "$work/tiny.gguf" >/dev/null 2>&1 ||
  { echo "device_timer.sh: synth failed" >&2; exit 2; }
echo "ops on $DEVICE, tiny model, -p $P --decode-tokens $N, $ROUNDS rounds (load: $(cut -d' ' -f1-3 /proc/loadavg))"
for r in $(seq 1 "$ROUNDS"); do
  dl "$SB" ops -m "$work/tiny.gguf" --device "$DEVICE" -p "$P" --decode-tokens "$N" -q \
    --out "$work/ops$r.json" >/dev/null 2>"$work/ops$r.err" ||
    { echo "device_timer.sh: round $r: $(tail -1 "$work/ops$r.err")" >&2; exit 2; }
done
rc=0
python3 - "$work" "$ROUNDS" "$DEVICE" <<'EOF' || rc=$?
import json, statistics, sys
work, rounds, device = sys.argv[1], int(sys.argv[2]), sys.argv[3]
per = {}  # stage -> list of (dev/call, mm dev/call, mm dev per op)
for r in range(1, rounds + 1):
    doc = json.load(open("%s/ops%d.json" % (work, r)))
    timer = doc["ops"]["device_timer"]
    if timer.get("error"):
        print("device_timer.sh: round %d: the device timer failed: %s" % (r, timer["error"]), file=sys.stderr)
        sys.exit(2)
    for st in doc["ops"]["stages"]:
        dev = call = mm_dev = mm_call = 0.0
        mm = 0
        for op in st["ops"]:
            m = op["op_method"] if isinstance(op["op_method"], str) else ""
            if op["backend"] != device or not m.startswith("device timer"):
                continue
            dev += op["op_ns"]
            call += op["call_ns"]
            if op["op"] == "MUL_MAT":
                mm_dev += op["op_ns"]
                mm_call += op["call_ns"]
                mm += 1
        if mm == 0 or call <= 0 or mm_call <= 0:
            print("device_timer.sh: round %d, %s: no op on %s priced by the device timer" % (r, st["stage"], device), file=sys.stderr)
            sys.exit(2)
        per.setdefault(st["stage"], []).append((dev / call, mm_dev / mm_call, mm_dev / mm))
        print("  round %d %-7s device/calls %.3f (%.3f / %.3f ms), mat-muls %.3f, one mat-mul %.1f us"
              % (r, st["stage"], dev / call, dev / 1e6, call / 1e6, mm_dev / mm_call, mm_dev / mm / 1e3))
missed = 0
def target(label, ok, value):
    global missed
    print("  target (%s): %s (%s)" % (label, "met" if ok else "MISSED", value))
    missed |= not ok
for stage in ("prefill", "decode"):
    if stage not in per:
        print("device_timer.sh: no %s stage in the profiles" % stage, file=sys.stderr)
        sys.exit(2)
    rs = per[stage]
    all_ = statistics.median(x[0] for x in rs)
    mms = statistics.median(x[1] for x in rs)
    target("%s: median of device / calls <= 1.25, all ops" % stage, all_ <= 1.25, "%.3f" % all_)
    target("%s: median of device / calls <= 1.25, mat-muls" % stage, mms <= 1.25, "%.3f" % mms)
pre = statistics.median(x[2] for x in per["prefill"])
dec = statistics.median(x[2] for x in per["decode"])
target("a prefill mat-mul on the device above a decode step's, medians", pre > dec,
       "%.1f against %.1f us" % (pre / 1e3, dec / 1e3))
sys.exit(missed)
EOF
exit "$rc"  # 1: a target missed; 2: a profile without what the targets judge
