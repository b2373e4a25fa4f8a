#!/usr/bin/env bash
# The GPU path at scale (issue 53), checked in one go on a lent GPU machine, within 8 minutes:
#   1. the device: nvidia-smi's name, memory and clocks;
#   2. the gpu suite (test_gpu: every kernel against the CPU, the engine against the CPU engine,
#      graph replays against exact steps, the device sampler against model::sampler);
#   3. compute-sanitizer racecheck and memcheck over the suite's kernel cases;
#   4. bench_cuda (each kernel's time and bandwidth fraction on the 2B-4T shapes);
#   5. the 2B-4T model (bitnet-model make --shape 2b4t), unless --model names one;
#   6. bench_engine --device cuda:0: single-stream decode, 8/32/64/128 sequences, prefill 512,
#      launches per decode step, device memory;
#   7. bitnet-server on cuda:0 under 100 and then 128 concurrent 100-token streams (loadgen.mjs,
#      ignore_eos: every stream must get exactly 100 tokens): TTFT, ITL and end-to-end
#      percentiles, errors, the peak host RSS and device memory of the server;
#   8. the goals against those figures (a miss is a figure to record, not a failure).
# Every step has a time limit (seconds, overridable by environment: T_TESTS, T_SANITIZER,
# T_BENCH_CUDA, T_MODEL, T_BENCH_ENGINE, T_SERVER, T_LOAD) that together fit 8 minutes; a step
# that fails or runs out of time is reported and the rest still run. Exit status: 0 when every
# step ran, 1 otherwise.
#
# --dry-run: the same steps on the simulated grid (sim:0) and the tiny model, with small sizes,
# in seconds: CI runs it (ctest -R gpu_check), so the script cannot rot before a GPU is lent.
# The device-only steps (nvidia-smi, compute-sanitizer) say they are skipped.
#
# Usage: bench/gpu_check.sh [--dry-run] [--build DIR] [--model FILE] [--out DIR]
#   --build: a build tree with bitnet-server, bitnet-model, bench_engine, bench_cuda and test_gpu
#            (default build/release); --out: where the logs and load.json go (default a new
#            directory under /tmp, printed at the start)
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
dry=0
build="$root/build/release"
model=""
out=""
while [ $# -gt 0 ]; do
    case "$1" in
    --dry-run) dry=1 ;;
    --build) build=$2; shift ;;
    --model) model=$2; shift ;;
    --out) out=$2; shift ;;
    *) echo "gpu_check: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
made_out=0
if [ -z "$out" ]; then
    out=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")
    made_out=1
fi
mkdir -p "$out"
failures=0
server_pid=""
sampler_pid=""
cleanup() {
    [ -n "$sampler_pid" ] && kill "$sampler_pid" 2>/dev/null
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    return 0
}
# A dry run's own output directory goes with it (CI runs it every time); a real run's stays.
trap 'cleanup; [ "$dry" = 1 ] && [ "$made_out" = 1 ] && rm -rf "$out"' EXIT

if [ "$dry" = 1 ]; then
    device=sim:0 shape=tiny vocab=512 conc=4,6 tokens=8 decode=2 batches=2 prefill=8 kv=512
    bench_repeats=1 cuda_iterations=1 kv_bytes=16777216
else
    device=cuda:0 shape=2b4t vocab=128256 conc=100,128 tokens=100 decode=64 batches=8,32,64,128
    prefill=512 kv=16384 bench_repeats=3 cuda_iterations=200 kv_bytes=2147483648
fi
echo "gpu_check: $([ "$dry" = 1 ] && echo "dry run on sim:0" || echo "on $device"), build $build, output in $out"

# step NAME SECONDS CMD...: runs CMD under its time limit, output to NAME.log and here.
step() {
    local name=$1 limit=$2
    shift 2
    local t0=$SECONDS
    echo "== $name (limit ${limit} s): $*"
    timeout --kill-after=5 "$limit" "$@" >"$out/$name.log" 2>&1
    local rc=$?
    cat "$out/$name.log"
    if [ $rc -ne 0 ]; then
        failures=$((failures + 1))
        echo "== $name: FAILED (exit $rc$([ $rc -eq 124 ] && echo ', out of time')) after $((SECONDS - t0)) s"
    else
        echo "== $name: ok in $((SECONDS - t0)) s"
    fi
    return $rc
}
skip() { echo "== $1: skipped ($2)"; }

for bin in tools/bitnet-server tools/bitnet-model bench/bench_engine bench/bench_cuda; do
    if [ ! -x "$build/$bin" ]; then
        echo "gpu_check: $build/$bin is missing: build it first" >&2
        exit 1
    fi
done

# 1. The device.
if [ "$dry" = 1 ]; then
    skip device "dry run: no GPU"
else
    step device 10 nvidia-smi --query-gpu=name,memory.total,clocks.max.memory,driver_version \
        --format=csv
fi

# 2-3. The gpu suite, then under compute-sanitizer (the kernel cases: the engine's cases under
# memcheck would take minutes).
if [ -x "$build/tests/test_gpu" ]; then
    step gpu_suite "${T_TESTS:-60}" "$build/tests/test_gpu"
    if [ "$dry" = 1 ]; then
        skip sanitizer "dry run: compute-sanitizer needs a device"
    elif ! command -v compute-sanitizer >/dev/null; then
        skip sanitizer "compute-sanitizer is not on PATH"
        failures=$((failures + 1))
    else
        step racecheck "${T_SANITIZER:-60}" compute-sanitizer --tool racecheck \
            "$build/tests/test_gpu" -tc="gpu*"
        step memcheck "${T_SANITIZER:-60}" compute-sanitizer --tool memcheck --leak-check full \
            "$build/tests/test_gpu" -tc="gpu*"
    fi
