# Sourced by the RPC benches: the tiny synthetic model and a `stagebench rpc-server` on a free
# 127.0.0.1 port, started as docs/run.md tells a user to (stopped and cleaned up on exit).
#
#   start_tiny_rpc_server THREADS   sets work (a temporary directory), model (the tiny model),
#                                   port and rpc_pid; exits 2 when it cannot start.
. bench/lib/deadline.sh
SB=${STAGEBENCH:-build/bin/stagebench}
[ -x "$SB" ] || { echo "build first: make build (or set STAGEBENCH)" >&2; exit 2; }
work=$(mktemp -d)
model="$work/model.gguf"
rpc_pid=""
cleanup() { stop_bg "$rpc_pid"; rm -rf "$work"; }
trap cleanup EXIT

start_tiny_rpc_server() {
  dl "$SB" synth --preset tiny -o "$model" >/dev/null 2>&1 || { echo "synth failed" >&2; exit 2; }
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$SB" rpc-server -p "$port" -t "$1" >"$work/rpc.log" 2>&1 &
  rpc_pid=$!
  for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    kill -0 "$rpc_pid" 2>/dev/null || { tail -3 "$work/rpc.log" >&2; exit 2; }
    sleep 0.1
  done
  echo "the rpc-server did not listen within 10 s" >&2
  exit 2
}
