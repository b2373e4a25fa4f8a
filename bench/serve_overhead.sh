#!/usr/bin/env bash
# The server's overhead (docs/BENCHMARKING.md rules: ratios in one run, interleaved A B A B,
# median of the per-pair ratios with the range): the same workload, N streams x P-token prompts x
# T greedy tokens, (A) through HTTP (bench/loadgen.mjs against a running bitnet-server started with
# --max-seqs >= N) and (B) driven directly through model::step + sampler (bench_engine
# --workload). Prints each pair and the medians of two ratios: aggregate tokens/s (A/B, wall
# clock: at the mercy of a noisy machine) and CPU time per generated token (A/B: the server
# process's user+system time from /proc/SERVER_PID/stat, which the load generator's own CPU and
# other tenants do not enter). Overhead = 1 - tok/s ratio, or CPU ratio - 1.
#   [VOCAB=32000] [THREADS=2] bench/serve_overhead.sh BUILD_DIR MODEL PORT SERVER_PID \
#       [N=64] [P=16] [T=100] [PAIRS=5]
set -euo pipefail
build=$1 model=$2 port=$3 pid=$4 n=${5:-64} p=${6:-16} t=${7:-100} pairs=${8:-5}
cpu_ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
hz=$(getconf CLK_TCK)
here=$(cd "$(dirname "$0")" && pwd)
vocab=${VOCAB:-32000} # prompt ids are drawn below it (the model's vocabulary size)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
node "$here/loadgen.mjs" --port "$port" --concurrency 1 --max-tokens 8 --vocab "$vocab" >/dev/null
ratios=()
cpu_ratios=()
for i in $(seq 1 "$pairs"); do
    c0=$(cpu_ticks)
    node "$here/loadgen.mjs" --port "$port" --concurrency "$n" --max-tokens "$t" \
        --prompt-tokens "$p" --vocab "$vocab" --warmup 0 --json "$tmp/a.json" >/dev/null
    c1=$(cpu_ticks)
    a=$(node -e "console.log(require('$tmp/a.json')[0].tokens_per_s.toFixed(2))")
    a_tok=$(node -e "console.log(require('$tmp/a.json')[0].tokens)")
    a_cpu=$(node -e "console.log((($c1 - $c0) / $hz * 1000 / $a_tok).toFixed(3))")
    out=$("$build/bench/bench_engine" -m "$model" --threads "${THREADS:-2}" --kv-tokens 16384 \
        --workload "${n}x${p}x${t}" --workload-only --repeats 1)
    b=$(echo "$out" | sed -n 's/.*direct.*median \([0-9.]*\) tokens.*/\1/p')
    b_cpu=$(echo "$out" | sed -n 's/.*direct.*median \([0-9.]*\) CPU ms.*/\1/p')
    r=$(node -e "console.log(($a / $b).toFixed(4))")
    rc=$(node -e "console.log(($a_cpu / $b_cpu).toFixed(4))")
    ratios+=("$r")
    cpu_ratios+=("$rc")
    echo "pair $i: http $a tok/s ($a_cpu CPU ms/token), direct $b tok/s ($b_cpu CPU ms/token):" \
        "tok/s http/direct $r, CPU/token http/direct $rc"
done
summary() {
    sort -n | awk -v what="$1" '{v[NR]=$1} END {m=v[int((NR+1)/2)];
        printf "%s: median http/direct %.4f, range %.4f .. %.4f over %d pairs\n", what, m, v[1], v[NR], NR}'
}
printf '%s\n' "${ratios[@]}" | summary "aggregate tokens/s (overhead = 1 - ratio)"
printf '%s\n' "${cpu_ratios[@]}" | summary "CPU time per token (overhead = ratio - 1)"
