#!/usr/bin/env bash
# Shows that the architecture map and the layering check say the same thing. The "never" column of
# the rooms table in docs/ARCHITECTURE.md §1 (one code span per include prefix a room may not use)
# must equal what tools/ci/check-layering.sh refuses (its rules, printed by --print-rules, each
# pattern expanded into the include prefixes it matches): the two are read as sets of
# "room -> prefix" pairs and any pair on one side only fails the test, named. Every folder of a room
# (one with a CMakeLists.txt under the rooms) needs a row, and every row names a folder that exists.
#
# Then it proves the comparison is not vacuous, on copies: a rule added to the script only, a
# prefix added to the map only, a row dropped from the map, a rule whose pattern this test cannot
# read, a room folder without a row and a map without its table must each fail.
#
# usage: layering_map_test.sh CHECK_SCRIPT MAP SOURCE_ROOT
set -euo pipefail

check="$1"
map="$2"
src="$3"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# expand PATTERN: the pattern with each (a|b|c) group replaced by each alternative, one per line.
group_re='^([^()]*)\(([^()]*)\)(.*)$'
expand() {
    local p="$1"
    if [[ "$p" =~ $group_re ]]; then
        local pre="${BASH_REMATCH[1]}" alts="${BASH_REMATCH[2]}" post="${BASH_REMATCH[3]}" a
        local parts=()
        IFS='|' read -ra parts <<<"$alts"
        for a in "${parts[@]}"; do expand "$pre$a$post"; done
    else
        printf '%s\n' "$p"
    fi
}

# script_pairs SCRIPT: "room -> prefix" for every room and prefix a rule names. A pattern that
# does not reduce to plain prefixes is an error (exit 2): a new kind of rule needs this test taught
# to read it, never a silent pass.
prefix_re='^[a-z_]+(/[a-z_*]+)*(/|\.hpp)?$' # model/, actors/*/, model/engine/*.hpp, boost/beast
script_pairs() {
    local rules rooms pattern what room target room_list
    rules="$(bash "$1" --print-rules)" || { echo "cannot run $1 --print-rules" >&2; return 2; }
    while IFS=';' read -r rooms pattern what; do
        [ -n "$rooms" ] || continue
        while IFS= read -r target; do
            # [<"] or < opens an include; [a-z_]+\.hpp is any header, [a-z_]+/ any folder.
            target="$(sed -E 's/^\[<"\]//; s/^<//; s/\[a-z_\]\+\\\.hpp/*.hpp/g; s/\[a-z_\]\+\//*\//g' <<<"$target")"
            if ! [[ "$target" =~ $prefix_re ]]; then
                echo "cannot read the rule '$rooms;$pattern' (left '$target')" >&2
                return 2
            fi
            read -ra room_list <<<"$rooms" # split on blanks, never glob "FOLDER/*"
            for room in "${room_list[@]}"; do
                echo "${room%/} -> $target"
            done
        done < <(expand "$pattern")
    done <<<"$rules"
}

# map_rows MAP: the rooms table's rows (the table after the "rooms:" marker comment).
map_rows() {
    awk '/^<!-- rooms:/ { on = 1; next } on && /^\|/ { print; seen = 1; next } on && seen { exit }' "$1"
}

