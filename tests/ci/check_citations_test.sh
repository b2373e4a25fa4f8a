#!/usr/bin/env bash
# Shows that tools/ci/check-citations.sh fails on a dangling citation and only on one. In a small
# tree of its own (a README, two numbered documents in docs/, tools/ci/), a file of valid citations must
# pass: documents found beside the citing file or at the root, sections that are headings of the
# cited document, a section sign continued on the next line of a comment, a bare section sign
# inside a .md file (its own heading), a path built from a variable, a URL, and the one external
# citation the check allows. Then one dangling citation per kind is planted, each in a file of its
# own, and the check must exit 1 naming every file:line with its reason and nothing else: a
# document that does not exist (in a C++ comment, a shell comment and a Markdown link), a path into
# the team's notes outside the clone, "spec §", a section the cited document lacks, a section sign
# with no document before it, and a bare section sign of a .md file that has no such heading. One
# plant alone must fail too, and a directory that is not a source tree is a usage error (exit 2),
# so a wrong ROOT never reads as "clean".
# (The real tree is checked by ctest citations_check.)
#
# usage: check_citations_test.sh CHECK_SCRIPT
set -euo pipefail

check="$1"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

mkdir -p "$tmp/tree/tools/ci" "$tmp/tree/model/engine" "$tmp/tree/deploy/ci" "$tmp/tree/bench"
mkdir -p "$tmp/tree/docs"
printf '# map\n\n## 1. Rooms\n\n## 2. Actors\n' >"$tmp/tree/docs/ARCHITECTURE.md"
printf '# format\n\n## 2. Types\n\n### 2.2 I2_S\n\n## 3. Forward\n\n### 3.6 Rounding\n' >"$tmp/tree/docs/GGUF-FORMAT.md"
printf '# bitnet-serve\n\nSee `docs/ARCHITECTURE.md`.\n' >"$tmp/tree/README.md"
printf '# bench\n\n## 1. Figures\n\nSee §1 and `RESULTS.md`.\n' >"$tmp/tree/bench/README.md"
printf '# results\n' >"$tmp/tree/bench/RESULTS.md"
cat >"$tmp/tree/model/engine/valid.hpp" <<'EOF'
// The rooms (docs/ARCHITECTURE.md §1, §2); the rounding points (docs/GGUF-FORMAT.md §3.6), and
// the I2_S layout of the same document, continued on the next line of the comment: §2.2.
// The root README (README.md), one found beside the citing file from bench/ (../../bench/RESULTS.md),
// a path built from a variable ($dir/notes.md, ${out}/report.md) and a URL
// (https://github.com/microsoft/BitNet/blob/main/README.md) are fine.
EOF
printf '# HTTP-API.md is the team contract (allowed for this file only)\n' >"$tmp/tree/deploy/ci/check-metric-names.py"

run_check() { # sets rc and out
    set +e
    out="$(bash "$check" "$tmp/tree" 2>&1)"
    rc=$?
    set -e
}

run_check
[ "$rc" -eq 0 ] || fail "the tree of valid citations should pass, got exit $rc: $out"

# plant FILE LINE_TEXT WHAT: a file of its own whose second line is LINE_TEXT; the check must print
# "FILE:2: WHAT".
planted=()
expected=()
plant() {
    local file="$1" text="$2" what="$3"
    mkdir -p "$(dirname "$tmp/tree/$file")"
    printf '%s\n%s\n' "first line" "$text" >"$tmp/tree/$file"
    planted+=("$tmp/tree/$file")
    expected+=("$file:2: $what")
}

# One dangling citation alone fails the check.
plant model/engine/one.hpp '// the Errors section (HTTP-API.md)' 'HTTP-API.md  [no such document in the repository]'
run_check
if [ "$rc" -ne 1 ] || ! grep -qF "${expected[0]}" <<<"$out"; then
    fail "a single dangling citation: expected exit 1 and '${expected[0]}', got $rc: $out"
fi
rm -f "${planted[@]}"
planted=()
expected=()

plant model/engine/p0.hpp '// the Errors section (HTTP-API.md)' 'HTTP-API.md  [no such document in the repository]'
plant model/engine/p1.cpp '// see ../shared/design/ARCHITECTURE.md' '../shared/design/ARCHITECTURE.md  [no such document in the repository]'
plant model/engine/p2.cpp '// the forward pass (spec §3.4)' 'spec §  [a section of a specification this repository does not ship'
plant model/engine/p3.cpp '// the layout (docs/GGUF-FORMAT.md §9.9)' 'docs/GGUF-FORMAT.md §9.9  [no heading numbered 9.9 in docs/GGUF-FORMAT.md]'
plant model/engine/p4.cpp '// rounded to F16 here (§3.6)' '§3.6  [a section sign with no document named on its line or the three before]'
plant bench/p5.sh '# interleaved A B A B (BENCHMARKING.md)' 'BENCHMARKING.md  [no such document in the repository]'
plant bench/p6.md 'See [the notes](TOOLCHAIN-NOTES.md).' 'TOOLCHAIN-NOTES.md  [no such document in the repository]'
plant bench/p7.md 'As §4 says.' '@self §4  [no heading numbered 4 in bench/p7.md]'
plant deploy/ci/p8.py '# the contract (HTTP-API.md), allowed only in check-metric-names.py' 'HTTP-API.md  [no such document in the repository]'

run_check
rm -f "${planted[@]}"
if [ "$rc" -ne 1 ]; then
    fail "${#planted[@]} dangling citations: expected exit 1, got $rc: $out"
fi
for line in "${expected[@]}"; do
    grep -qF "$line" <<<"$out" || fail "the output does not name '$line': $out"
done
found="$(grep -cE '^(model/engine|bench|deploy/ci)/p[0-9]' <<<"$out" || true)"
[ "$found" -eq "${#planted[@]}" ] ||
    fail "expected ${#planted[@]} dangling citations named, the check named $found: $out"

run_check
[ "$rc" -eq 0 ] || fail "the tree should pass again once the plants are gone, got exit $rc: $out"

set +e
bash "$check" "$tmp/no-such-dir" >/dev/null 2>&1
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "a missing root should be exit 2, got $rc"

if [ "$failures" -gt 0 ]; then
    echo "$failures check(s) failed" >&2
    exit 1
fi
echo "check-citations fails on every planted dangling citation and passes valid ones"
