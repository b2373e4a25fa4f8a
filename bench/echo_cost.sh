#!/usr/bin/env bash
# What prompt logprobs cost (completions `echo`): the same P-token prompt (random ids below VOCAB,
# the same ids every time) run (A) as a plain request, max_tokens 1 (prefill and one sample), and
# (B) as an echo request, max_tokens 0 with logprobs 1 (prefill with every token's logits row and
# the scoring), interleaved A B A B (docs/BENCHMARKING.md). Per pair: the server's prefill time from
# Server-Timing and the server process's CPU time (user+system from /proc/SERVER_PID/stat), then
# the medians of the B/A ratios. Start the server with the model first, e.g.
#   build/release/tools/bitnet-server --model /tmp/2b4t.gguf --port 8080 --threads 2 &
#   [VOCAB=128256] bench/echo_cost.sh PORT SERVER_PID [P=256] [PAIRS=5]
set -euo pipefail
port=$1 pid=$2 p=${3:-256} pairs=${4:-5}
vocab=${VOCAB:-128256}
hz=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
ids=$(python3 -c "import random; r=random.Random(15); print([r.randrange(1, $vocab) for _ in range($p)])")
plain="{\"prompt\":$ids,\"max_tokens\":1,\"temperature\":0}"
echo_body="{\"prompt\":$ids,\"max_tokens\":0,\"logprobs\":1,\"echo\":true}"
# One request: prints "prefill_ms cpu_ms".
run() {
    local c0 c1 prefill
    c0=$(cpu_ticks)
    prefill=$(curl -s -D - -o /dev/null -H 'Content-Type: application/json' \
        "http://127.0.0.1:$port/v1/completions" -d "$1" |
        tr -d '\r' | sed -n 's/^[Ss]erver-[Tt]iming:.*prefill;dur=\([0-9.]*\).*/\1/p')
    c1=$(cpu_ticks)
    echo "$prefill $(((c1 - c0) * 1000 / hz))"
}
run "$plain" >/dev/null # warm-up (page cache, kernel choice)
ratios_t=() ratios_c=()
for i in $(seq 1 "$pairs"); do
    read -r a_t a_c <<<"$(run "$plain")"
    read -r b_t b_c <<<"$(run "$echo_body")"
    rt=$(python3 -c "print(f'{$b_t / $a_t:.3f}')")
    rc=$(python3 -c "print(f'{$b_c / max($a_c, 1):.3f}')")
    ratios_t+=("$rt") ratios_c+=("$rc")
    echo "pair $i: plain prefill ${a_t} ms cpu ${a_c} ms | echo prefill ${b_t} ms cpu ${b_c} ms | ratio prefill $rt cpu $rc"
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}'; }
echo "P=$p pairs=$pairs: median echo/plain prefill $(median "${ratios_t[@]}") (range $(printf '%s\n' "${ratios_t[@]}" | sort -n | head -1)..$(printf '%s\n' "${ratios_t[@]}" | sort -n | tail -1)), cpu $(median "${ratios_c[@]}")"
