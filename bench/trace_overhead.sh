#!/usr/bin/env bash
# What tracing costs (README "Tracing", issue goal: at most 2 % of throughput at 32 streams with
# sampling 1.0). Two servers on the same model, (A) tracing off and (B) --otlp-endpoint to a null
# receiver (bench/otlp_sink.mjs) with --otlp-sample-ratio 1, measured one after the other in
# interleaved pairs A B A B (BENCHMARKING.md: ratios in one run, median of the per-pair ratios
# with the range). Each run: bench/loadgen.mjs, N streams x T greedy tokens. Two figures per
# pair: aggregate tokens/s B/A (wall clock, noisy on a shared machine) and the server process's
# CPU time per generated token B/A (/proc/PID/stat user+system: what tracing adds to the server's
# own work, whatever else runs). Overhead = 1 - tok/s ratio, or CPU ratio - 1.
#   [VOCAB=32000] bench/trace_overhead.sh BUILD_DIR MODEL [N=32] [T=64] [PAIRS=5]
set -euo pipefail
build=$1 model=$2 n=${3:-32} t=${4:-64} pairs=${5:-5}
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
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
vocab=${VOCAB:-32000} # prompt ids are drawn below it (the model's vocabulary size)
run() { # run NAME: one loadgen level; prints "tok/s cpu_ms_per_token"
    local port_var=PORT_$1 pid_var=PID_$1
    local c0; c0=$(cpu_ticks "${!pid_var}")
    node "$here/loadgen.mjs" --port "${!port_var}" --concurrency "$n" --max-tokens "$t" \
        --vocab "$vocab" --warmup 0 --json "$tmp/$1.json" >/dev/null
    local c1; c1=$(cpu_ticks "${!pid_var}")
    node -e "const r=require('$tmp/$1.json')[0];console.log(r.tokens_per_s.toFixed(2),
        (($c1-$c0)/$(getconf CLK_TCK)*1000/r.tokens).toFixed(3))"
}
run off >/dev/null # warm-up of both
run on >/dev/null
ratios=() cpu=()
for i in $(seq 1 "$pairs"); do
    read -r a_tps a_cpu < <(run off)
    read -r b_tps b_cpu < <(run on)
    r=$(node -e "console.log(($b_tps/$a_tps).toFixed(4))")
    c=$(node -e "console.log(($b_cpu/$a_cpu).toFixed(4))")
    ratios+=("$r") cpu+=("$c")
    echo "pair $i: off $a_tps tok/s ($a_cpu CPU ms/token), on $b_tps tok/s ($b_cpu CPU ms/token): tok/s on/off $r, CPU/token on/off $c"
done
summary() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {printf "median %s (range %s-%s)", a[int((NR+1)/2)], a[1], a[NR]}'; }
echo "tokens/s on/off: $(summary "${ratios[@]}")"
echo "CPU per token on/off: $(summary "${cpu[@]}")"
dropped=$(curl -s "http://127.0.0.1:$PORT_on/metrics" | sed -n 's/^bitnet_trace_spans_dropped_total \(.*\)/\1/p')
exported=$(curl -s "http://127.0.0.1:$PORT_on/metrics" | sed -n 's/^bitnet_trace_spans_exported_total \(.*\)/\1/p')
echo "spans exported $exported, dropped $dropped"
