#!/usr/bin/env bash
# bench/parity.sh's verdicts, judged from kept folders written here (JUDGE=DIR, no measuring):
# each side's documents as the tools write them (stagebench's run JSON, llama-bench's -o json),
# with repetitions chosen so that the answer is known. A ratio inside the band in every round
# is met; a stagebench 10 % slower in every round is missed; rounds that disagree by ±15 % are
# unresolved, with the rounds it would take; a stagebench whose repetitions spread three times
# as much is missed; the interval is Student's (t = 12.706 for two rounds, by hand below).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../tests/dist/checks.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# make_case DIR SPEC: SPEC is a JSON list of rounds, each
#   {"sb": [prefill rep t/s...], "sb_dec": [...], "lb": [...], "lb_dec": [...]}
make_case() {
  mkdir -p "$1"
  python3 - "$1" "$2" <<'PY'
import json, statistics as st, sys
out, rounds = sys.argv[1], json.loads(sys.argv[2])
P, N = 64, 16
def cv(ts):
    return st.stdev(ts) / st.mean(ts)
for r, rd in enumerate(rounds, 1):
    stages = {}
    for stage, key, tokens in (("prefill", "sb", P), ("decode", "sb_dec", N)):
        ts = rd[key]
        ns = [round(tokens * 1e9 / t) for t in ts]
        ts = [tokens * 1e9 / x for x in ns]
        stages[stage] = {"duration_ns": ns, "throughput": {"cv": cv(ts)},
                         "robust": {"tokens_per_s": tokens * 1e9 / st.median(ns)},
                         "stalls": {"tokens": {"count": 0}}}
    json.dump({"tests": [stages]}, open(f"{out}/sb.{r}.json", "w"))
    for f, key, tokens in (("lb_pp", "lb", P), ("lb_tg", "lb_dec", N)):
        ns = [round(tokens * 1e9 / t) for t in rd[key]]
        ts = [tokens * 1e9 / x for x in ns]
        json.dump([{"samples_ns": ns, "avg_ts": st.mean(ts), "stddev_ts": st.stdev(ts)}],
                  open(f"{out}/{f}.{r}.json", "w"))
json.dump({"rounds": len(rounds), "p": P, "n": N, "reps": len(rounds[0]["sb"]),
           "tolerance": 0.05, "load_before": "0 0 0", "load_after": "0 0 0"},
          open(f"{out}/meta.json", "w"))
PY
}

# judge NAME DIR: parity.sh's table and exit code for a kept folder.
judge() {
  JUDGE=$2 bash "$here/parity.sh" > "$work/$1.md" 2> "$work/$1.err"
  echo $? > "$work/$1.rc"
}
verdict_of() { grep "^| $2 " "$work/$1.md" | awk -F'|' '{print $(NF-1)}' | tr -d ' '; }
rc_of() { cat "$work/$1.rc"; }

# Repetitions of equal spread (±2 %) about a level; the same five deviations on both sides.
reps() { python3 -c "import sys; l=float(sys.argv[1]); s=float(sys.argv[2]); print([l*(1+s*d) for d in (-0.02, -0.01, 0, 0.01, 0.02)])" "$@"; }
round_json() {  # round_json SB_LEVEL LB_LEVEL [SB_SPREAD]
  local s=${3:-1}
  echo "{\"sb\": $(reps "$1" "$s"), \"sb_dec\": $(reps "$(python3 -c "print($1/10)")" "$s"), \"lb\": $(reps "$2" 1), \"lb_dec\": $(reps "$(python3 -c "print($2/10)")" 1)}"
}
rounds_json() {  # rounds_json "SB_LEVEL:LB_LEVEL[:SB_SPREAD] ..."
  local out="[" sep=""
  for r in $1; do
    IFS=: read -r a b s <<<"$r"
    out+="$sep$(round_json "$a" "$b" "${s:-1}")"; sep=","
  done
  echo "$out]"
}

# Met: every round's ratio within 1 % of 1 (the machine's level moves between rounds).
make_case "$work/met" "$(rounds_json "100:100 120:119 90:90.5 110:110 95:94.6 105:105.5")"
judge met "$work/met"
check "met: exit 0" [ "$(rc_of met)" = 0 ]
check "met: prefill met" [ "$(verdict_of met "prefill (pp64)")" = met ]
check "met: decode met" [ "$(verdict_of met "decode (tg16 @ d64)")" = met ]
check "a folder of one run -p -n a round: judged as such, and said" \
  grep -q "stagebench \`run -p 64 -n 16\` (the decode right after a timed prompt in each repetition)" "$work/met.md"

# Missed: stagebench 10 % slower in every round, however the level moves.
make_case "$work/slow" "$(rounds_json "90:100 108:120 81:90 99:110 85.5:95 94.5:105")"
judge slow "$work/slow"
check "10 % slower: exit 1" [ "$(rc_of slow)" = 1 ]
check "10 % slower: prefill MISSED" [ "$(verdict_of slow "prefill (pp64)")" = MISSED ]
check "10 % slower: paired ratio 0.900" grep -q "^| prefill (pp64) | .* | 0.900 | 0.900-0.900 |" "$work/slow.md"

# Unresolved: the rounds disagree by ±15 %, centred on 1: the interval straddles both bounds,
# and the note says how many rounds that spread would take.
make_case "$work/noisy" "$(rounds_json "115:100 85:100 115:100 85:100 115:100 85:100")"
judge noisy "$work/noisy"
check "±15 % rounds: exit 3" [ "$(rc_of noisy)" = 3 ]
check "±15 % rounds: prefill UNRESOLVED" [ "$(verdict_of noisy "prefill (pp64)")" = UNRESOLVED ]
check "±15 % rounds: rounds needed said" grep -q "^prefill: the interval .* straddles a bound of 0.950-1.050; at this spread about [0-9]* rounds would resolve it" "$work/noisy.md"

