#!/usr/bin/env bash
# Which client keeps `serve`'s own overhead lower: a thread per in-flight request (`--client
# thread`, each with its own libcurl handle) or one event loop (`--client loop`, libcurl's
# multi interface on one thread)? A llama-server with 16 slots on the tiny model, started as the
# README shows, is loaded at concurrency 1, 4 and 16 by both clients, interleaved round by round
# (A B, then B A, ...), each a `stagebench serve` process of its own. Per point the client's CPU
# per request is the document's client_cpu_ms_per_request (getrusage of the serve process over
# the point: only the client runs there; the server is another process); TTFT medians beside.
#
# Target: at every concurrency, the median over rounds of the default client's CPU per request
# (the default of `serve --client`) at most 1.1x the other's. Prints every round and the
# medians; exits 1 on a miss (2 when it cannot run).
#
#   ROUNDS=3 REQUESTS=32 bash bench/serve_client_models.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib/deadline.sh
. bench/lib/tiny_llama_server.sh
ROUNDS=${ROUNDS:-3}
. bench/lib/rounds.sh
need_rounds 3 "the target is a median over rounds"
REQUESTS=${REQUESTS:-32}
default=$(dl "$SB" serve --help | sed -n 's/.*--client TEXT=\([a-z]*\).*/\1/p' | head -1)
case "$default" in
  thread) other=loop ;;
  loop) other=thread ;;
  *) echo "cannot read serve --client's default from serve --help" >&2; exit 2 ;;
esac
start_tiny_llama_server 16
echo "serve --url llama-server(-np 16, tiny) --client thread|loop --concurrency 1,4,16 --requests $REQUESTS -p 32 -n 16, $ROUNDS rounds interleaved (default: $default; load: $(cut -d' ' -f1-3 /proc/loadavg))"
for r in $(seq 1 "$ROUNDS"); do
  if [ $((r % 2)) = 1 ]; then order="thread loop"; else order="loop thread"; fi
  for c in $order; do
    dl "$SB" serve --url "http://127.0.0.1:$port" --client "$c" --concurrency 1,4,16 \
      --requests "$REQUESTS" -p 32 -n 16 --telemetry off -o json >"$work/r$r-$c.json" \
      2>"$work/r$r-$c.err" || [ -s "$work/r$r-$c.json" ] || { tail -3 "$work/r$r-$c.err"; exit 2; }
  done
done
python3 - "$work" "$ROUNDS" "$default" "$other" <<'EOF'
import json, statistics, sys
work, rounds, default, other = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
cpu = {}   # (client, concurrency) -> [ms per request per round]
ttft = {}
for r in range(1, rounds + 1):
    for c in ("thread", "loop"):
        doc = json.load(open(f"{work}/r{r}-{c}.json"))
        for p in doc["serve"]["points"]:
            k = (c, int(p["value"]))
            # A failed request still cost the client its work: CPU per request stands; a
            # point with no success has no TTFT and cannot be compared.
            if p["errors"]:
                first = next(q["error"] for q in p["requests"] if q.get("error"))
                print(f"  (round {r}, {c}, concurrency {k[1]}: {p['errors']} of "
                      f"{len(p['requests'])} requests failed, e.g. {first})")
            if not p["ok"]:
                sys.exit(2)
            cpu.setdefault(k, []).append(p["client_cpu_ms_per_request"])
            ttft.setdefault(k, []).append(p["ttft"]["median_ms"])
missed = False
for n in (1, 4, 16):
    print(f"concurrency {n}:")
    for c in ("thread", "loop"):
        rs = ", ".join("%.3f" % x for x in cpu[(c, n)])
        print(f"  {c:6}: client CPU {statistics.median(cpu[(c, n)]):.3f} ms/request (rounds {rs}),"
              f" TTFT median {statistics.median(ttft[(c, n)]):.2f} ms")
    a, b = statistics.median(cpu[(default, n)]), statistics.median(cpu[(other, n)])
    ratio = a / b if b > 0 else float("inf")
    ok = ratio <= 1.1
    missed |= not ok
    print(f"  {default} / {other} CPU per request: {ratio:.2f}x: {'met' if ok else 'MISSED'} (<= 1.1)")
print(f"target (the default, {default}, at most 1.1x {other}'s CPU per request at every concurrency): "
      + ("MISSED" if missed else "met"))
sys.exit(1 if missed else 0)
EOF
