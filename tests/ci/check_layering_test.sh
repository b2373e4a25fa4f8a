#!/usr/bin/env bash
# Shows that tools/ci/check-layering.sh fails on a forbidden include: copies the rooms of the real
# tree into a temporary directory, checks the copy passes, then plants one bad include per rule
# (each in a new file of its own, third line) and expects exit 1 naming every file:line with its
# rule, and no other violation. The plants are checked in one run (each file is judged alone, so
# one run says what one run per plant would, in a thirtieth of the time), after one run with a
# single plant shows that one violation alone fails the check. A commented-out include must not
# count, and a directory that is not a source tree is a usage error (exit 2), so a wrong ROOT can
# never read as "clean".
#
# usage: check_layering_test.sh CHECK_SCRIPT SOURCE_ROOT
set -euo pipefail

check="$1"
src="$2"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

for room in common kernels model messages actors http conf; do
    [ -d "$src/$room" ] && cp -r "$src/$room" "$tmp/"
done

run_check() { # sets rc and out
    set +e
    out="$(bash "$check" "$tmp" 2>&1)"
    rc=$?
    set -e
}

run_check
[ "$rc" -eq 0 ] || fail "the unmodified copy should pass, got exit $rc: $out"

# plant ROOM INCLUDE_TARGET RULE_TEXT: a file of its own in ROOM whose third line includes
# INCLUDE_TARGET; the line the check must print for it is remembered.
planted=()
expected=()
plant() {
    local room="$1" target="$2" rule="$3"
    local name="planted_violation_${#planted[@]}.hpp"
    printf '#pragma once\n// planted by check_layering_test.sh\n#include %s\n' "$target" >"$tmp/$room/$name"
    planted+=("$tmp/$room/$name")
    expected+=("$room/$name:3: #include $target  [$rule]")
}

# One violation alone fails the check.
plant kernels '"model/engine/engine.hpp"' 'kernels/ may include common/ only of ours'
run_check
if [ "$rc" -ne 1 ] || ! grep -qF "${expected[0]}" <<<"$out"; then
    fail "a single planted violation: expected exit 1 and '${expected[0]}', got $rc: $out"
fi
rm -f "${planted[@]}"
planted=()
expected=()

plant common '"model/engine/engine.hpp"' 'common/ must not include another room (every room builds on it)'
plant kernels '"model/engine/engine.hpp"' 'kernels/ may include common/ only of ours'
plant kernels '"messages/types.hpp"' 'kernels/ may include common/ only of ours'
plant kernels '<caf/all.hpp>' 'kernels/ must not include CAF, Beast or Asio'
plant model '"actors/batcher/batcher.hpp"' 'model/ must not include actors/, http/ or messages/'
plant model '"messages/types.hpp"' 'model/ must not include actors/, http/ or messages/'
plant model '<caf/actor_system.hpp>' 'model/ must not include CAF, Beast or Asio'
plant model '<boost/beast/http.hpp>' 'model/ must not include CAF, Beast or Asio'
plant model '<boost/asio/post.hpp>' 'model/ must not include CAF, Beast or Asio'
plant model '"conf/server_config.hpp"' 'only tools/ may include conf/ or tools/'
plant messages '"tools/model_synth.hpp"' 'only tools/ may include conf/ or tools/'
plant conf '"model/gguf/gguf_reader.hpp"' 'conf/ may include common/ only of ours'
plant http '"actors/batcher/batcher.hpp"' 'http/ must not include actors/ (it talks to them through messages/)'
plant model/gguf '"model/tokenizer/tokenizer.hpp"' 'model/gguf/ (the file format) must not include the model sub-rooms above it'
plant model/tokenizer '"model/engine/engine.hpp"' 'model/tokenizer/ may include model/gguf/ and model/jinja/ only of the model sub-rooms'
plant model/jinja '"model/tokenizer/tokenizer.hpp"' 'model/jinja/ must not include the other model sub-rooms'
plant model/sampling '"model/tokenizer/tokenizer.hpp"' 'model/sampling/ must not include the other model sub-rooms'
plant http '"model/engine/engine.hpp"' 'http/ must not include model/ or kernels/ (it talks to messages/)'
plant http '<kernels/rope.hpp>' 'http/ must not include model/ or kernels/ (it talks to messages/)'
plant actors '"http/routes/server.hpp"' 'actors/ must not include http/'
plant messages '"actors/batcher/batcher.hpp"' 'messages/ must not include actors/ or http/'
plant messages '"http/routes/server.hpp"' 'messages/ must not include actors/ or http/'