# Missed by spread alone: the levels agree, stagebench's repetitions spread three times more.
make_case "$work/spread" "$(rounds_json "100:100:3 120:120:3 90:90:3 110:110:3 95:95:3 105:105:3")"
judge spread "$work/spread"
check "3x spread: exit 1" [ "$(rc_of spread)" = 1 ]
check "3x spread: decode MISSED" [ "$(verdict_of spread "decode (tg16 @ d64)")" = MISSED ]

# Two rounds, ratios 1.00 and 1.01: the 95 % interval is exp(m ± 12.706 x sd / sqrt(2)), with
# m = ln(1.01) / 2 and sd = ln(1.01) / sqrt(2): 0.9434 to 1.0706. At that spread 3 rounds would
# resolve it: t = 4.303 at 2 degrees of freedom gives a half-width of 0.0175 in logs, inside the
# 0.0438 between the estimate and 1.05 (2 rounds: 0.0632, too wide).
make_case "$work/two" "$(rounds_json "100:100 101:100")"
judge two "$work/two"
check "two rounds: Student's interval 0.943-1.071" grep -q "^| prefill (pp64) | .* | 1.005 | 0.943-1.071 |" "$work/two.md"
check "two rounds: 3 rounds would resolve it" grep -q "^prefill: .* about 3 rounds would resolve it (ROUNDS=3)" "$work/two.md"
check "two rounds: unresolved, exit 3" [ "$(rc_of two)" = 3 ]

# One round: no interval, unresolved, and the note says so (not that the estimate is outside).
make_case "$work/one" "$(rounds_json "100:100")"
judge one "$work/one"
check "one round: unresolved, exit 3" [ "$(rc_of one)" = 3 ]
check "one round: no interval said" grep -q "^prefill: one round gives no interval" "$work/one.md"

# A folder without meta.json: a one-line error and exit 2.
mkdir -p "$work/bare"
judge bare "$work/bare"
check "no meta.json: exit 2" [ "$(rc_of bare)" = 2 ]
check "no meta.json: said" grep -q "has no meta.json" "$work/bare.err"

# Bad sizes: a one-line error and exit 2 before anything runs (REPS=1 has no spread to test).
for bad in REPS=1 ROUNDS=0 P=x; do
  env "$bad" bash "$here/parity.sh" > /dev/null 2> "$work/bad.err"
  check "$bad: exit 2" [ $? = 2 ]
  check "$bad: said" grep -q "^parity.sh: $bad: a whole number of at least" "$work/bad.err"
done

# Measured once with the real tools (the build folder and llama.cpp's, as ctest passes them):
# the stagebench side runs the devices llama.cpp gives the peer's scheduler, i.e. the named
# device plus BLAS where the build has that module (llama-bench -dev none: BLAS alone, which is
# CPU + BLAS), and the table names both sides' devices.
build=${1:-}; llama=${2:-}
if [ -n "$build" ] && [ -x "$build/bin/stagebench" ]; then
  blas=; [ -f "$llama/bin/libggml-blas.so" ] && blas=+BLAS
  measure() {  # measure NAME LB_DEVICE [env...]: one round of two repetitions, tiny sizes
    local name=$1 lb=$2; shift 2
    env "$@" SB="$build/bin/stagebench" LB="$build/peers/llama-bench" LB_DEVICE="$lb" \
      PRESET=tiny LAYERS= ROUNDS=1 REPS=2 P=8 N=2 KEEP="$work/$name" \
      bash "$here/parity.sh" > "$work/$name.md" 2> "$work/$name.err"
    echo $? > "$work/$name.rc"
  }
  device_of() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['sb_device'])" "$work/$1/meta.json"; }
  measure cpu none
  want=${blas#+}; want=${want:-CPU}
  check "-dev none: measured, one round unresolved (exit 3)" [ "$(rc_of cpu)" = 3 ]
  check "-dev none: stagebench runs $want" [ "$(device_of cpu)" = "$want" ]
  check "-dev none: the devices said" grep -q "^stagebench --device $want against llama-bench -dev none -ngl 99;" "$work/cpu.md"
  # stagebench ran llama-bench's two tests, each a test of one stage, and the table says so.
  test_of() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['tests'][0]['config']['test'])" "$work/cpu/$1.1.json"; }
  check "stagebench's prompt test is llama-bench's pp8" [ "$(test_of sb_pp)" = pp8 ]
  check "stagebench's decode test is llama-bench's tg2 @ d8" [ "$(test_of sb_tg)" = "tg2 @ d8" ]
  check "the tests said" grep -q "stagebench \`run -p 8 -n 0\` and \`run -p 0 -n 2 -d 8\`, llama-bench's tests;" "$work/cpu.md"
  if [ -f "$llama/bin/libggml-vulkan.so" ] && [ -n "$(ls /usr/share/vulkan/icd.d/lvp_icd*.json 2>/dev/null)" ]; then
    # lavapipe, which ggml-vulkan shows only when named.
    measure vk Vulkan0 GGML_VK_VISIBLE_DEVICES=0
    check "-dev Vulkan0: measured (exit 3)" [ "$(rc_of vk)" = 3 ]
    check "-dev Vulkan0: stagebench runs Vulkan0$blas" [ "$(device_of vk)" = "Vulkan0$blas" ]
  fi
fi

for c in met slow noisy spread two one cpu vk; do
  [ -f "$work/$c.md" ] || continue
  [ "$failed" = 0 ] || { echo "--- $c"; cat "$work/$c.md" "$work/$c.err"; }
done
finish