# map_pairs MAP: "room -> prefix" from each row's first code span and its last cell's code spans.
map_pairs() {
    local rows row room last
    rows="$(map_rows "$1")"
    [ -n "$rows" ] || { echo "no rooms table (a '<!-- rooms:' comment, then the table) in $1" >&2; return 2; }
    while IFS= read -r row; do
        [[ "$row" =~ ^\|[[:space:]]*\`([^\`]+)\` ]] || continue # the header and the |---| line
        room="${BASH_REMATCH[1]%/}"
        last="${row%|}"
        last="${last##*|}"
        grep -oE '`[^`]+`' <<<"$last" | tr -d '`' | sed "s|^|$room -> |" || true
    done <<<"$rows"
}

# map_rooms MAP: the room of every row.
map_rooms() {
    map_rows "$1" | sed -nE 's/^\|[[:space:]]*`([^`]+)`.*/\1/p' | sed 's|/$||'
}

# compare SCRIPT MAP ROOT: prints every disagreement; exit 0 when there is none.
compare() {
    local s m rc=0
    s="$(script_pairs "$1" | sort -u)" || return 2
    m="$(map_pairs "$2" | sort -u)" || return 2
    while IFS= read -r p; do
        [ -n "$p" ] && { echo "only in the layering script: $p"; rc=1; }
    done < <(comm -23 <(echo "$s") <(echo "$m"))
    while IFS= read -r p; do
        [ -n "$p" ] && { echo "only in the map: $p"; rc=1; }
    done < <(comm -13 <(echo "$s") <(echo "$m"))
    local rooms dir room
    rooms="$(map_rooms "$2")"
    while IFS= read -r dir; do
        dir="${dir#"$3"/}"
        dir="${dir%/CMakeLists.txt}"
        grep -qxF "$dir" <<<"$rooms" || { echo "the room $dir/ has no row in the map"; rc=1; }
    done < <(for r in common kernels model messages actors http conf tools; do
        [ -d "$3/$r" ] && find "$3/$r" -name CMakeLists.txt
    done | sort)
    while IFS= read -r room; do
        [ -d "$3/${room%/\*}" ] || { echo "the map's room $room is not a folder of the tree"; rc=1; }
    done <<<"$rooms"
    return "$rc"
}

run_compare() { # sets rc and out
    set +e
    out="$(compare "$@" 2>&1)"
    rc=$?
    set -e
}

run_compare "$check" "$map" "$src"
[ "$rc" -eq 0 ] || fail "the map and the layering script disagree (exit $rc):
$out"

# The copies the planted disagreements go into.
cp "$check" "$tmp/check.sh"
cp "$map" "$tmp/map.md"
mkdir -p "$tmp/tree"
for r in common kernels model messages actors http conf tools; do
    [ -d "$src/$r" ] && (cd "$src" && find "$r" -name CMakeLists.txt) | while IFS= read -r f; do
        mkdir -p "$tmp/tree/$(dirname "$f")" && : >"$tmp/tree/$f"
    done
done
run_compare "$tmp/check.sh" "$tmp/map.md" "$tmp/tree"
[ "$rc" -eq 0 ] || fail "the unmodified copies should agree, got exit $rc: $out"

# expect_disagreement WHAT EXIT LINE: the last comparison exited EXIT and printed LINE.
expect_disagreement() {
    if [ "$rc" -ne "$2" ] || ! grep -qF "$3" <<<"$out"; then
        fail "$1: expected exit $2 and '$3', got $rc: $out"
    fi
}

# A rule in the script only.
sed 's|^rules=($|&\n    "http/routes;${ours}http/responses/;planted rule"|' "$check" >"$tmp/planted.sh"
grep -q 'planted rule' "$tmp/planted.sh" || fail "could not plant a rule (no 'rules=(' line in $check)"
run_compare "$tmp/planted.sh" "$tmp/map.md" "$tmp/tree"
expect_disagreement "a rule only in the script" 1 "only in the layering script: http/routes -> http/responses/"

# A prefix in the map only.
sed -E '/^\| `model\/sampling\/` /s/\|$/`model\/jinja\/` |/' "$map" >"$tmp/planted.md"
run_compare "$tmp/check.sh" "$tmp/planted.md" "$tmp/tree"
expect_disagreement "a prefix only in the map" 1 "only in the map: model/sampling -> model/jinja/"

# A row dropped from the map: its rules are the script's only, and its folder has no row.
grep -v '^| `messages/` ' "$map" >"$tmp/planted.md"
run_compare "$tmp/check.sh" "$tmp/planted.md" "$tmp/tree"
expect_disagreement "a dropped row" 1 "only in the layering script: messages -> actors/"
expect_disagreement "a dropped row" 1 "the room messages/ has no row in the map"

# A rule whose pattern this test cannot read.
sed 's|^rules=($|&\n    "http/routes;${ours}http/.*x;planted rule"|' "$check" >"$tmp/planted.sh"
run_compare "$tmp/planted.sh" "$tmp/map.md" "$tmp/tree"
expect_disagreement "an unreadable rule" 2 "cannot read the rule"

# A new room folder without a row.
mkdir -p "$tmp/tree/http/ollama" && : >"$tmp/tree/http/ollama/CMakeLists.txt"
run_compare "$tmp/check.sh" "$tmp/map.md" "$tmp/tree"
rm -rf "$tmp/tree/http/ollama"
expect_disagreement "a room without a row" 1 "the room http/ollama/ has no row in the map"

# A map without its table.
grep -v '^<!-- rooms:' "$map" >"$tmp/planted.md"
run_compare "$tmp/check.sh" "$tmp/planted.md" "$tmp/tree"
expect_disagreement "no table" 2 "no rooms table"

if [ "$failures" -gt 0 ]; then
    echo "$failures check(s) failed" >&2
    exit 1
fi
echo "the map's rooms table and check-layering.sh agree; every planted disagreement fails"