# Sub-rooms: each is its own library too, so the compiler refuses these as well; the check names
# the rule before a build.
plant actors '"actors/batcher/batcher.hpp"' "actors/'s shared files must not include its sub-rooms"
plant actors/cluster '"actors/batcher/batcher.hpp"' "actors/cluster/ may include actors/'s shared files only of the actors"
plant actors/executor '"actors/supervisor/supervisor.hpp"' "actors/executor/ may include actors/'s shared files only of the actors"
plant actors/batcher '"actors/admission/admission.hpp"' 'actors/batcher/ may include actors/cluster/ (the peer gate) only of the actor sub-rooms'
plant actors/supervisor '"actors/admission/admission.hpp"' 'actors/supervisor/ must not include actors/admission/'
plant actors/batcher '<caf/io/middleman.hpp>' 'only actors/cluster/ may include CAF remoting (caf/io, caf/openssl)'
plant actors '<caf/openssl/manager.hpp>' 'only actors/cluster/ may include CAF remoting (caf/io, caf/openssl)'
plant http/observe '"http/api_json.hpp"' 'http/observe/ must not include the rest of http/'
plant http '"http/transport/connection.hpp"' "http/'s shared files may include http/observe/ only of its sub-rooms"
plant http/openai '"http/anthropic/api_anthropic.hpp"' 'http/openai/ (an API family) must not include another family, transport/ or routes/'
plant http/anthropic '"http/openai/echo_render.hpp"' 'http/anthropic/ (an API family) must not include another family, transport/ or routes/'
plant http/responses '"http/routes/session.hpp"' 'http/responses/ (an API family) must not include another family, transport/ or routes/'
plant http/transport '"http/routes/session.hpp"' 'http/transport/ must not include the API families or routes/'
plant model/engine/weights '"model/engine/engine.hpp"' 'model/engine/weights/ (the ternary layouts) must not include the rest of the engine'
plant model/engine '"model/engine/cpu/cpu_engine.hpp"' "model/engine/'s shared files must not include an engine or placement/"
plant model/engine/cpu '"model/engine/cuda/cuda_engine.hpp"' 'model/engine/cpu/ must not include the CUDA engine or placement/'
plant model/engine/cuda '"model/engine/cpu/cpu_engine.hpp"' 'model/engine/cuda/ must not include the CPU engine or placement/'

run_check
rm -f "${planted[@]}"
if [ "$rc" -ne 1 ]; then
    fail "${#planted[@]} planted violations: expected exit 1, got $rc: $out"
fi
for line in "${expected[@]}"; do
    grep -qF "$line" <<<"$out" || fail "the output does not name '$line': $out"
done
found="$(grep -c 'planted_violation_' <<<"$out" || true)"
[ "$found" -eq "${#planted[@]}" ] ||
    fail "expected ${#planted[@]} violations named, the check named $found: $out"

# Allowed edges stay allowed, and only real directives count.
printf '#pragma once\n#include "actors/cluster/peer_gate.hpp"\n#include "actors/trace_spans.hpp"\n' >"$tmp/actors/batcher/planted_ok.hpp"
printf '#pragma once\n#include "http/anthropic/api_anthropic.hpp"\n#include "http/transport/connection.hpp"\n' >"$tmp/http/routes/planted_ok.hpp"
run_check
rm -f "$tmp/actors/batcher/planted_ok.hpp" "$tmp/http/routes/planted_ok.hpp"
[ "$rc" -eq 0 ] || fail "batcher -> cluster and routes -> a family and transport should pass, got $rc: $out"

printf '#pragma once\n#include "kernels/rope.hpp"\n// #include "http/routes/server.hpp"\n' >"$tmp/model/planted_ok.hpp"
run_check
rm -f "$tmp/model/planted_ok.hpp"
[ "$rc" -eq 0 ] || fail "model -> kernels and a commented include should pass, got $rc: $out"

set +e
bash "$check" "$tmp/no-such-dir" >/dev/null 2>&1
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "a missing root should be exit 2, got $rc"

if [ "$failures" -gt 0 ]; then
    echo "$failures check(s) failed" >&2
    exit 1
fi
echo "check-layering fails on every planted violation and passes the clean tree"
