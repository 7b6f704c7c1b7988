#!/usr/bin/env bash
# Is `serve`'s client (one thread per in-flight request, each with its own connection) cheap
# next to the server it loads? A llama-server with 16 slots on the tiny model, started here so
# that its CPU time can be read from /proc, is loaded by `serve --concurrency 1,4,16`; per point
# the client's CPU per request (the document's client_cpu_ms_per_request) is set beside the
# server's CPU per request over the same point (its /proc/PID/stat before and after, one point
# per serve run).
#
# Targets, at every concurrency: client CPU per request below 10 % of the server's; and the
# client's CPU per request at concurrency 16 at most twice that at 1 (a thread per request
# would show its cost there). Prints each point; exits 1 when a target is missed (2 when it
# cannot run).
#
#   REQUESTS=32 bash bench/serve_client_overhead.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib/deadline.sh
. bench/lib/tiny_llama_server.sh
REQUESTS=${REQUESTS:-32}
start_tiny_llama_server 16
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$spid/stat"; }
echo "serve --url llama-server(-np 16, tiny) --concurrency C --requests $REQUESTS -p 32 -n 16 (load: $(cut -d' ' -f1-3 /proc/loadavg))"
missed=0
declare -A client
for c in 1 4 16; do
  before=$(cpu_s)
  dl "$SB" serve --url "http://127.0.0.1:$port" --concurrency "$c" --requests "$REQUESTS" \
    -p 32 -n 16 --telemetry off -o json >"$work/c$c.json" 2>"$work/c$c.err" ||
    { tail -3 "$work/c$c.err"; exit 2; }
  after=$(cpu_s)
  read -r cl srv pct < <(python3 -c "
import json, sys
p = json.load(open(sys.argv[1]))['serve']['points'][0]
srv = (float(sys.argv[3]) - float(sys.argv[2])) * 1e3 / len(p['requests'])
cl = p['client_cpu_ms_per_request']
print('%.3f %.3f %.1f' % (cl, srv, 100 * cl / srv if srv > 0 else float('inf')))" \
    "$work/c$c.json" "$before" "$after")
  client[$c]=$cl
  echo "  concurrency $c: client $cl ms CPU/request, server $srv ms CPU/request: client $pct % of server"
  if ! awk -v p="$pct" 'BEGIN { exit !(p < 10) }'; then
    echo "  target (client < 10 % of server at concurrency $c): MISSED"
    missed=1
  fi
done
growth=$(awk -v a="${client[1]}" -v b="${client[16]}" 'BEGIN { printf "%.2f", (a > 0) ? b / a : 0 }')
if awk -v g="$growth" 'BEGIN { exit !(g <= 2) }'; then
  echo "target (client CPU/request at 16 <= 2x at 1): met (${growth}x)"
else
  echo "target (client CPU/request at 16 <= 2x at 1): MISSED (${growth}x)"
  missed=1
fi
[ "$missed" = 0 ] && echo "targets: met" || { echo "targets: MISSED"; exit 1; }
