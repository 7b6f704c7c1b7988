#!/usr/bin/env bash
# Parity with the peer: stagebench `run` against llama.cpp's own llama-bench (built from the
# same tree), same synthetic model, threads and sizes, interleaved round by round so that
# machine noise hits both alike. Every figure below is computed here, by one function per
# statistic, from each side's raw repetitions (stagebench's duration_ns, llama-bench's
# samples_ns; prefill = pp P, decode = tg N at depth P on both sides, every repetition of one
# run timed the same way: the stage alone, synchronised after the last token), so that the two
# columns of a pair are always the same statistic over the same unit. stagebench runs the same
# two tests as llama-bench, `run -p P -n 0` and `run -p 0 -n N -d P` (until 17:00 UTC on
# 2026-12-07 one `run -p P -n N`, whose decode follows a timed prompt in every repetition: on
# lavapipe its repetitions spread more than llama-bench's, pooled CVs 11.2 % against 9.6 % and
# p = 0.030 over 40 rounds; a kept folder of that kind is still judged):
#   - t/s: the median over rounds of each run's mean of its repetitions' tokens/s;
#   - robust t/s: the median over rounds of tokens / the run's median repetition;
#   - CV: the median over rounds of each run's sample standard deviation (n - 1) of its
#     repetitions' tokens/s over their mean, REPS repetitions per run on each side (what
#     llama-bench prints as stddev_ts / avg_ts and stagebench as throughput.cv; the script
#     checks that it agrees with both). Not stall-robust on either side: a stalled repetition
#     widens it alike;
#   - spread test: every repetition's tokens/s over its run's mean, minus 1, pooled over the
#     rounds (ROUNDS x (REPS - 1) degrees of freedom a side); the statistic is stagebench's
#     pooled variance over llama-bench's, and its one-sided p-value comes from 4000 seeded
#     permutations of the side labels over the pooled deviations;
#   - stalled repetitions: the same rule (modified z-score > 3.5, one-sided, stagebench's) on
#     each run's repetitions, summed over rounds.
# Printed beside them, not compared (llama-bench has no per-token times): stagebench's own
# decode figure (`robust`: 1e9 / the median inter-token latency; where token latencies are
# skewed, as on lavapipe where the driver's threads and ggml's share the cores, the median
# token is faster than the median repetition's mean token and the two statistics part, see
# bench/README.md) and its stalled decode tokens (the same rule over every token).
# The ratio: each round's stagebench run and the llama-bench run beside it form a pair (they
# ran within a minute of each other, so a machine that drifts or steps between rounds moves
# both); per round, stagebench's robust t/s over llama-bench's; the figure is their geometric
# mean, with a 95 % confidence interval from Student's t on the logs of the per-round ratios.
# Targets, per stage: that interval inside 1 ± TOLERANCE (3 %), and stagebench's spread not
# significantly larger than llama-bench's (the spread test's p >= 0.05). Verdicts: met (both
# targets), MISSED (the spread test failed, or the whole interval lies outside the band),
# UNRESOLVED (the interval straddles a bound: the rounds disagree more than the target allows;
# the script says how many rounds that spread would take). Exit 0 when every stage is met,
# 1 when one missed, 3 when none missed and one is unresolved (2: cannot run).
# (Until 2026-12-07 the ratio target was the ratio of the two sides' medians over rounds within
# ±TOLERANCE, a point with no interval: it ignored the pairing that the interleaving was built
# for and "met" or missed on the VM's noise alone: per-round ratios 0.70 to 1.26 in the 20-round
# lavapipe run of bench/README.md. Until then, too, the spread target was "median CV no larger than
# llama-bench's", which two tools of equal spread missed in a third of runs of 3 x 3
# repetitions: a gate that fails on noise. The permutation test misses them in 6-8 % of runs
# (simulated, normal repetitions), and still misses a real difference: at 5 x 5 repetitions a
# stagebench twice as spread as its peer in 9 runs of 10, one and a half times as spread in
# about half; at 3 x 3 in 6 and 3 of 10.) The load average is printed before and after (the
# figures mean little on a busy machine). KEEP=DIR keeps both sides' raw JSON documents there
# with the run's sizes (meta.json); JUDGE=DIR judges such a folder again without measuring.
#
#   ROUNDS=5 THREADS=2 PRESET=llama-3.2-1b LAYERS=4 P=512 N=128 REPS=5 bash bench/parity.sh
# On a GPU both sides name it and offload every layer (bench/vulkan_parity.sh, gpu_check.sh):
#   LB_DEVICE=Vulkan0 NGL=99 TOLERANCE=0.05 bash bench/parity.sh
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}; THREADS=${THREADS:-2}; PRESET=${PRESET:-llama-3.2-1b}; LAYERS=${LAYERS:-4}
P=${P:-512}; N=${N:-128}; REPS=${REPS:-5}; QUANT=${QUANT:-q4_0}
# The spread test compares repetitions about their run's mean: two a run at least.
for v in ROUNDS:1 REPS:2 P:1 N:1; do
  name=${v%:*}; least=${v#*:}; val=${!name}
  [[ "$val" =~ ^[0-9]+$ ]] && [ "$val" -ge "$least" ] ||
    { echo "parity.sh: $name=$val: a whole number of at least $least" >&2; exit 2; }
done
SB=${SB:-build/bin/stagebench}; LB=${LB:-build/peers/llama-bench}
tol_given=${TOLERANCE:-}
LB_DEVICE=${LB_DEVICE:-none}; NGL=${NGL:-99}; TOLERANCE=${TOLERANCE:-0.03}
# llama-bench loads every module it finds, and llama.cpp gives every context the CPU and every
# accelerator-type device (BLAS) beside the devices named by -dev, so the peer's scheduler runs
# CPU + LB_DEVICE + BLAS. stagebench loads only what --device names: its device for the same
# setup is LB_DEVICE plus each accelerator `stagebench devices` lists (-dev none: the
# accelerators alone, CPU + BLAS; none found: CPU). Without them the two sides would run two
# configurations (on lavapipe, Vulkan0 against Vulkan0+BLAS until 16:00 UTC on 2026-12-07).
if [ -z "${SB_DEVICE:-}" ] && [ -z "${JUDGE:-}" ]; then
  accels=$(timeout 120 "$SB" devices 2>/dev/null | awk -F'|' '$3 ~ /^ *accel *$/ {
    gsub(/ /, "", $2); printf "+%s", $2 }') || accels=
  if [ "$LB_DEVICE" = none ]; then SB_DEVICE=${accels#+}; else SB_DEVICE=$LB_DEVICE$accels; fi
  SB_DEVICE=${SB_DEVICE:-CPU}
fi
# A deadline for every run (seconds): a device or driver that stops answering ends the bench.
RUN_TIMEOUT=${RUN_TIMEOUT:-1800}
if [ -n "${JUDGE:-}" ]; then
  # Judge a kept folder again: its meta.json has the run's sizes (TOLERANCE may be given anew).
  [ -f "$JUDGE/meta.json" ] || { echo "parity.sh: $JUDGE has no meta.json (KEEP=DIR writes one)" >&2; exit 2; }
  work=$JUDGE
  tol_override=$tol_given
else
  [ -x "$SB" ] && [ -x "$LB" ] || { echo "build first: make build" >&2; exit 2; }
  work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
  load0=$(cut -d' ' -f1-3 /proc/loadavg)
  # MODEL: a GGUF to use instead of synthesizing one (LAYERS empty: the preset's full depth).
  model=${MODEL:-"$work/model.gguf"}
  run() { timeout --kill-after=10 "$RUN_TIMEOUT" "$@"; }
  [ -n "${MODEL:-}" ] || run "$SB" synth --preset "$PRESET" ${LAYERS:+--layers "$LAYERS"} --quant "$QUANT" -o "$model" >&2

  for r in $(seq 1 "$ROUNDS"); do
    echo "round $r/$ROUNDS, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
    # Alternate who goes first so that neither always runs on a warmer machine.
    if [ $((r % 2)) -eq 1 ]; then order="sb lb"; else order="lb sb"; fi
    for who in $order; do
      if [ "$who" = sb ]; then
        # The same two tests as llama-bench's: the prompt alone, and decode alone at depth P.
        run "$SB" run -m "$model" -p "$P" -n 0 -t "$THREADS" -r "$REPS" --device "$SB_DEVICE" \
          -ngl "$NGL" --membw off -o json -q > "$work/sb_pp.$r.json"
        run "$SB" run -m "$model" -p 0 -n "$N" -d "$P" -t "$THREADS" -r "$REPS" \
          --device "$SB_DEVICE" -ngl "$NGL" --membw off -o json -q > "$work/sb_tg.$r.json"
      else
        run "$LB" -m "$model" -p "$P" -n 0 -t "$THREADS" -r "$REPS" -dev "$LB_DEVICE" -ngl "$NGL" \
          -o json > "$work/lb_pp.$r.json" 2>/dev/null
        run "$LB" -m "$model" -p 0 -n "$N" -d "$P" -t "$THREADS" -r "$REPS" -dev "$LB_DEVICE" \
          -ngl "$NGL" -o json > "$work/lb_tg.$r.json" 2>/dev/null
      fi
    done
  done

  load1=$(cut -d' ' -f1-3 /proc/loadavg)
  printf '{"rounds": %d, "p": %d, "n": %d, "reps": %d, "tolerance": %s, "load_before": "%s", "load_after": "%s", "sb_device": "%s", "lb_device": "%s", "ngl": %d}\n' \
    "$ROUNDS" "$P" "$N" "$REPS" "$TOLERANCE" "$load0" "$load1" "$SB_DEVICE" "$LB_DEVICE" "$NGL" \
    > "$work/meta.json"
  [ -z "${KEEP:-}" ] || { mkdir -p "$KEEP" && cp "$work"/*.json "$KEEP"/; }
fi

python3 - "$work" "${tol_override:-}" <<'PY'
import json, math, os, random, statistics as st, sys
work = sys.argv[1]
meta = json.load(open(f"{work}/meta.json"))
rounds, p, n, reps = meta["rounds"], meta["p"], meta["n"], meta["reps"]
tol = float(sys.argv[2]) if sys.argv[2] else float(meta["tolerance"])
load0, load1 = meta["load_before"], meta["load_after"]
# Kept before 16:00 UTC on 2026-12-07, a folder has no devices: said as unknown.
devices = (f"stagebench --device {meta['sb_device']} against llama-bench -dev {meta['lb_device']}"
           f" -ngl {meta['ngl']}" if "sb_device" in meta else "devices not recorded")

def stalls(xs, k=3.5):
    """Count of samples whose one-sided modified z-score exceeds k (stagebench's rule)."""
    if not xs:
        return 0
    med = st.median(xs)
    mad = st.median([abs(x - med) for x in xs])
    scale = mad / 0.6745 if mad > 0 else 1.253314 * sum(abs(x - med) for x in xs) / len(xs)
    return 0 if scale <= 0 else sum(1 for x in xs if (x - med) / scale > k)

def cv(ts):
    """Sample standard deviation (n - 1) of per-repetition tokens/s over their mean."""
    return st.stdev(ts) / st.mean(ts) if len(ts) > 1 else float("nan")

def agrees(mine, theirs, who):
    # The tools' own figures, as they print them (llama-bench's to 6 decimals): a difference
    # would mean the two CVs are not the statistic this script says they are.
    if abs(mine - theirs) > 1e-4 * abs(mine) + 1e-6:
        sys.exit(f"parity.sh: {who}'s own CV {theirs:.6f} is not the script's {mine:.6f}")

def rel_devs(ts):
    """Each repetition's tokens/s over the run's mean, minus 1 (the run's level taken out)."""
    m = st.mean(ts)
    return [t / m - 1 for t in ts]

def spread_test(a_runs, b_runs, trials=4000, seed=39):
    """One-sided permutation test of 'a spreads more than b' on within-run relative deviations.
    Returns (pooled CV of a, pooled CV of b, p)."""
    a = [x for run in a_runs for x in rel_devs(run)]
    b = [x for run in b_runs for x in rel_devs(run)]
    dfa = len(a) - len(a_runs)
    dfb = len(b) - len(b_runs)
    if dfa <= 0 or dfb <= 0:
        return float("nan"), float("nan"), 1.0
    def ratio(xs, ys):
        vy = sum(y * y for y in ys) / dfb
        return (sum(x * x for x in xs) / dfa) / vy if vy > 0 else float("inf")
    obs = ratio(a, b)
    pool, na = a + b, len(a)
    rng = random.Random(seed)
    hits = 0
    for _ in range(trials):
        rng.shuffle(pool)
        hits += ratio(pool[:na], pool[na:]) >= obs
    va, vb = sum(x * x for x in a) / dfa, sum(y * y for y in b) / dfb
    return va ** 0.5, vb ** 0.5, (hits + 1) / (trials + 1)

def t_quantile(q, df):
    """Student's t quantile (q > 0.5): bisection on its CDF, Simpson's rule over the density."""
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)
    def cdf(x, steps=2000):
        h = x / steps
        f = lambda u: c * (1 + u * u / df) ** (-(df + 1) / 2)
        inner = sum((4 if i % 2 else 2) * f(i * h) for i in range(1, steps))
        return 0.5 + (f(0) + inner + f(x)) * h / 3
    lo, hi = 0.0, 1000.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf(mid) < q else (lo, mid)
    return (lo + hi) / 2

def paired_ratio(sb_rob, lb_rob):
    """Geometric mean of the per-round ratios and its 95 % CI (Student's t on their logs);
    also the standard deviation of the logs. One round: no interval (bounds 0 and infinity)."""
    logs = [math.log(x / y) for x, y in zip(sb_rob, lb_rob)]
    m = st.mean(logs)
    if len(logs) < 2:
        return math.exp(m), 0.0, float("inf"), float("nan")
    sd = st.stdev(logs)
    half = t_quantile(0.975, len(logs) - 1) * sd / math.sqrt(len(logs))
    return math.exp(m), math.exp(m - half), math.exp(m + half), sd

def verdict(lo, hi, pval, tol):
    if pval < 0.05 or hi < 1 - tol or lo > 1 + tol:
        return "MISSED"
    return "met" if lo >= 1 - tol and hi <= 1 + tol else "UNRESOLVED"

def rounds_needed(sd, gm, tol):
    """Rounds for the 95 % interval, at this spread, to fit between the estimate and the nearer
    bound (Student's t at those rounds); None where the estimate is outside the band."""
    room = min(math.log(1 + tol) - math.log(gm), math.log(gm) - math.log(1 - tol))
    if not room > 0:
        return None
    k = max(2, math.ceil((1.96 * sd / room) ** 2))  # t > 1.96: never fewer than this
    while k < 10000 and t_quantile(0.975, k - 1) * sd / math.sqrt(k) > room:
        k += 1
    return k

keys = ("sb", "lb", "sb_rob", "lb_rob", "sb_itl", "sb_cv", "lb_cv", "sb_n", "lb_n",
        "sb_stalls", "lb_stalls", "sb_tok_stalls", "sb_ts", "lb_ts")
rows = {stage: {k: [] for k in keys} for stage in ("prefill", "decode")}
def sb_test(r, stage):
    """Round r's stagebench test of the stage: its own test (sb_pp, sb_tg: the same tests as
    llama-bench's), or, in a folder kept before 17:00 UTC on 2026-12-07, the one test of both
    stages (sb: the decode right after a timed prompt)."""
    own = f"{work}/sb_{'pp' if stage == 'prefill' else 'tg'}.{r}.json"
    return json.load(open(own if os.path.exists(own) else f"{work}/sb.{r}.json"))["tests"][0]

combined = os.path.exists(f"{work}/sb.1.json")
for r in range(1, rounds + 1):
    for stage in ("prefill", "decode"):
        s, d, tokens = sb_test(r, stage)[stage], rows[stage], (p if stage == "prefill" else n)
        ts = [tokens * 1e9 / x for x in s["duration_ns"]]
        d["sb"].append(st.mean(ts)); d["sb_cv"].append(cv(ts)); d["sb_n"].append(len(ts))
        d["sb_ts"].append(ts)
        agrees(d["sb_cv"][-1], s["throughput"]["cv"], "stagebench")
        d["sb_rob"].append(tokens * 1e9 / st.median(s["duration_ns"]))
        d["sb_itl"].append(s["robust"]["tokens_per_s"])
        d["sb_stalls"].append(stalls(s["duration_ns"]))
        if stage == "decode":
            d["sb_tok_stalls"].append(s["stalls"]["tokens"]["count"])
    for stage, f, tokens in (("prefill", "lb_pp", p), ("decode", "lb_tg", n)):
        b, d = json.load(open(f"{work}/{f}.{r}.json"))[0], rows[stage]
        ts = [tokens * 1e9 / x for x in b["samples_ns"]]
        d["lb"].append(st.mean(ts)); d["lb_cv"].append(cv(ts)); d["lb_n"].append(len(ts))
        d["lb_ts"].append(ts)
        agrees(d["lb_cv"][-1], b["stddev_ts"] / b["avg_ts"], "llama-bench")
        d["lb_rob"].append(tokens * 1e9 / st.median(b["samples_ns"]))
        d["lb_stalls"].append(stalls(b["samples_ns"]))
verdicts, notes = [], []
print("| stage | stagebench t/s | llama-bench t/s | ratio | stagebench robust t/s | "
      "llama-bench robust t/s | paired ratio | 95 % CI | best-round ratio | "
      "stagebench's own robust t/s | reps per run | stagebench stalled reps | "
      "llama-bench stalled reps | stagebench stalled tokens | stagebench CV | llama-bench CV | "
      "stagebench pooled CV | llama-bench pooled CV | spread p | per-round robust ratios | "
      "verdict |")
print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
      "| ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |")
for stage, d in rows.items():
    a, b = st.median(d["sb"]), st.median(d["lb"])
    ra, rb = st.median(d["sb_rob"]), st.median(d["lb_rob"])
    best = max(d["sb"]) / max(d["lb"])
    ca, cb = st.median(d["sb_cv"]), st.median(d["lb_cv"])
    gm, lo, hi, sd = paired_ratio(d["sb_rob"], d["lb_rob"])
    pa, pb, pval = spread_test(d["sb_ts"], d["lb_ts"])
    v = verdict(lo, hi, pval, tol)
    verdicts.append(v)
    name = f"pp{p}" if stage == "prefill" else f"tg{n} @ d{p}"
    if v == "UNRESOLVED" and hi == float("inf"):
        notes.append(f"{stage}: one round gives no interval; run 2 or more (ROUNDS=)")
    elif v == "UNRESOLVED":
        need = rounds_needed(sd, gm, tol)
        notes.append(f"{stage}: the interval {lo:.3f}-{hi:.3f} straddles a bound of "
                     f"{1 - tol:.3f}-{1 + tol:.3f}; "
                     + (f"at this spread about {need} rounds would resolve it (ROUNDS={need})"
                        if need else f"the estimate {gm:.3f} itself lies outside the band"))
    nn = sorted(set(d["sb_n"]) | set(d["lb_n"]))
    tok = f"{sum(d['sb_tok_stalls'])}" if stage == "decode" else "-"
    ci = f"{lo:.3f}-{hi:.3f}" if hi < float("inf") else "- (one round)"
    print(f"| {stage} ({name}) | {a:.2f} | {b:.2f} | {a / b:.3f} | {ra:.2f} | {rb:.2f} | "
          f"{gm:.3f} | {ci} | {best:.3f} | {st.median(d['sb_itl']):.2f} | "
          f"{'/'.join(map(str, nn))} | {sum(d['sb_stalls'])} | {sum(d['lb_stalls'])} | {tok} | "
          f"{ca*100:.2f} % | {cb*100:.2f} % | {pa*100:.2f} % | {pb*100:.2f} % | {pval:.3f} | "
          f"{' '.join(f'{x / y:.3f}' for x, y in zip(d['sb_rob'], d['lb_rob']))} | {v} |")
tests = (f"stagebench `run -p {p} -n {n}` (the decode right after a timed prompt in each "
         "repetition)" if combined else
         f"stagebench `run -p {p} -n 0` and `run -p 0 -n {n} -d {p}`, llama-bench's tests")
print(f"\n{devices}; {tests}; {rounds} interleaved rounds of {reps} repetitions a side; load average "
      f"{load0} before, {load1} after. Medians over rounds of each run's mean tokens/s, robust "
      "figure (tokens / median repetition) and CV (sample SD / mean of its repetitions' "
      "tokens/s), the same on both sides; stalled repetitions by the same rule on both sides, "
      "summed over rounds. Not compared: stagebench's own robust figure (decode: 1e9 / median "
      "inter-token latency) and its stalled decode tokens. Best-round ratio = best stagebench "
      "run / best llama-bench run (means). Per-round robust ratios: each round's stagebench "
      "run over the llama-bench run beside it, in order; the paired ratio is their geometric "
      "mean and the 95 % CI its interval (Student's t on their logs); the target is that "
      f"interval inside {1 - tol:.3f}-{1 + tol:.3f}. Spread p: one-sided permutation test that "
      "stagebench's repetitions spread more about their run's mean than llama-bench's (pooled "
      "CVs beside it); the target is p >= 0.05. Verdicts: met (both targets), MISSED (spread "
      "p < 0.05, or the whole interval outside the band), UNRESOLVED (the interval straddles "
      "a bound).")
for line in notes:
    print(f"\n{line}.")
sys.exit(1 if "MISSED" in verdicts else 3 if "UNRESOLVED" in verdicts else 0)
PY
