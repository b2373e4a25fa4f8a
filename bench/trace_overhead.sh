#!/usr/bin/env bash
# What tracing costs (README "Tracing"; goals: at most 2 % of throughput at 32 streams with
# sampling 1.0, and a collector that is down changes no request's latency). Three servers on the
# same model: (off) tracing off, (on) --otlp-endpoint to a null receiver (bench/otlp_sink.mjs)
# with --otlp-sample-ratio 1, (down) --otlp-endpoint to a port where nothing listens. Measured one
# after the other in interleaved rounds off on down (docs/BENCHMARKING.md: ratios in one run, median
# of the per-round ratios with the range). Each run: bench/loadgen.mjs, N streams x T greedy
# tokens, ROUNDS requests per stream. Per round: aggregate tokens/s on/off (wall clock, noisy on
# a shared machine), the server process's CPU time per generated token on/off (/proc/PID/stat
# user+system: what tracing adds to the server's own work, whatever else runs), and the p99 of
# end-to-end latency, TTFT and inter-token gaps down/off.
#   [VOCAB=32000] [ROUNDS=2] bench/trace_overhead.sh BUILD_DIR MODEL [N=32] [T=64] [PAIRS=5]
set -euo pipefail
build=$1 model=$2 n=${3:-32} t=${4:-64} pairs=${5:-5}
rounds=${ROUNDS:-2}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT
node "$here/otlp_sink.mjs" --port-file "$tmp/sink.port" >"$tmp/sink.log" 2>&1 &
pids+=($!)
sink=$!
for _ in $(seq 100); do [ -s "$tmp/sink.port" ] && break; sleep 0.1; done
start_server() { # start_server NAME ARGS...: starts it, waits for readiness, sets PORT_<NAME>, PID_<NAME>
    local name=$1; shift
    "$build/tools/bitnet-server" --model "$model" --port 0 --max-seqs "$n" "$@" >"$tmp/$name.log" 2>&1 &
    local pid=$!
    pids+=("$pid")
    local port=""
    for _ in $(seq 600); do
        port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\).*/\1/p' "$tmp/$name.log" | head -1)
        [ -n "$port" ] && curl -sf "http://127.0.0.1:$port/health/ready" >/dev/null && break
        sleep 0.1
    done
    [ -n "$port" ] || { cat "$tmp/$name.log"; exit 1; }
    eval "PORT_$name=$port PID_$name=$pid"
}
start_server off
start_server on --otlp-endpoint "http://127.0.0.1:$(cat "$tmp/sink.port")" --otlp-sample-ratio 1
dead=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
start_server down --otlp-endpoint "http://127.0.0.1:$dead" --otlp-sample-ratio 1
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
vocab=${VOCAB:-32000} # prompt ids are drawn below it (the model's vocabulary size)
run() { # run NAME: one loadgen level; prints "tok/s cpu_ms_per_token e2e_p99 ttft_p99 itl_p99"
    local port_var=PORT_$1 pid_var=PID_$1
    local c0; c0=$(cpu_ticks "${!pid_var}")
    node "$here/loadgen.mjs" --port "${!port_var}" --concurrency "$n" --max-tokens "$t" \
        --rounds "$rounds" --vocab "$vocab" --warmup 0 --json "$tmp/$1.json" >/dev/null
    local c1; c1=$(cpu_ticks "${!pid_var}")
    node -e "const r=require('$tmp/$1.json')[0];if(r.ok!==r.requests)process.exit(1);
        console.log(r.tokens_per_s.toFixed(2),(($c1-$c0)/$(getconf CLK_TCK)*1000/r.tokens).toFixed(3),
        r.e2e_ms.p99.toFixed(1),r.ttft_ms.p99.toFixed(1),r.itl_ms.p99.toFixed(1))"
}
ratio() { node -e "console.log(($1/$2).toFixed(4))"; }
for s in off on down; do run "$s" >/dev/null; done # warm-up of all three
tps=() cpu=() e2e=() ttft=() itl=()
for i in $(seq 1 "$pairs"); do
    read -r a_tps a_cpu a_e2e a_ttft a_itl < <(run off)
    read -r b_tps b_cpu _ _ _ < <(run on)
    read -r _ _ d_e2e d_ttft d_itl < <(run down)
    tps+=("$(ratio "$b_tps" "$a_tps")") cpu+=("$(ratio "$b_cpu" "$a_cpu")")
    e2e+=("$(ratio "$d_e2e" "$a_e2e")") ttft+=("$(ratio "$d_ttft" "$a_ttft")") itl+=("$(ratio "$d_itl" "$a_itl")")
    echo "round $i: off $a_tps tok/s $a_cpu CPU ms/token p99 e2e/ttft/itl $a_e2e/$a_ttft/$a_itl ms;" \
         "on $b_tps tok/s $b_cpu CPU ms/token; down p99 $d_e2e/$d_ttft/$d_itl ms"
done
summary() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {printf "median %s (range %s-%s)", a[int((NR+1)/2)], a[1], a[NR]}'; }
echo "tokens/s on/off: $(summary "${tps[@]}")"
echo "CPU per token on/off: $(summary "${cpu[@]}")"
echo "p99 e2e down/off: $(summary "${e2e[@]}")"
echo "p99 TTFT down/off: $(summary "${ttft[@]}")"
echo "p99 inter-token down/off: $(summary "${itl[@]}")"
metric() { curl -s "http://127.0.0.1:$1/metrics" | sed -n "s/^$2 \(.*\)/\1/p"; }
echo "on: spans exported $(metric "$PORT_on" bitnet_trace_spans_exported_total), dropped $(metric "$PORT_on" bitnet_trace_spans_dropped_total);" \
     "down: exported $(metric "$PORT_down" bitnet_trace_spans_exported_total), dropped $(metric "$PORT_down" bitnet_trace_spans_dropped_total)"