else
    skip gpu_suite "this build has no CUDA kernels (no test_gpu)"
    [ "$dry" = 1 ] || failures=$((failures + 1))
fi

# 4. The kernels' own times (a skip line without a device).
step bench_cuda "${T_BENCH_CUDA:-45}" "$build/bench/bench_cuda" --iterations "$cuda_iterations"

# 5. The model.
if [ -z "$model" ]; then
    model="$out/$shape.gguf"
    step model "${T_MODEL:-90}" "$build/tools/bitnet-model" make --shape "$shape" --seed 1 \
        -o "$model"
fi

# 6. The engine alone.
step bench_engine "${T_BENCH_ENGINE:-120}" "$build/bench/bench_engine" -m "$model" \
    --device "$device" --decode "$decode" --batch "$batches" --prefill "$prefill" \
    --kv-tokens "$kv" --repeats "$bench_repeats"

# 7. The server under load: started on an ephemeral port, ready on /health/ready.
echo "== server (limit ${T_SERVER:-60} s to ready)"
"$build/tools/bitnet-server" --model "$model" --port 0 --devices "$device" \
    --max-batch-seqs 128 --max-batch-tokens 512 --decoding-batch-tokens 512 \
    --kv-budget-bytes "$kv_bytes" --speculative off --max-waiting-requests 512 \
    >"$out/server.log" 2>&1 &
server_pid=$!
port=""
for _ in $(seq 1 $((${T_SERVER:-60} * 10))); do
    port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$out/server.log" | head -n 1)
    if [ -n "$port" ] && curl -sf "http://127.0.0.1:$port/health/ready" >/dev/null 2>&1; then
        break
    fi
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
done
if [ -z "$port" ] || ! curl -sf "http://127.0.0.1:$port/health/ready" >/dev/null 2>&1; then
    echo "== server: FAILED (not ready)"
    tail -n 30 "$out/server.log"
    failures=$((failures + 1))
else
    echo "== server: ready on port $port, pid $server_pid"
    grep -E "device |devices |serving" "$out/server.log" | head -n 5
    if [ "$dry" = 0 ]; then # the device memory's peak, sampled while the load runs
        (while kill -0 "$server_pid" 2>/dev/null; do
            nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0
            sleep 0.2
        done >"$out/device_memory.log" 2>/dev/null) &
        sampler_pid=$!
    fi
    step load "${T_LOAD:-90}" node "$here/loadgen.mjs" --port "$port" --concurrency "$conc" \
        --max-tokens "$tokens" --prompt-tokens 16 --vocab "$vocab" --ignore-eos 1 --warmup 1 \
        --json "$out/load.json"
    # In the dry run a failed stream is the script's failure (on a device it is a figure).
    if [ "$dry" = 1 ] && ! node -e 'process.exit(require(process.argv[1]).every((l) => l.ok === l.requests) ? 0 : 1)' \
        "$out/load.json" 2>/dev/null; then
        echo "== load: FAILED (streams with errors in a dry run)"
        failures=$((failures + 1))
    fi
    host_peak_kib=$(awk '/VmHWM/ {print $2}' "/proc/$server_pid/status" 2>/dev/null)
    echo "server peak host RSS: $((${host_peak_kib:-0} / 1024)) MiB"
    if [ -s "$out/device_memory.log" ]; then
        device_peak_mib=$(sort -n "$out/device_memory.log" | tail -n 1)
        echo "server peak device memory (nvidia-smi, whole device): $device_peak_mib MiB"
    fi
fi
cleanup
server_pid=""
sampler_pid=""

# 8. The goals (figures from the logs above).
echo "== goals"
figure() { sed -n "$1" "$out/bench_engine.log" 2>/dev/null | head -n 1; }
single=$(figure 's/^single-stream decode: \([0-9.]*\) tokens.*/\1/p')
agg64=$(figure 's/^aggregate decode, 64 sequences: \([0-9.]*\) tokens.*/\1/p')
pf=$(figure 's/^prefill, [0-9]*-token prompt: \([0-9.]*\) tokens.*/\1/p')
echo "single-stream decode: ${single:-?} tok/s (goal >= 1000)"
echo "64 sequences: ${agg64:-?} tok/s (goal >= 15000)"
echo "prefill $prefill: ${pf:-?} tok/s (goal at 512: >= 30000)"
if [ -s "$out/load.json" ]; then
    node -e '
        const levels = require(process.argv[1]);
        for (const l of levels)
            console.log(`${l.concurrency} streams: ok ${l.ok}/${l.requests}, exactly ${process.argv[2]} tokens ${l.exact}, ` +
                `e2e p90 ${l.e2e_ms.p90.toFixed(0)} ms, errors ${JSON.stringify(l.errors)}` +
                (l.concurrency === 100 ? " (goal: e2e p90 < 2000 ms)" : " (goal: zero errors)"));
    ' "$out/load.json" "$tokens"
fi
echo "peak host RSS + device memory: ${host_peak_kib:+$((host_peak_kib / 1024))} MiB + ${device_peak_mib:-?} MiB (goal < 8192 MiB)"
echo "gpu_check: $failures step(s) failed; logs in $out"
[ "$failures" -eq 0 ]
